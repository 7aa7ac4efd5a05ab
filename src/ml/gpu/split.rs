//! split: one slice-kernel copy per output that something reads, each
//! starting where the previous part ended along the axis (a concat of the
//! whole split reads its input instead of some parts: `fuse/whole_split.rs`).

use super::lower::Lowering;
use super::slice::{refuse_uint8, strided_view};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::types::strides;

pub(super) fn split(l: &mut Lowering, node: &Node, sizes: &[usize], axis: usize) -> Result<()> {
    let x = node.inputs[0];
    refuse_uint8(l, x, "split")?;
    let in_strides = strides(&l.ir.desc(x).shape);
    let uses = l.ir.use_counts();
    let mut start = 0;
    for (&y, &size) in node.outputs.iter().zip(sizes) {
        if uses[y] > 0 {
            strided_view(l, "split", x, y, start * in_strides[axis], &in_strides)?;
        }
        start += size;
    }
    Ok(())
}
