//! gather, and the copy that expand and tile share (each output coordinate
//! modulo the input's extent along its axis). Any element type.

use super::Values;
use crate::ml::types::{strides, OperandDescriptor};

/// `out[i] = src[f(i)]` for every output element, in the source's type.
fn pick(src: &Values, n: usize, f: impl Fn(usize) -> usize) -> Values {
    match src {
        Values::F32(v) => Values::F32((0..n).map(|i| v[f(i)]).collect()),
        Values::I32(v) => Values::I32((0..n).map(|i| v[f(i)]).collect()),
        Values::U8(v) => Values::U8((0..n).map(|i| v[f(i)]).collect()),
    }
}

/// The index along an axis of extent `dim` that `index` picks: negative
/// counts from the end, and what is still out of range is clamped.
pub(crate) fn wrap_index(index: i32, dim: usize) -> usize {
    let i = i64::from(index);
    let i = if i < 0 { i + dim as i64 } else { i };
    i.clamp(0, dim as i64 - 1) as usize
}

pub(crate) fn gather(
    (v, d): (&Values, &OperandDescriptor),
    (indices, di): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    axis: usize,
) -> Values {
    let Values::I32(indices) = indices else {
        unreachable!("gather indices are int32 (checked at build)")
    };
    let dim = d.shape[axis];
    let inner: usize = d.shape[axis + 1..].iter().product();
    let count = di.element_count();
    pick(v, out.element_count(), |i| {
        let (j, rest) = (i % inner, i / inner);
        let (k, o) = (rest % count, rest / count);
        (o * dim + wrap_index(indices[k], dim)) * inner + j
    })
}

/// expand and tile: output coordinate c along axis k reads the input at
/// `c % input extent` (the input's shape aligned to the output's rank with
/// leading 1s).
pub(crate) fn repeat((v, d): (&Values, &OperandDescriptor), out: &OperandDescriptor) -> Values {
    let rank = out.rank();
    let mut in_shape = vec![1; rank - d.rank()];
    in_shape.extend(&d.shape);
    let in_strides = strides(&in_shape);
    // (output extent, input extent, input stride), innermost first.
    let axes: Vec<(usize, usize, usize)> = (0..rank)
        .rev()
        .map(|k| (out.shape[k], in_shape[k], in_strides[k]))
        .collect();
    pick(v, out.element_count(), |mut i| {
        let mut j = 0;
        for &(extent, in_extent, stride) in &axes {
            j += (i % extent) % in_extent * stride;
            i /= extent;
        }
        j
    })
}
