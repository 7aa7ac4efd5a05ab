//! Element-wise work moved through the concats that gather its operands,
//! so that it lands in the nodes that compute them:
//!
//! - an activation of a tensor that only reshapes, transposes and concats
//!   gather (each read by nothing else) from nodes that take an epilogue
//!   becomes the last activation of each of those nodes:
//!   act(concat(t(a), t(b))) == concat(t(act(a)), t(act(b))). YOLOv8's
//!   head applies its sigmoid to the class rows that three 1x1 convs
//!   compute (through NHWC -> NCHW transposes, reshapes and a concat);
//! - a binary op of a concat and a tensor with one value along the
//!   concat's axis becomes a concat of the op on each part, where each part
//!   is an element-wise node's result read by nothing else (so the GPU runs
//!   each new op in that node's kernel, `gpu/pointwise.rs`):
//!   concat(a, b) * s == concat(a * s, b * s). YOLOv8's box decoding
//!   multiplies its concatenated centres and sizes by the strides.
//!
//! Both are exact (the same operations on the same values), on both
//! contexts.

use super::{rewrite_pairs, settle, takes_epilogue, walk_state, without_folded};
use crate::ml::graph_ir::{GraphIr, Node, OperandId, OperandKind};
use crate::ml::ops::Op;

/// Each activation over reshapes, transposes and concats moved into the
/// nodes writing their operands.
pub(super) fn activations_into_writers(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, mut keep) = walk_state(&ir);
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        let moved = match node.op {
            Op::Unary(act) if ir.desc(node.outputs[0]).data_type.is_float() => {
                gathered_writers(&ir, &uses, &producer, node.inputs[0]).map(|w| (act, w))
            }
            _ => None,
        };
        if let Some((act, (_, writers))) = &moved {
            let tail = std::mem::take(&mut ir.nodes[i].activations);
            for &w in writers {
                ir.nodes[w].activations.push(*act);
                ir.nodes[w].activations.extend(&tail);
            }
        }
        // The gathering node takes over the activation's output.
        let root = moved.map(|(_, (root, _))| root);
        settle(&mut ir, (&mut producer, &mut keep), i, root);
    }
    without_folded(ir, keep)
}

/// The node computing `x` through at least one reshape, transpose or
/// concat, and the nodes writing what they gather, where every tensor on
/// the way is read once and every writer takes an epilogue.
fn gathered_writers(
    ir: &GraphIr,
    uses: &[usize],
    producer: &[Option<usize>],
    x: OperandId,
) -> Option<(usize, Vec<usize>)> {
    let root = producer[x]?;
    let mut writers = Vec::new();
    let mut stack = vec![x];
    while let Some(t) = stack.pop() {
        let p = producer[t].filter(|_| uses[t] == 1)?;
        let node = &ir.nodes[p];
        match node.op {
            Op::Reshape | Op::Transpose { .. } => stack.push(node.inputs[0]),
            Op::Concat { .. } => stack.extend(&node.inputs),
            ref op
                if takes_epilogue(op)
                    && p != root
                    && node.outputs.len() == 1
                    && !node.late_residual
                    && ir.desc(t).data_type.is_float() =>
            {
                writers.push(p)
            }
            _ => return None,
        }
    }
    Some((root, writers))
}

/// Each binary op of a concat (read by nothing else, its parts element-wise
/// results read by nothing else) and a tensor with one value along the
/// concat's axis made a concat of the op on each part.
pub(super) fn split_binary_over_concats(ir: GraphIr) -> GraphIr {
    rewrite_pairs(ir, concat_operand, true, per_part)
}

/// The concat whose result binary node `i` takes, with one value of its
/// other operand along the concat's axis.
fn concat_operand(
    ir: &GraphIr,
    uses: &[usize],
    producer: &[Option<usize>],
    i: usize,
) -> Option<usize> {
    let node = &ir.nodes[i];
    if !matches!(node.op, Op::Binary(_)) || node.residual {
        return None;
    }
    let out = ir.desc(node.outputs[0]);
    (0..2).find_map(|k| {
        let (x, s) = (node.inputs[k], node.inputs[1 - k]);
        let c = producer[x].filter(|_| uses[x] == 1 && x != s)?;
        let Op::Concat { axis } = ir.nodes[c].op else {
            return None;
        };
        let sd = ir.desc(s);
        // s's axis aligned with the concat's, counted from the right.
        let along =
            (out.rank() - axis <= sd.rank()).then(|| sd.shape[sd.rank() - (out.rank() - axis)]);
        let elementwise_part = |&x: &OperandId| {
            producer[x].is_some_and(|p| {
                uses[x] == 1
                    && matches!(ir.nodes[p].op, Op::Binary(_) | Op::Unary(_))
                    && ir.desc(x).data_type == out.data_type
            })
        };
        let ok = ir.desc(x) == out
            && along.is_none_or(|e| e == 1)
            && ir.nodes[c].inputs.iter().all(elementwise_part);
        ok.then_some(c)
    })
}

