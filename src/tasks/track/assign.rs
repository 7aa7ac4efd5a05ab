//! Linear assignment for the trackers and the metrics: which rows go with
//! which columns, by the Hungarian method (Kuhn-Munkres with potentials,
//! O(n^2 m)). Written here rather than taken from `pathfinding`: that
//! crate's `indexmap` features rebuild the whole wgpu stack, for one
//! function of 40 lines.

/// Scores are compared to a millionth (Kuhn-Munkres wants whole numbers).
const SCALE: f64 = 1e6;

/// The pairs (row, column), each row and column at most once, among the
/// allowed ones (`score` is `Some`, in 0..=1): as many pairs as can be
/// made, and of those the largest sum of scores. In row order.
pub fn assign(
    rows: usize,
    columns: usize,
    score: impl Fn(usize, usize) -> Option<f64>,
) -> Vec<(usize, usize)> {
    // One more pair outweighs any difference of scores, so the count of
    // allowed pairs comes first.
    let pair = SCALE as i64 * (rows.min(columns) as i64 + 1);
    best(rows, columns, |i, j| {
        score(i, j).map_or(0, |s| pair + (s.clamp(0.0, 1.0) * SCALE).round() as i64)
    })
}

/// The pairs (row, column), each row and column at most once, with the
/// largest sum of `weight` (pairs of weight 0 left out). In row order.
pub fn assign_weights(
    rows: usize,
    columns: usize,
    weight: impl Fn(usize, usize) -> u32,
) -> Vec<(usize, usize)> {
    best(rows, columns, |i, j| i64::from(weight(i, j)))
}

/// The column of each row (rows <= columns) that maximises the sum of
/// `weight`: the Hungarian method on the costs `-weight`, with row and
/// column potentials and shortest augmenting paths.
fn hungarian(rows: usize, columns: usize, weight: &dyn Fn(usize, usize) -> i64) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let cost = |i: usize, j: usize| -weight(i, j);
    // Potentials, and the row each column is matched to; column `columns`
    // is the virtual start of each augmenting path.
    let (mut u, mut v) = (vec![0i64; rows + 1], vec![0i64; columns + 1]);
    let mut row_of = vec![NONE; columns + 1];
    let mut way = vec![0usize; columns + 1];
    for i in 0..rows {
        row_of[columns] = i;
        let mut j0 = columns;
        let mut min = vec![i64::MAX; columns + 1];
        let mut used = vec![false; columns + 1];
        while row_of[j0] != NONE {
            used[j0] = true;
            let i0 = row_of[j0];
            let (mut delta, mut j1) = (i64::MAX, NONE);
            for j in (0..columns).filter(|&j| !used[j]) {
                let reduced = cost(i0, j) - u[i0] - v[j];
                if reduced < min[j] {
                    min[j] = reduced;
                    way[j] = j0;
                }
                if min[j] < delta {
                    delta = min[j];
                    j1 = j;
                }
            }
            for j in 0..=columns {
                if used[j] {
                    u[row_of[j]] += delta;
                    v[j] -= delta;
                } else {
                    min[j] -= delta;
                }
            }
            j0 = j1;
        }
        // Augment along the path back to the start.
        while j0 != columns {
            let prev = way[j0];
            row_of[j0] = row_of[prev];
            j0 = prev;
        }
    }
    let mut column_of = vec![NONE; rows];
    for (j, &i) in row_of.iter().enumerate().take(columns) {
        if i != NONE {
            column_of[i] = j;
        }
    }
    column_of
}

/// The best assignment on `weight` (non-negative), either way round.
fn best(rows: usize, columns: usize, weight: impl Fn(usize, usize) -> i64) -> Vec<(usize, usize)> {
    if rows == 0 || columns == 0 {
        return Vec::new();
    }
    // The method takes no more rows than columns.
    let transposed = rows > columns;
    let at = |i: usize, j: usize| if transposed { (j, i) } else { (i, j) };
    let (n, m) = at(rows, columns);
    let w = |i: usize, j: usize| {
        let (r, c) = at(i, j);
        weight(r, c)
    };
    let mut pairs: Vec<(usize, usize)> = hungarian(n, m, &w)
        .into_iter()
        .enumerate()
        .map(|(i, j)| at(i, j))
        .filter(|&(r, c)| weight(r, c) > 0)
        .collect();
    pairs.sort_unstable();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_pairs_first_then_the_best_scores() {
        let s = [[0.9, 0.8], [0.85, 0.0]];
        // Greedy would take (0, 0) and leave row 1 alone.
        let pairs = assign(2, 2, |i, j| (s[i][j] > 0.0).then_some(s[i][j]));
        assert_eq!(pairs, vec![(0, 1), (1, 0)]);
        let best = assign(2, 2, |i, j| Some(s[i][j]));
        assert_eq!(best, vec![(0, 1), (1, 0)]);
        // More rows than columns, and nothing allowed.
        let tall = assign(3, 1, |i, _| (i == 2).then_some(0.1));
        assert_eq!(tall, vec![(2, 0)]);
        assert!(assign(2, 3, |_, _| None).is_empty());
        assert!(assign(0, 3, |_, _| Some(1.0)).is_empty());
        // The largest sum, not the most pairs.
        let w = [[100, 1], [1, 0]];
        assert_eq!(assign_weights(2, 2, |i, j| w[i][j]), vec![(0, 0)]);
        // Against every permutation of a 4 x 5 matrix.
        let w = |i: usize, j: usize| ((i * 7 + j * 13 + i * j * 5) % 11) as u32;
        let pairs = assign_weights(4, 5, w);
        let total: u32 = pairs.iter().map(|&(i, j)| w(i, j)).sum();
        let mut best = 0;
        for a in 0..5 {
            for b in (0..5).filter(|&b| b != a) {
                for c in (0..5).filter(|&c| c != a && c != b) {
                    for d in (0..5).filter(|&d| d != a && d != b && d != c) {
                        best = best.max(w(0, a) + w(1, b) + w(2, c) + w(3, d));
                    }
                }
            }
        }
        assert_eq!(total, best);
        let tall: u32 = assign_weights(5, 4, |i, j| w(j, i))
            .iter()
            .map(|&(i, j)| w(j, i))
            .sum();
        assert_eq!(tall, best);
    }
}
