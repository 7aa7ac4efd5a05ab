//! Build-time fusion, so that work runs in a kernel's epilogue instead of as
//! a separate pass over memory: an activation whose input is used only by it
//! is folded into the node that produces that input, and a float32 `add` of
//! a conv2d's result (used by nothing else) and a same-shaped tensor becomes
//! that conv2d's residual.

use super::graph_ir::GraphIr;
use super::ops::{BinaryOp, Op};
use super::types::DataType;

/// Both fusions, activations first (so an `add` brings its own along).
pub(crate) fn fuse(ir: GraphIr) -> GraphIr {
    fuse_residual_adds(fuse_activations(ir))
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
    )
}

fn fuse_activations(mut ir: GraphIr) -> GraphIr {
    let uses = ir.use_counts();
    let mut producer = vec![None; ir.operands.len()];
    let mut keep = vec![true; ir.nodes.len()];
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
    let mut k = keep.into_iter();
    ir.nodes.retain(|_| k.next().unwrap());
    ir
}

/// conv2d (without activations of its own) -> add(result, r) becomes one
/// conv2d with residual r, taking over the add's output and activations.
/// float32 only: in float16 the conv's result would otherwise be rounded
/// before the add, and fusing would change the values.
fn fuse_residual_adds(mut ir: GraphIr) -> GraphIr {
    let uses = ir.use_counts();
    let mut producer: Vec<Option<usize>> = vec![None; ir.operands.len()];
    let mut keep = vec![true; ir.nodes.len()];
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
    let mut k = keep.into_iter();
    ir.nodes.retain(|_| k.next().unwrap());
    ir
}