/// The op on each part of `concat`, then the concat of their results.
fn per_part(ir: &mut GraphIr, concat: &Node, binary: &Node) -> Vec<Node> {
    let y = concat.outputs[0];
    let k = binary.inputs.iter().position(|&x| x == y).unwrap();
    let dt = ir.desc(binary.outputs[0]).data_type;
    let mut nodes = Vec::new();
    let mut parts = Vec::new();
    for &x in &concat.inputs {
        let desc = crate::ml::OperandDescriptor::new(dt, ir.desc(x).shape.clone());
        let label = format!("{} of {}", binary.op.name(), ir.label(x));
        let part = super::concat::push(ir, desc, OperandKind::Computed, label);
        let mut inputs = binary.inputs.clone();
        inputs[k] = x;
        nodes.push(Node {
            inputs,
            outputs: vec![part],
            ..binary.clone()
        });
        parts.push(part);
    }
    nodes.push(Node {
        inputs: parts,
        outputs: binary.outputs.clone(),
        ..concat.clone()
    });
    nodes
}

#[cfg(test)]
mod tests {
    //! What the moves make of small graphs (built and fused on the CPU
    //! context); both contexts' values are checked in
    //! tests/ml/pointwise_groups.rs.

    use super::super::concat::tests::{f32_desc, fused_outputs, ops};
    use crate::ml::ops::{Activation, Op};
    use crate::ml::{GraphBuilder, Operand};

    /// sigmoid(concat(reshape(transpose(x + y)), x * y)) of [2, 3] inputs,
    /// with `second_reader` x + y also an output.
    fn gathered(b: &GraphBuilder, second_reader: bool) -> crate::error::Result<Vec<Operand>> {
        let x = b.input("x", f32_desc(&[2, 3]))?;
        let y = b.input("y", f32_desc(&[2, 3]))?;
        let sum = b.add(&x, &y)?;
        let t = b.reshape(&b.transpose(&sum, None)?, &[2, 3])?;
        let out = b.sigmoid(&b.concat(&[&t, &b.mul(&x, &y)?], 1)?)?;
        Ok(if second_reader {
            vec![out, sum]
        } else {
            vec![out]
        })
    }

    #[test]
    fn an_activation_of_a_concat_moves_into_its_writers() {
        let ir = fused_outputs(|b| gathered(b, false));
        assert_eq!(ops(&ir), ["add", "transpose", "reshape", "mul", "concat"]);
        for i in [0, 3] {
            assert_eq!(ir.nodes[i].activations, [Activation::Sigmoid], "node {i}");
        }
        assert_eq!(ir.nodes[4].outputs[0], ir.outputs[0].1);
        // A writer read elsewhere keeps its value: the sigmoid stays.
        let ir = fused_outputs(|b| gathered(b, true));
        assert!(ops(&ir).contains(&"sigmoid"), "{:?}", ops(&ir));
    }

    /// concat(x + y, x - y) along axis 1 of [2, 3] inputs, times `s`.
    fn scaled(b: &GraphBuilder, s: &[usize]) -> crate::error::Result<Vec<Operand>> {
        let x = b.input("x", f32_desc(&[2, 3]))?;
        let y = b.input("y", f32_desc(&[2, 3]))?;
        let s = b.input("s", f32_desc(s))?;
        let c = b.concat(&[&b.add(&x, &y)?, &b.sub(&x, &y)?], 1)?;
        Ok(vec![b.mul(&c, &s)?])
    }

    #[test]
    fn a_binary_op_of_a_concat_splits_into_its_parts() {
        // One value per row: along the concat's axis it is constant.
        let ir = fused_outputs(|b| scaled(b, &[2, 1]));
        assert_eq!(ops(&ir), ["add", "sub", "mul", "mul", "concat"]);
        for (k, part) in [2, 3].into_iter().enumerate() {
            assert_eq!(ir.nodes[part].inputs[0], ir.nodes[k].outputs[0]);
            assert_eq!(ir.desc(ir.nodes[part].outputs[0]).shape, [2, 3]);
        }
        assert_eq!(ir.nodes[4].op, Op::Concat { axis: 1 });
        // Values along the axis: the op stays after the concat.
        let ir = fused_outputs(|b| scaled(b, &[1, 6]));
        assert_eq!(ops(&ir), ["add", "sub", "concat", "mul"]);
    }
}
