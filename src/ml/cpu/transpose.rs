//! transpose: axes permuted.

use super::layout::{coords, pick_or_fill};
use super::Values;
use crate::ml::types::{strides, OperandDescriptor};

pub(crate) fn transpose((v, d): (&Values, &OperandDescriptor), perm: &[usize]) -> Values {
    let in_strides = strides(&d.shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| d.shape[p]).collect();
    let n = d.element_count();
    pick_or_fill(v, n, 0.0, |i| {
        let mut c = vec![0; out_shape.len()];
        coords(i, &out_shape, &mut c);
        Some(c.iter().zip(perm).map(|(&ci, &p)| ci * in_strides[p]).sum())
    })
}
