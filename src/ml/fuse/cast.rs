//! conv2d -> cast between float types becomes one conv2d that writes the
//! cast's type: the end of a float16 graph built from a float32 model
//! (`precision=f16`), where the last convolution's float16 output was
//! written, read back and written again as float32 by a kernel of its own
//! (ESRGAN-slim x2's 1920x1080x3 output: a 0.023 ms pass on an H100). The
//! convolution sums in float32 either way; its result is now rounded once,
//! to the cast's type, and both contexts do alike. A conv2d with a fused
//! residual keeps its cast: the residual is read as the output's type.

use super::{settle, walk_state, without_folded};
use crate::ml::graph_ir::GraphIr;
use crate::ml::ops::Op;

pub(super) fn fuse_output_casts(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, mut keep) = walk_state(&ir);
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        let fusion = match node.op {
            Op::Cast
                if node.activations.is_empty() && ir.desc(node.outputs[0]).data_type.is_float() =>
            {
                let x = node.inputs[0];
                producer[x].filter(|&p| {
                    let conv = &ir.nodes[p];
                    matches!(conv.op, Op::Conv2d(_))
                        && keep[p]
                        && uses[x] == 1
                        && conv.outputs.len() == 1
                        && !conv.residual
                        && ir.desc(x).data_type.is_float()
                })
            }
            _ => None,
        };
        settle(&mut ir, (&mut producer, &mut keep), i, fusion);
    }
    without_folded(ir, keep)
}
