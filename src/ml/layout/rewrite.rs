//! The graph with its converted regions in NHWC: each operand of a region
//! gets an NHWC twin, region nodes read and write the twins, and a
//! transpose (or reshape) joins twin and original where the region's edge
//! is crossed.

use std::collections::HashMap;
use std::sync::Arc;

use super::perm;
use super::region::{Edges, Regions};
use crate::ml::graph_ir::{GraphIr, Node, OperandId, OperandInfo, OperandKind};
use crate::ml::ops::Op;
use crate::ml::types::OperandDescriptor;

pub(super) fn rewrite(mut ir: GraphIr, r: &Regions) -> GraphIr {
    let edges = Edges::find(&ir, &r.forms, &r.flipped);
    let twin: Vec<Option<OperandId>> = (0..ir.operands.len())
        .map(|x| r.flipped[x].then(|| add_nhwc_operand(&mut ir, x)))
        .collect();
    let written = std::mem::take(&mut ir.nodes);
    let mut nodes = Vec::with_capacity(written.len());
    let mut permuted = HashMap::new();
    for (_, x) in &ir.inputs {
        if let Some(t) = twin[*x] {
            nodes.push(transpose(&ir, *x, t, &perm::TO_NHWC));
        }
    }
    for (mut node, form) in written.into_iter().zip(&r.forms) {
        let Some(form) = form else {
            let outputs = node.outputs.clone();
            nodes.push(node);
            for y in outputs.into_iter().filter(|&y| edges.entry[y]) {
                nodes.push(transpose(&ir, y, twin[y].unwrap(), &perm::TO_NHWC));
            }
            continue;
        };
        node.op = form.op.clone();
        for k in 0..form.slots {
            let x = node.inputs[k];
            node.inputs[k] = match form.carried[k] {
                true => twin[x].unwrap(),
                false => *permuted
                    .entry(x)
                    .or_insert_with(|| permute_broadcast(&mut ir, &mut nodes, x)),
            };
        }
        let outputs = std::mem::take(&mut node.outputs);
        node.outputs = outputs.iter().map(|&y| twin[y].unwrap()).collect();
        nodes.push(node);
        for y in outputs.into_iter().filter(|&y| edges.exit[y]) {
            nodes.push(transpose(&ir, twin[y].unwrap(), y, &perm::TO_NCHW));
        }
    }
    ir.nodes = nodes;
    ir
}

/// A new computed operand: `x`'s data in NHWC.
fn add_nhwc_operand(ir: &mut GraphIr, x: OperandId) -> OperandId {
    let d = ir.desc(x);
    let desc = OperandDescriptor::new(d.data_type, perm::nhwc(&d.shape));
    let label = ir.label(x).to_string();
    push_operand(ir, desc, OperandKind::Computed, label)
}

fn push_operand(
    ir: &mut GraphIr,
    desc: OperandDescriptor,
    kind: OperandKind,
    label: String,
) -> OperandId {
    ir.operands.push(OperandInfo { desc, kind, label });
    ir.operands.len() - 1
}

/// `from` transposed by `perm` into `to`: a reshape where only extents of 1
/// move, as the data keep their order.
fn transpose(ir: &GraphIr, from: OperandId, to: OperandId, p: &[usize]) -> Node {
    let op = match perm::moves_only_ones(&ir.desc(from).shape, p) {
        true => Op::Reshape,
        false => Op::Transpose {
            permutation: p.to_vec(),
        },
    };
    plain(op, from, to)
}

fn plain(op: Op, from: OperandId, to: OperandId) -> Node {
    Node {
        op,
        inputs: vec![from],
        outputs: vec![to],
        activations: Vec::new(),
        input_scale: false,
        residual: false,
        late_residual: false,
        input_upsample: None,
    }
}

/// An operand that broadcasts against a region's 4-D tensors (a constant,
/// or fewer dimensions), as it broadcasts against them in NHWC: one value
/// as it is, a constant with its bytes transposed, other data (whose order
/// the permutation keeps: `nodes::form` checked) reshaped.
fn permute_broadcast(ir: &mut GraphIr, nodes: &mut Vec<Node>, x: OperandId) -> OperandId {
    let d = ir.desc(x).clone();
    if d.element_count() == 1 {
        return x;
    }
    let shape = perm::broadcast_nhwc(&d.shape);
    let padded = [vec![1; 4 - d.rank()], d.shape.clone()].concat();
    let desc = OperandDescriptor::new(d.data_type, shape);
    let label = ir.label(x).to_string();
    if let Some(bytes) = ir.constant(x) {
        let size = d.data_type.byte_size();
        let bytes = perm::transpose_bytes(bytes, &padded, &perm::TO_NHWC, size);
        return push_operand(ir, desc, OperandKind::Constant(Arc::new(bytes)), label);
    }
    let y = push_operand(ir, desc, OperandKind::Computed, label);
    nodes.push(plain(Op::Reshape, x, y));
    y
}
