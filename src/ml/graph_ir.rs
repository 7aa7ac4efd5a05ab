//! The graph as both back ends see it: operands and nodes in topological
//! order (the builder only ever appends, so insertion order is one).

use std::sync::Arc;

use super::ops::{Activation, Op};
use super::types::OperandDescriptor;

pub(crate) type OperandId = usize;

#[derive(Clone, Debug)]
pub(crate) enum OperandKind {
    Input,
    Constant(Arc<Vec<u8>>),
    Computed,
}

#[derive(Clone, Debug)]
pub(crate) struct OperandInfo {
    pub desc: OperandDescriptor,
    pub kind: OperandKind,
    /// For messages: "input 'x'", "constant #3", "conv2d #7".
    pub label: String,
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub op: Op,
    pub inputs: Vec<OperandId>,
    pub outputs: Vec<OperandId>,
    /// Element-wise functions applied to every output value, in order, after
    /// the op itself: fused activations.
    pub activations: Vec<Activation>,
    /// Whether an input-channel scale follows the op's own inputs: the
    /// first input is multiplied by it, channel by channel, before the op (a
    /// fused `mul` by a per-channel gate).
    pub input_scale: bool,
    /// Whether the last input is a residual: a tensor of the output's shape
    /// added to the op's result before the activations (a fused `add`).
    pub residual: bool,
    /// conv2d only: the first input is read upsampled by these integer
    /// factors along (height, width), nearest neighbour (input pixel
    /// (y / sy, x / sx) at (y, x)), as if through a fused `resample2d`.
    pub input_upsample: Option<[usize; 2]>,
}

impl Node {
    /// The op's own inputs, without a fused input scale or residual.
    pub fn op_inputs(&self) -> &[OperandId] {
        &self.inputs[..self.inputs.len() - self.input_scale as usize - self.residual as usize]
    }

    /// The fused input-channel scale, if any.
    pub fn input_scale(&self) -> Option<OperandId> {
        self.input_scale
            .then(|| self.inputs[self.op_inputs().len()])
    }

    /// The fused residual, if any.
    pub fn residual(&self) -> Option<OperandId> {
        self.residual.then(|| self.inputs[self.inputs.len() - 1])
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct GraphIr {
    pub operands: Vec<OperandInfo>,
    pub nodes: Vec<Node>,
    pub inputs: Vec<(String, OperandId)>,
    pub outputs: Vec<(String, OperandId)>,
}

impl GraphIr {
    pub fn desc(&self, id: OperandId) -> &OperandDescriptor {
        &self.operands[id].desc
    }

    pub fn label(&self, id: OperandId) -> &str {
        &self.operands[id].label
    }

    pub fn constant(&self, id: OperandId) -> Option<&Arc<Vec<u8>>> {
        match &self.operands[id].kind {
            OperandKind::Constant(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// For each operand, the index of the last node that reads it (or
    /// `usize::MAX` for graph outputs, which live to the end).
    pub fn last_uses(&self) -> Vec<Option<usize>> {
        let mut last = vec![None; self.operands.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            for &input in &node.inputs {
                last[input] = Some(i);
            }
        }
        for (_, id) in &self.outputs {
            last[*id] = Some(usize::MAX);
        }
        last
    }

    /// Number of nodes reading each operand, counting graph outputs as readers.
    pub fn use_counts(&self) -> Vec<usize> {
        let mut n = vec![0; self.operands.len()];
        for node in &self.nodes {
            for &input in &node.inputs {
                n[input] += 1;
            }
        }
        for (_, id) in &self.outputs {
            n[*id] += 1;
        }
        n
    }
}
