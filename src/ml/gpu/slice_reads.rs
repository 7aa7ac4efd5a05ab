//! A slice read only by an element-wise binary op is read through by that
//! op: its kernel indexes the slice's input with the slice's start and
//! steps, and the slice's copy is gone (YOLOv8's box decoding slices its
//! distances in two halves, one kernel of 5-6 us each on an H200, for one
//! `sub` and one `add`). The binary kernel already walks each operand with
//! its own per-axis strides (0 where it broadcasts); a slice only adds a
//! base offset and its steps.

use super::matmul::broadcast_with;
use crate::ml::graph_ir::{GraphIr, OperandId};
use crate::ml::ops::Op;
use crate::ml::types::strides;

/// A binary operand read through a slice of `source`: element `c` (at
/// coordinates of the slice's shape) is `source[base + sum_k c[k] *
/// steps[k]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SliceView {
    pub source: OperandId,
    pub base: usize,
    pub steps: Vec<usize>,
}

/// What `GpuPlan::compile` does differently, per node.
pub(crate) struct SliceReads {
    /// Per binary node, per operand (a, b): the slice it reads through.
    pub views: Vec<[Option<SliceView>; 2]>,
    /// Slices read through: nothing to run.
    pub skipped: Vec<bool>,
}

impl SliceReads {
    /// The operands node `i` reads through its slices (which must stay
    /// alive until it runs).
    pub fn sources(&self, i: usize) -> impl Iterator<Item = OperandId> + '_ {
        self.views[i].iter().flatten().map(|v| v.source)
    }
}

/// Which binary operands are read through their slices.
pub(crate) fn plan(ir: &GraphIr) -> SliceReads {
    let n = ir.nodes.len();
    let uses = ir.use_counts();
    let producer = ir.producers();
    let mut plan = SliceReads {
        views: vec![[None, None]; n],
        skipped: vec![false; n],
    };
    for (b, node) in ir.nodes.iter().enumerate() {
        if !matches!(node.op, Op::Binary(_)) {
            continue;
        }
        for k in 0..2 {
            let x = node.inputs[k];
            let Some(s) = producer[x].filter(|_| uses[x] == 1) else {
                continue;
            };
            let Op::Slice {
                starts,
                strides: steps,
                ..
            } = &ir.nodes[s].op
            else {
                continue;
            };
            let source = ir.nodes[s].inputs[0];
            let own = strides(&ir.desc(source).shape);
            plan.views[b][k] = Some(SliceView {
                source,
                base: starts.iter().zip(&own).map(|(s, t)| s * t).sum(),
                steps: steps.iter().zip(&own).map(|(s, t)| s * t).collect(),
            });
            plan.skipped[s] = true;
        }
    }
    plan
}

/// The strides of an operand of `shape` along each axis of `target` (its
/// broadcast output): 0 where it repeats, else its own strides, or the
/// slice's steps where it is read through one.
pub(crate) fn operand_strides(
    shape: &[usize],
    target: &[usize],
    view: Option<&SliceView>,
) -> Vec<usize> {
    match view {
        Some(v) => broadcast_with(shape, &v.steps, target),
        None => broadcast_with(shape, &strides(shape), target),
    }
}
