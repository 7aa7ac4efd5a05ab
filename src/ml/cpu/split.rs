//! split along one axis into pieces of the given sizes.

use super::slice::slice;
use super::Values;
use crate::ml::types::OperandDescriptor;

pub(crate) fn split(
    (v, d): (&Values, &OperandDescriptor),
    sizes: &[usize],
    axis: usize,
) -> Vec<Values> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&s| {
            let mut starts = vec![0; d.rank()];
            starts[axis] = start;
            start += s;
            let mut shape = d.shape.clone();
            shape[axis] = s;
            let out = OperandDescriptor::new(d.data_type, shape);
            slice((v, d), &out, &starts, &vec![1; d.rank()])
        })
        .collect()
}
