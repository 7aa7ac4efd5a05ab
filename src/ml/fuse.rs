//! Build-time fusion, so that work runs in a kernel's epilogue instead of as
//! a separate pass over memory: an activation whose input is used only by it
//! is folded into the node that produces that input, and a float32 `add` of
//! a conv2d's result (used by nothing else) and a same-shaped tensor becomes
//! that conv2d's residual, and a float32 `mul` of a conv2d's input by a
//! per-channel gate (squeeze-and-excitation) becomes its input scale.

use super::graph_ir::GraphIr;
use super::ops::{BinaryOp, InputLayout, Op};
use super::types::DataType;

/// Every fusion, activations first (so an `add` brings its own along).
pub(crate) fn fuse(ir: GraphIr) -> GraphIr {
    fuse_input_scales(fuse_residual_adds(fuse_activations(ir)))
}

/// What each pass tracks while it walks the nodes in order: readers of each
/// operand (graph outputs count), the node that computes each operand as far
/// as the walk has come, and the nodes that survive.
fn walk_state(ir: &GraphIr) -> (Vec<usize>, Vec<Option<usize>>, Vec<bool>) {
    (
        ir.use_counts(),
        vec![None; ir.operands.len()],
        vec![true; ir.nodes.len()],
    )
}

/// The graph without the nodes a pass folded into others.
fn without_folded(mut ir: GraphIr, keep: Vec<bool>) -> GraphIr {
    let mut k = keep.into_iter();
    ir.nodes.retain(|_| k.next().unwrap());
    ir
}

fn takes_epilogue(op: &Op) -> bool {
    matches!(
        op,
        Op::Conv2d(_)
            | Op::ConvTranspose2d(_)
            | Op::Matmul
            | Op::Gemm(_)
            | Op::Binary(_)
            | Op::Unary(_)
            | Op::BatchNormalization { .. }
    )
}

fn fuse_activations(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, mut keep) = walk_state(&ir);
    for i in 0..ir.nodes.len() {
        let Op::Unary(act) = ir.nodes[i].op else {
            for &o in &ir.nodes[i].outputs {
                producer[o] = Some(i);
            }
            continue;
        };
        let x = ir.nodes[i].inputs[0];
        let out = ir.nodes[i].outputs[0];
        let fusable = producer[x].filter(|&p| {
            keep[p]
                && uses[x] == 1
                && ir.nodes[p].outputs.len() == 1
                && takes_epilogue(&ir.nodes[p].op)
                && ir.desc(x).data_type.is_float()
        });
        match fusable {
            Some(p) => {
                let tail = std::mem::take(&mut ir.nodes[i].activations);
                let node = &mut ir.nodes[p];
                node.activations.push(act);
                node.activations.extend(tail);
                node.outputs[0] = out;
                producer[out] = Some(p);
                keep[i] = false;
            }
            None => producer[out] = Some(i),
        }
    }
    without_folded(ir, keep)
}

/// conv2d (without activations of its own) -> add(result, r) becomes one
/// conv2d with residual r, taking over the add's output and activations.
/// float32 only: in float16 the conv's result would otherwise be rounded
/// before the add, and fusing would change the values.
fn fuse_residual_adds(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, mut keep) = walk_state(&ir);
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        let out = node.outputs[0];
        let fusion = match node.op {
            Op::Binary(BinaryOp::Add) if ir.desc(out).data_type == DataType::Float32 => {
                // Either operand may be the conv's result.
                [(0, 1), (1, 0)].into_iter().find_map(|(a, r)| {
                    let (a, r) = (node.inputs[a], node.inputs[r]);
                    let p = producer[a]?;
                    let conv = &ir.nodes[p];
                    let ready = producer[r].is_none_or(|q| q < p);
                    (matches!(conv.op, Op::Conv2d(_))
                        && keep[p]
                        && uses[a] == 1
                        && a != r
                        && conv.outputs.len() == 1
                        && conv.activations.is_empty()
                        && !conv.residual
                        && ready
                        && ir.desc(r) == ir.desc(out)
                        && ir.desc(a) == ir.desc(out))
                    .then_some((p, r))
                })
            }
            _ => None,
        };
        match fusion {
            Some((p, r)) => {
                let activations = std::mem::take(&mut ir.nodes[i].activations);
                let conv = &mut ir.nodes[p];
                conv.inputs.push(r);
                conv.residual = true;
                conv.outputs[0] = out;
                conv.activations = activations;
                producer[out] = Some(p);
                keep[i] = false;
            }
            None => {
                for &o in &ir.nodes[i].outputs {
                    producer[o] = Some(i);
                }
            }
        }
    }
    without_folded(ir, keep)
}

/// mul(x, s) -> conv2d becomes one conv2d reading x scaled by s, where s
/// broadcasts along everything but the conv's input channels (one value per
/// channel) and the product is read by nothing else. float32 only, as for
/// residuals.
fn fuse_input_scales(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, mut keep) = walk_state(&ir);
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        let fusion = match &node.op {
            Op::Conv2d(o) if !node.input_scale => {
                let x = node.inputs[0];
                producer[x].and_then(|p| {
                    let mul = &ir.nodes[p];
                    let channel_axis = match o.input_layout {
                        InputLayout::Nchw => 1,
                        InputLayout::Nhwc => 3,
                    };
                    let ok = matches!(mul.op, Op::Binary(BinaryOp::Mul))
                        && keep[p]
                        && uses[x] == 1
                        && mul.activations.is_empty()
                        && ir.desc(x).data_type == DataType::Float32;
                    if !ok {
                        return None;
                    }
                    let xd = ir.desc(x);
                    let per_channel = |s: usize| {
                        let sd = ir.desc(s);
                        let offset = xd.rank() - sd.rank().min(xd.rank());
                        sd.rank() <= xd.rank()
                            && (0..sd.rank()).all(|k| {
                                let axis = k + offset;
                                let want = if axis == channel_axis {
                                    xd.shape[axis]
                                } else {
                                    1
                                };
                                sd.shape[k] == want
                            })
                            && sd.shape.iter().product::<usize>() == xd.shape[channel_axis]
                    };
                    [(0, 1), (1, 0)].into_iter().find_map(|(a, s)| {
                        let (a, s) = (mul.inputs[a], mul.inputs[s]);
                        (ir.desc(a) == xd && per_channel(s)).then_some((p, a, s))
                    })
                })
            }
            _ => None,
        };
        if let Some((p, a, s)) = fusion {
            let conv = &mut ir.nodes[i];
            conv.inputs[0] = a;
            let at = conv.op_inputs().len();
            conv.inputs.insert(at, s);
            conv.input_scale = true;
            keep[p] = false;
        }
        for &o in &ir.nodes[i].outputs {
            producer[o] = Some(i);
        }
    }
    without_folded(ir, keep)
}
