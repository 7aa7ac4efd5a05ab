//! gather along one axis with int32 indices, in any element type (the copy
//! is broadcast.rs `pick`).

use super::broadcast::pick;
use super::Values;
use crate::ml::types::OperandDescriptor;

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
