//! DENSIFY: TFLite's sparse weights (`Tensor.sparsity`) decoded into a dense
//! constant at load time, following LiteRT's `FormatConverter::SparseToDense`.
//!
//! A sparse tensor of rank n is stored as n + k levels (k block dimensions):
//! `traversal_order` lists the order the levels are walked in (the first n
//! are the original dimensions, divided by their block size where blocked;
//! the last k are the blocks' inner dimensions), `block_map` says which
//! original dimension each block dimension splits, and each level is either
//! dense (every index 0..size) or CSR (`segments[p]..segments[p + 1]` of
//! `indices` are the indices present under parent position p). The values
//! are stored in the order the walk reaches them.

use super::fb;

/// One level of the walk.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Level {
    Dense(usize),
    Sparse {
        segments: Vec<usize>,
        indices: Vec<usize>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Sparsity {
    pub traversal_order: Vec<usize>,
    pub block_map: Vec<usize>,
    /// One per level, in traversal order.
    pub levels: Vec<Level>,
}

impl Sparsity {
    /// Reads the file's sparsity parameters; an error says what is wrong.
    pub(super) fn read(p: &fb::SparsityParameters<'_>) -> Result<Sparsity, String> {
        let ints = |v: Option<flatbuffers::Vector<'_, i32>>, what: &str| {
            v.map(|v| v.iter().collect::<Vec<i32>>())
                .unwrap_or_default()
                .into_iter()
                .map(|x| usize::try_from(x).map_err(|_| format!("{what} holds {x}")))
                .collect::<Result<Vec<usize>, String>>()
        };
        let traversal_order = ints(p.traversal_order(), "traversal_order")?;
        let block_map = ints(p.block_map(), "block_map")?;
        let mut levels = Vec::new();
        for (i, m) in p.dim_metadata().into_iter().flatten().enumerate() {
            levels.push(match m.format() {
                fb::DimensionType::DENSE => {
                    Level::Dense(usize::try_from(m.dense_size()).map_err(|_| {
                        format!("dim_metadata {i} has dense_size {}", m.dense_size())
                    })?)
                }
                fb::DimensionType::SPARSE_CSR => Level::Sparse {
                    segments: index_vector(&m, true)
                        .ok_or_else(|| format!("dim_metadata {i} has no array_segments"))?,
                    indices: index_vector(&m, false)
                        .ok_or_else(|| format!("dim_metadata {i} has no array_indices"))?,
                },
                f => return Err(format!("dim_metadata {i} has unknown format {}", f.0)),
            });
        }
        Ok(Sparsity {
            traversal_order,
            block_map,
            levels,
        })
    }
}

/// `array_segments` (`segments`) or `array_indices` as unsigned indices,
/// whichever of the three integer widths the file used.
fn index_vector(m: &fb::DimensionMetadata<'_>, segments: bool) -> Option<Vec<usize>> {
    let (i32s, u16s, u8s) = if segments {
        (
            m.array_segments_as_int_32_vector(),
            m.array_segments_as_uint_16_vector(),
            m.array_segments_as_uint_8_vector(),
        )
    } else {
        (
            m.array_indices_as_int_32_vector(),
            m.array_indices_as_uint_16_vector(),
            m.array_indices_as_uint_8_vector(),
        )
    };
    if let Some(v) = i32s {
        // A negative index cannot be valid; usize::MAX is caught by the range checks.
        return Some(
            v.values()?
                .iter()
                .map(|x| usize::try_from(x).unwrap_or(usize::MAX))
                .collect(),
        );
    }
    if let Some(v) = u16s {
        return Some(v.values()?.iter().map(usize::from).collect());
    }
    u8s.and_then(|v| v.values())
        .map(|v| v.iter().map(usize::from).collect())
}

