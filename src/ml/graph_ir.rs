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
    /// With `residual`: it is added after the activations instead
    /// (`act(op) + r`, a fused `add` of an activated depthwise conv2d and
    /// its own input, as in MobileNet-style decoder blocks). Only the
    /// direct conv2d kernel and the CPU context honour it, so fusion sets it
    /// only on nodes that reach them (`fuse/late_residual.rs`).
    pub late_residual: bool,
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

    /// The node computing each operand (none for inputs and constants).
    pub fn producers(&self) -> Vec<Option<usize>> {
        let mut producer = vec![None; self.operands.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            for &o in &node.outputs {
                producer[o] = Some(i);
            }
        }
        producer
    }
}

impl GraphIr {
    /// What `node` computes, for profiles: the op, its filter window,
    /// grouping and strides where it has them, its first input's and its
    /// first output's shapes as stored, and what was fused into it, e.g.
    /// "conv2d 3x3 dw s2 1x128x128x16 -> 1x64x64x16 res+relu".
    pub fn describe(&self, node: &Node) -> String {
        use super::ops::Op;
        use super::shape::conv_filter_ochw;
        let dims = |id: OperandId| {
            let s = &self.desc(id).shape;
            match s.is_empty() {
                true => "scalar".to_string(),
                false => s.iter().map(usize::to_string).collect::<Vec<_>>().join("x"),
            }
        };
        let ochw = |filter: OperandId, layout| {
            let s = &self.desc(filter).shape;
            (s.len() == 4).then(|| conv_filter_ochw(layout, [s[0], s[1], s[2], s[3]]))
        };
        // "3x3", then "dw" (one group per channel) or "gN", then strides.
        let window = |f: Option<[usize; 4]>, groups: usize, strides: [usize; 2]| {
            let mut s = String::new();
            if let Some([o, i, kh, kw]) = f {
                s += &format!(" {kh}x{kw}");
                if groups > 1 && i == 1 && o == groups {
                    s += " dw";
                } else if groups > 1 {
                    s += &format!(" g{groups}");
                }
            }
            if strides != [1, 1] {
                s += &format!(" s{}", strides[0]);
                if strides[1] != strides[0] {
                    s += &format!("x{}", strides[1]);
                }
            }
            s
        };
        let mut text = node.op.name().to_string();
        match &node.op {
            Op::Conv2d(o) => {
                let f = node.inputs.get(1).and_then(|&f| ochw(f, o.filter_layout));
                text += &window(f, o.groups, o.strides);
            }
            Op::DepthwisePointwise(o) => {
                let d = &o.depthwise;
                let f = node.inputs.get(1).and_then(|&f| ochw(f, d.filter_layout));
                text += &window(f, d.groups, d.strides);
                if !o.depthwise_activations.is_empty() {
                    text += &format!(" {}", act_names(&o.depthwise_activations));
                }
                text += " + 1x1";
            }
            Op::Pool2d(_, o) => {
                text += &match o.window_dimensions {
                    None => " global".to_string(),
                    Some([h, w]) => format!(" {h}x{w}"),
                };
                if o.strides != [1, 1] {
                    text += &format!(" s{}", o.strides[0]);
                }
            }
            Op::SqueezeExcite(o) => text += &format!(" {} layers", o.layers.len()),
            _ => {}
        }
        if let (Some(&x), Some(&y)) = (node.inputs.first(), node.outputs.first()) {
            text += &format!(" {} -> {}", dims(x), dims(y));
        }
        let mut fused: Vec<String> = Vec::new();
        if let Some([sy, sx]) = node.input_upsample {
            fused.push(format!("up{sy}x{sx}"));
        }
        if node.input_scale {
            fused.push("scale".into());
        }
        // In the order they apply: the residual is added before the
        // activations, or after them where it is late.
        if node.residual && !node.late_residual {
            fused.push("res".into());
        }
        if !node.activations.is_empty() {
            fused.push(act_names(&node.activations));
        }
        if node.residual && node.late_residual {
            fused.push("res".into());
        }
        if !fused.is_empty() {
            text += " ";
            text += &fused.join("+");
        }
        text
    }
}

fn act_names(acts: &[Activation]) -> String {
    acts.iter().map(|a| a.name()).collect::<Vec<_>>().join("+")
}
