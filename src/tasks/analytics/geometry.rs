//! Plane geometry in frame pixels (x right, y down) for lines and zones.

/// A point in frame pixels.
pub type Point = [f64; 2];

/// Twice the signed area of the triangle (a, b, p): the cross product of
/// b - a and p - a. In frame pixels (y down) it is positive when p is on the
/// side a quarter turn clockwise on screen from the direction a -> b.
pub fn side(a: Point, b: Point, p: Point) -> f64 {
    (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
}

/// Whether the segments p1-p2 and q1-q2 meet (touching counts).
pub fn segments_meet(p1: Point, p2: Point, q1: Point, q2: Point) -> bool {
    let d1 = side(q1, q2, p1);
    let d2 = side(q1, q2, p2);
    let d3 = side(p1, p2, q1);
    let d4 = side(p1, p2, q2);
    if ((d1 > 0.0 && d2 < 0.0) || (d1 < 0.0 && d2 > 0.0))
        && ((d3 > 0.0 && d4 < 0.0) || (d3 < 0.0 && d4 > 0.0))
    {
        return true;
    }
    let on = |a: Point, b: Point, p: Point| {
        p[0] >= a[0].min(b[0])
            && p[0] <= a[0].max(b[0])
            && p[1] >= a[1].min(b[1])
            && p[1] <= a[1].max(b[1])
    };
    (d1 == 0.0 && on(q1, q2, p1))
        || (d2 == 0.0 && on(q1, q2, p2))
        || (d3 == 0.0 && on(p1, p2, q1))
        || (d4 == 0.0 && on(p1, p2, q2))
}

/// The polygon's signed area (shoelace).
pub fn area(polygon: &[Point]) -> f64 {
    let n = polygon.len();
    (0..n)
        .map(|i| {
            let (a, b) = (polygon[i], polygon[(i + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum::<f64>()
        / 2.0
}

/// Whether two edges of the closed polygon that are not neighbours meet,
/// or two neighbours fold back onto each other.
pub fn self_intersects(polygon: &[Point]) -> bool {
    let n = polygon.len();
    let edge = |i: usize| (polygon[i], polygon[(i + 1) % n]);
    for i in 0..n {
        for j in i + 1..n {
            let (a1, a2) = edge(i);
            let (b1, b2) = edge(j);
            let neighbours = j == i + 1 || (i == 0 && j == n - 1);
            if neighbours {
                // They share a vertex; they overlap only when collinear
                // and folding back.
                let shared = if j == i + 1 { a2 } else { a1 };
                let (p, q) = if j == i + 1 { (a1, b2) } else { (a2, b1) };
                let dot = (p[0] - shared[0]) * (q[0] - shared[0])
                    + (p[1] - shared[1]) * (q[1] - shared[1]);
                if side(p, shared, q) == 0.0 && dot > 0.0 {
                    return true;
                }
            } else if segments_meet(a1, a2, b1, b2) {
                return true;
            }
        }
    }
    false
}

/// Whether `p` is inside the polygon (even-odd rule; points on an edge may
/// fall either way).
pub fn inside(polygon: &[Point], p: Point) -> bool {
    let mut inside = false;
    let n = polygon.len();
    let mut j = n - 1;
    for i in 0..n {
        let (a, b) = (polygon[i], polygon[j]);
        if (a[1] > p[1]) != (b[1] > p[1]) {
            let x = a[0] + (p[1] - a[1]) * (b[0] - a[0]) / (b[1] - a[1]);
            if p[0] < x {
                inside = !inside;
            }
        }
        j = i;
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQUARE: [Point; 4] = [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]];

    #[test]
    fn sides_segments_and_polygons() {
        // A line drawn left to right: below it (y larger) is the clockwise side.
        assert!(side([0.0, 5.0], [10.0, 5.0], [3.0, 9.0]) > 0.0);
        assert!(side([0.0, 5.0], [10.0, 5.0], [3.0, 1.0]) < 0.0);
        assert!(segments_meet(
            [0.0, 0.0],
            [10.0, 10.0],
            [0.0, 10.0],
            [10.0, 0.0]
        ));
        assert!(!segments_meet(
            [0.0, 0.0],
            [1.0, 1.0],
            [5.0, 0.0],
            [5.0, 10.0]
        ));
        assert!(segments_meet(
            [5.0, 5.0],
            [6.0, 5.0],
            [5.0, 0.0],
            [5.0, 10.0]
        ));
        assert_eq!(area(&SQUARE), 100.0);
        assert!(!self_intersects(&SQUARE));
        let bowtie = [[0.0, 0.0], [10.0, 10.0], [10.0, 0.0], [0.0, 10.0]];
        assert!(self_intersects(&bowtie));
        let folded = [[0.0, 0.0], [10.0, 0.0], [5.0, 0.0], [5.0, 5.0]];
        assert!(self_intersects(&folded));
        assert!(inside(&SQUARE, [5.0, 5.0]));
        assert!(!inside(&SQUARE, [15.0, 5.0]));
        assert!(!inside(&SQUARE, [5.0, -1.0]));
    }
}