/// The dense tensor of `shape` whose non-zero `values` are laid out as `s` says.
pub(super) fn densify<T: Copy + Default>(
    shape: &[usize],
    s: &Sparsity,
    values: &[T],
) -> Result<Vec<T>, String> {
    let n = shape.len();
    let k = s.block_map.len();
    let levels = n + k;
    if s.traversal_order.len() != levels || s.levels.len() != levels {
        return Err(format!(
            "traversal_order has {} entries and dim_metadata {}, but a rank-{n} tensor with {k} \
             block dimensions needs {levels} of each",
            s.traversal_order.len(),
            s.levels.len()
        ));
    }
    let mut seen = vec![false; levels];
    for &t in &s.traversal_order {
        if t >= levels || std::mem::replace(&mut seen[t], true) {
            return Err(format!(
                "traversal_order {:?} is not a permutation of 0..{levels}",
                s.traversal_order
            ));
        }
    }
    if s.block_map.iter().any(|&d| d >= n) || s.block_map.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!(
            "block_map {:?} does not name increasing dimensions below {n}",
            s.block_map
        ));
    }
    // As LiteRT does: a block's size is the dense size of the level that
    // traversal_order places at position n + block.
    let mut block_size = vec![0; k];
    let mut extent = shape.to_vec();
    for (b, &d) in s.block_map.iter().enumerate() {
        let size = match s.levels.get(s.traversal_order[n + b]) {
            Some(Level::Dense(size)) if *size > 0 && shape[d] % size == 0 => *size,
            _ => {
                return Err(format!(
                    "block dimension {b} (of dimension {d}, size {}) has no dense block size \
                     dividing it",
                    shape[d]
                ))
            }
        };
        block_size[b] = size;
        extent[d] = shape[d] / size;
    }
    extent.extend_from_slice(&block_size);
    let total: usize = shape.iter().product();
    let mut walk = Walk {
        shape,
        s,
        extent: &extent,
        block_size: &block_size,
        values,
        next: 0,
        out: vec![T::default(); total],
        index: vec![0; levels],
    };
    walk.level(0, 0)?;
    if walk.next != values.len() {
        return Err(format!(
            "the sparsity parameters place {} values but the buffer holds {}",
            walk.next,
            values.len()
        ));
    }
    Ok(walk.out)
}

struct Walk<'w, T> {
    shape: &'w [usize],
    s: &'w Sparsity,
    /// Extent of each expanded dimension (original, blocked; then blocks).
    extent: &'w [usize],
    block_size: &'w [usize],
    values: &'w [T],
    next: usize,
    out: Vec<T>,
    /// The index reached at each level.
    index: Vec<usize>,
}

impl<T: Copy> Walk<'_, T> {
    fn level(&mut self, level: usize, parent: usize) -> Result<(), String> {
        if level == self.index.len() {
            return self.place();
        }
        let dim = self.s.traversal_order[level];
        let extent = self.extent[dim];
        match &self.s.levels[level] {
            Level::Dense(size) => {
                if *size != extent {
                    return Err(format!(
                        "dense level {level} has size {size}, but its dimension has {extent}"
                    ));
                }
                for i in 0..extent {
                    self.index[level] = i;
                    self.level(level + 1, parent * extent + i)?;
                }
            }
            Level::Sparse { segments, indices } => {
                // LiteRT skips a parent with no segment entry; so do we.
                let (Some(&from), Some(&to)) = (segments.get(parent), segments.get(parent + 1))
                else {
                    return Ok(());
                };
                if from > to || to > indices.len() {
                    return Err(format!(
                        "level {level}: segment {parent} is {from}..{to}, outside the {} indices",
                        indices.len()
                    ));
                }
                for (p, &i) in indices.iter().enumerate().take(to).skip(from) {
                    if i >= extent {
                        return Err(format!(
                            "level {level}: index {i} is out of range (dimension size {extent})"
                        ));
                    }
                    self.index[level] = i;
                    self.level(level + 1, p)?;
                }
            }
        }
        Ok(())
    }

    fn place(&mut self) -> Result<(), String> {
        let n = self.shape.len();
        let mut at = vec![0; n];
        for (level, &i) in self.index.iter().enumerate() {
            let dim = self.s.traversal_order[level];
            if dim < n {
                at[dim] += i * self.block_size_of(dim);
            } else {
                at[self.s.block_map[dim - n]] += i;
            }
        }
        let flat = at
            .iter()
            .zip(self.shape)
            .try_fold(0usize, |acc, (&i, &d)| (i < d).then_some(acc * d + i))
            .ok_or_else(|| format!("index {at:?} is outside the dense shape {:?}", self.shape))?;
        let value = *self.values.get(self.next).ok_or_else(|| {
            format!(
                "the sparsity parameters place more values than the buffer's {}",
                self.values.len()
            )
        })?;
        self.out[flat] = value;
        self.next += 1;
        Ok(())
    }

    /// The block size of original dimension `dim` (1 if it is not blocked).
    fn block_size_of(&self, dim: usize) -> usize {
        self.s
            .block_map
            .iter()
            .position(|&d| d == dim)
            .map_or(1, |b| self.block_size[b])
    }
}

