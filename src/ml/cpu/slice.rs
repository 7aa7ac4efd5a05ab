//! slice: a strided window of the input.

use super::layout::{coords, pick_or_fill};
use super::Values;
use crate::ml::types::{strides, OperandDescriptor};

pub(crate) fn slice(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    starts: &[usize],
    steps: &[usize],
) -> Values {
    let in_strides = strides(&d.shape);
    pick_or_fill(v, out.element_count(), 0.0, |i| {
        let mut c = vec![0; out.rank()];
        coords(i, &out.shape, &mut c);
        Some(
            (0..c.len())
                .map(|k| (starts[k] + c[k] * steps[k]) * in_strides[k])
                .sum(),
        )
    })
}
