//! expand and tile: each output coordinate taken modulo the input's extent
//! along its axis, in any element type. Also the element copy that gather
//! shares with them.

use super::Values;
use crate::ml::types::{strides, OperandDescriptor};

/// `out[i] = src[f(i)]` for every output element, in the source's type.
pub(super) fn pick(src: &Values, n: usize, f: impl Fn(usize) -> usize) -> Values {
    match src {
        Values::F32(v) => Values::F32((0..n).map(|i| v[f(i)]).collect()),
        Values::I32(v) => Values::I32((0..n).map(|i| v[f(i)]).collect()),
        Values::U8(v) => Values::U8((0..n).map(|i| v[f(i)]).collect()),
    }
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
