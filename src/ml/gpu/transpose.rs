//! transpose: a strided view of the input whose per-axis strides are the
//! input's, permuted (the copy runs in slice.wgsl).

use super::lower::Lowering;
use super::slice::{refuse_uint8, strided_view};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::types::strides;

pub(super) fn transpose(l: &mut Lowering, node: &Node, permutation: &[usize]) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    refuse_uint8(l, x, "transpose")?;
    let in_strides = strides(&l.ir.desc(x).shape);
    let mult: Vec<usize> = permutation.iter().map(|&p| in_strides[p]).collect();
    strided_view(l, "transpose", x, y, 0, &mult)
}
