//! A concat's operand written in place: the node computing it (a transpose
//! or slice, an element-wise binary or unary op), read by nothing but the
//! concat (through reshapes, which move no data), writes its result
//! straight into its slab of the concat's output, and the concat's copy of
//! it is gone. YOLOv8's head on an H200 ran each NHWC -> NCHW transpose and
//! then a concat copy of its result (5-7 us a kernel); its box decoding ran
//! a concat copy after each of its last element-wise ops.
//!
//! The writer keeps its own output shape and indexing; only its store moves:
//! seen as [outer, chunk_in] (chunk_in = its extent along the concat's axis
//! times the inner size), row o lands at o * chunk_out + offset of the
//! output, as concat.wgsl copies it. A concat read only by a concat of
//! whose output it is one block (nothing but size-1 axes before the outer
//! concat's axis, as at batch 1) is stored there too: its writers store at
//! that block, their offsets moved by the block's, and it copies the rest
//! of its operands there (none: it runs nothing). YOLOv8's class rows,
//! gathered over the three levels, are rows 4.. of its output.

use crate::ml::graph_ir::{GraphIr, OperandId};
use crate::ml::ops::Op;

/// Where a writer's element i lands in the concat's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    pub chunk_in: u32,
    pub chunk_out: u32,
    pub offset: u32,
}

/// What `GpuPlan::compile` does differently, per node.
pub(crate) struct ConcatWrites {
    /// The concat output a node writes its result into, and where.
    pub into: Vec<Option<(OperandId, Placement)>>,
    /// Reshapes between such a writer and its concat, and concats whose
    /// operands are all in place in another concat's output: nothing to
    /// run.
    pub skipped: Vec<bool>,
    /// Per concat node, which of its operands are already in place.
    pub written: Vec<Vec<bool>>,
}

/// Ops whose kernel can store through a [`Placement`].
fn writes_in_place(op: &Op) -> bool {
    matches!(
        op,
        Op::Transpose { .. } | Op::Slice { .. } | Op::Binary(_) | Op::Unary(_)
    )
}

/// Which operands of which concats are written in place.
pub(crate) fn plan(ir: &GraphIr) -> ConcatWrites {
    let n = ir.nodes.len();
    let uses = ir.use_counts();
    let producer = ir.producers();
    let mut plan = ConcatWrites {
        into: vec![None; n],
        skipped: vec![false; n],
        written: vec![Vec::new(); n],
    };
    for (c, node) in ir.nodes.iter().enumerate() {
        let Op::Concat { axis } = node.op else {
            continue;
        };
        let y = node.outputs[0];
        let out = &ir.desc(y).shape;
        let inner: usize = out[axis + 1..].iter().product();
        let chunk_out = out[axis] * inner;
        let mut offset = 0;
        plan.written[c] = vec![false; node.inputs.len()];
        // Nothing before the axis: each operand is one block of the output.
        let one_block = out[..axis].iter().product::<usize>() == 1;
        for (k, &x) in node.inputs.iter().enumerate() {
            let chunk_in = ir.desc(x).shape[axis] * inner;
            // Back through reshapes read by nothing else to the writer.
            let mut reshapes = Vec::new();
            let mut at = x;
            let writer = loop {
                let Some(p) = producer[at].filter(|_| uses[at] == 1) else {
                    break None;
                };
                match &ir.nodes[p].op {
                    Op::Reshape => {
                        reshapes.push(p);
                        at = ir.nodes[p].inputs[0];
                    }
                    op if writes_in_place(op) && ir.nodes[p].outputs.len() == 1 => break Some(p),
                    Op::Concat { .. } if one_block => break Some(p),
                    _ => break None,
                }
            };
            match writer {
                Some(p) if matches!(ir.nodes[p].op, Op::Concat { .. }) => {
                    // A concat filling a block of this output: what its
                    // writers store moves there, and so do its own copies
                    // (it runs none where every operand is in place).
                    let inner_y = ir.nodes[p].outputs[0];
                    for at in plan.into.iter_mut().flatten() {
                        if at.0 == inner_y {
                            *at = (
                                y,
                                Placement {
                                    offset: at.1.offset + offset as u32,
                                    ..at.1
                                },
                            );
                        }
                    }
                    if plan.written[p].iter().all(|&w| w) {
                        reshapes.push(p);
                    } else {
                        let place = Placement {
                            chunk_in: chunk_in as u32,
                            chunk_out: chunk_in as u32,
                            offset: offset as u32,
                        };
                        plan.into[p] = Some((y, place));
                    }
                }
                Some(p) => {
                    let place = Placement {
                        chunk_in: chunk_in as u32,
                        chunk_out: chunk_out as u32,
                        offset: offset as u32,
                    };
                    plan.into[p] = Some((y, place));
                }
                None => {}
            }
            if writer.is_some() {
                for r in reshapes {
                    plan.skipped[r] = true;
                }
                plan.written[c][k] = true;
            }
            offset += chunk_in;
        }
    }
    plan
}

/// `fn place(i: u32) -> u32` for a kernel storing element i of its own
/// output (reading `chunk_in`, `chunk_out` and `offset` from its params
/// when placed), and the values of those fields for a kernel of `n`
/// elements.
pub(crate) fn place(placement: Option<Placement>, n: usize) -> (&'static str, Placement) {
    match placement {
        Some(p) => (
            "fn place(i: u32) -> u32 {\n    \
             return (i / params.chunk_in) * params.chunk_out + params.offset + i % params.chunk_in;\n}",
            p,
        ),
        None => {
            let n = n.max(1) as u32;
            (
                "fn place(i: u32) -> u32 { return i; }",
                Placement {
                    chunk_in: n,
                    chunk_out: n,
                    offset: 0,
                },
            )
        }
    }
}
