//! add(act(conv(x)), r) becomes one conv2d node with a late residual r,
//! added after its activations (`act(acc) + r`): the block MobileNet-style
//! decoders end with (selfie's three `x + relu(dw3x3(x))`) and YOLO's
//! bottleneck (`x + silu(conv3x3(...))`, six in YOLOv8n), where the add was
//! a kernel of its own reading and writing the whole map again. Every
//! conv2d kernel ends in `finish(v, r)`, which adds a residual before the
//! activations or after them.

use super::{settle, walk_state, without_folded};
use crate::ml::graph_ir::{GraphIr, Node};
use crate::ml::ops::{BinaryOp, Op};

pub(super) fn fuse_late_residuals(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, mut keep) = walk_state(&ir);
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        let out = node.outputs[0];
        let fusion = match node.op {
            Op::Binary(BinaryOp::Add)
                if node.activations.is_empty()
                    && !node.residual
                    && node.inputs.len() == 2
                    && ir.desc(out).data_type.is_float() =>
            {
                // Either operand may be the conv's result.
                [(0, 1), (1, 0)].into_iter().find_map(|(a, r)| {
                    let (a, r) = (node.inputs[a], node.inputs[r]);
                    let p = producer[a]?;
                    // r must exist when the conv runs (the conv's own input,
                    // say), and must not be the conv's result itself.
                    let ready = producer[r].is_none_or(|q| q < p);
                    let conv = &ir.nodes[p];
                    (keep[p]
                        && uses[a] == 1
                        && a != r
                        && ready
                        && !conv.residual
                        && conv.input_upsample.is_none()
                        && conv.outputs.len() == 1
                        && float_conv(&ir, conv)
                        && ir.desc(r) == ir.desc(out)
                        && ir.desc(a) == ir.desc(out))
                    .then_some((p, r))
                })
            }
            _ => None,
        };
        if let Some((p, r)) = fusion {
            let conv = &mut ir.nodes[p];
            conv.inputs.push(r);
            conv.residual = true;
            conv.late_residual = true;
        }
        settle(
            &mut ir,
            (&mut producer, &mut keep),
            i,
            fusion.map(|(p, _)| p),
        );
    }
    without_folded(ir, keep)
}

/// A conv2d of a float 4-D tensor: every conv2d kernel's `finish` adds a
/// late residual (`ml/gpu/conv2d/params.rs`).
fn float_conv(ir: &GraphIr, node: &Node) -> bool {
    let Op::Conv2d(_) = &node.op else {
        return false;
    };
    let (Some(&x), Some(&f)) = (node.inputs.first(), node.inputs.get(1)) else {
        return false;
    };
    let (x, f) = (ir.desc(x), ir.desc(f));
    x.rank() == 4 && f.rank() == 4 && x.data_type.is_float()
}