#[cfg(test)]
mod tests {
    use super::{densify, Level, Sparsity};

    /// The dense matrix used by the cases below (zeros where sparse).
    const DENSE: [i32; 16] = [
        1, 0, 2, 3, //
        0, 4, 0, 0, //
        0, 0, 5, 0, //
        6, 7, 0, 8,
    ];

    #[test]
    fn csr_rows() {
        // Row 0 dense, dimension 1 CSR: the classic compressed sparse row.
        let s = Sparsity {
            traversal_order: vec![0, 1],
            block_map: vec![],
            levels: vec![
                Level::Dense(4),
                Level::Sparse {
                    segments: vec![0, 3, 4, 5, 8],
                    indices: vec![0, 2, 3, 1, 2, 0, 1, 3],
                },
            ],
        };
        let got = densify(&[4, 4], &s, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(got, DENSE);
    }

    #[test]
    fn column_major_traversal() {
        // traversal_order [1, 0]: columns outside, rows inside (CSC).
        let s = Sparsity {
            traversal_order: vec![1, 0],
            block_map: vec![],
            levels: vec![
                Level::Dense(4),
                Level::Sparse {
                    segments: vec![0, 2, 4, 6, 8],
                    indices: vec![0, 3, 1, 3, 0, 2, 0, 3],
                },
            ],
        };
        let got = densify(&[4, 4], &s, &[1, 6, 4, 7, 2, 5, 3, 8]).unwrap();
        assert_eq!(got, DENSE);
    }

    #[test]
    fn two_by_one_blocks() {
        // Dimension 1 split into blocks of 2 (block_map [1]): the expanded
        // shape is [4, 2 | 2]; levels walk rows, CSR block columns, the
        // dense block. Stored blocks hold their zeros.
        let s = Sparsity {
            traversal_order: vec![0, 1, 2],
            block_map: vec![1],
            levels: vec![
                Level::Dense(4),
                Level::Sparse {
                    segments: vec![0, 2, 3, 4, 6],
                    indices: vec![0, 1, 0, 1, 0, 1],
                },
                Level::Dense(2),
            ],
        };
        let values = [1, 0, 2, 3, 0, 4, 5, 0, 6, 7, 0, 8];
        let got = densify(&[4, 4], &s, &values).unwrap();
        assert_eq!(got, DENSE);
    }

    #[test]
    fn fully_dense_levels_copy_in_order() {
        let s = Sparsity {
            traversal_order: vec![0, 1],
            block_map: vec![],
            levels: vec![Level::Dense(4), Level::Dense(4)],
        };
        assert_eq!(densify(&[4, 4], &s, &DENSE).unwrap(), DENSE);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let csr = |indices: Vec<usize>, segments: Vec<usize>| Sparsity {
            traversal_order: vec![0, 1],
            block_map: vec![],
            levels: vec![Level::Dense(2), Level::Sparse { segments, indices }],
        };
        // An index past the dimension.
        let e = densify(&[2, 2], &csr(vec![0, 5], vec![0, 1, 2]), &[1, 2]).unwrap_err();
        assert!(e.contains("index 5 is out of range"), "{e}");
        // Segments past the indices.
        let e = densify(&[2, 2], &csr(vec![0], vec![0, 1, 9]), &[1, 2]).unwrap_err();
        assert!(e.contains("outside the 1 indices"), "{e}");
        // More values than places, and fewer.
        let e = densify(&[2, 2], &csr(vec![0, 1], vec![0, 1, 2]), &[1, 2, 3]).unwrap_err();
        assert!(e.contains("place 2 values but the buffer holds 3"), "{e}");
        let e = densify(&[2, 2], &csr(vec![0, 1], vec![0, 1, 2]), &[1]).unwrap_err();
        assert!(e.contains("more values than the buffer's 1"), "{e}");
        // A traversal order that is no permutation.
        let mut s = csr(vec![0, 1], vec![0, 1, 2]);
        s.traversal_order = vec![1, 1];
        let e = densify(&[2, 2], &s, &[1, 2]).unwrap_err();
        assert!(e.contains("not a permutation"), "{e}");
        // A dense level whose size disagrees with the shape.
        let s = Sparsity {
            traversal_order: vec![0, 1],
            block_map: vec![],
            levels: vec![Level::Dense(3), Level::Dense(2)],
        };
        let e = densify(&[2, 2], &s, &[0; 6]).unwrap_err();
        assert!(e.contains("dense level 0 has size 3"), "{e}");
    }
}
