//! softmax along one axis, shifted by the maximum.

use super::Values;
use crate::ml::types::OperandDescriptor;

pub(crate) fn softmax((x, d): (&Values, &OperandDescriptor), axis: usize) -> Values {
    let x = x.f32();
    let len = d.shape[axis];
    let inner: usize = d.shape[axis + 1..].iter().product();
    let outer: usize = d.shape[..axis].iter().product();
    let mut y = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * len * inner + k * inner + i;
            let max = (0..len).map(|k| x[at(k)]).fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = (0..len).map(|k| (x[at(k)] - max).exp()).sum();
            for k in 0..len {
                y[at(k)] = (x[at(k)] - max).exp() / sum;
            }
        }
    }
    Values::F32(y)
}
