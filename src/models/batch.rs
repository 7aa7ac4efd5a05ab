//! Whether a model written for a batch of N items keeps the items apart:
//! item k of every output must be what the model written for one item
//! computes from item k of the inputs.
//!
//! Importers write a batch by putting N where the file declares a leading
//! 1 (or leaves it open) and following the shapes from there. Nothing in
//! that stops an operator from mixing the items (a softmax over axis 0, a
//! concat along it, a reshape that folds the batch into another axis), so
//! the written graph is checked against the same model written for one
//! item, node by node. Every operand is then either the same at both
//! (constants and what is computed from them alone) or *batched*: [N * e,
//! rest..] where the single-item graph has [e, rest..], item k being rows
//! k*e..(k+1)*e, which a row-major reshape keeps. Each operator that reads
//! a batched operand must treat axis 0 as independent rows (convolutions,
//! element-wise ops, reductions and softmax over other axes, ...); an
//! operator the rules below do not know is refused rather than trusted.

use std::path::Path;

use crate::error::Result;
use crate::ml::{GraphBuilder, GraphIr, Op, Operand, OperandId};
use crate::models::model_error;

/// A graph as an importer wrote it.
pub(crate) struct Written<'a> {
    pub builder: &'a GraphBuilder,
    pub outputs: &'a [(String, Operand)],
}

/// How an operand of the batched graph relates to the single-item graph's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// The same shape (and, its inputs being the same, the same values).
    Same,
    /// [n * e, rest..] for [e, rest..]: item k is rows k*e..(k+1)*e.
    Batched,
}

/// Checks that `batched` (written for `n` items) computes, for every item,
/// what `single` (written for one) computes; an error names the operator
/// (the origin its importer noted) and ends with what works.
pub(crate) fn check(
    path: &Path,
    single: Written<'_>,
    batched: Written<'_>,
    n: usize,
) -> Result<()> {
    let ir1 = single.builder.ir();
    let irn = batched.builder.ir();
    let fail = |origin: Option<String>, why: String| {
        model_error(
            path,
            origin.unwrap_or_else(|| "graph".into()),
            format!("{why}; it cannot take {n} frames in one batch; use batch-size=1"),
        )
    };
    let pairs = pair_operands(&ir1, &irn).map_err(|(node, why)| {
        fail(
            node.and_then(|i| batched.builder.origin_of(i)),
            format!("{why}, so wgnn cannot tell whether it keeps the frames apart"),
        )
    })?;
    let class_of = |id: OperandId| -> std::result::Result<Class, String> {
        let sn = &irn.desc(id).shape;
        let s1 = &ir1.desc(pairs[id].unwrap_or(id)).shape;
        if s1 == sn {
            Ok(Class::Same)
        } else if !s1.is_empty()
            && s1.len() == sn.len()
            && s1[0].checked_mul(n) == Some(sn[0])
            && s1[1..] == sn[1..]
        {
            Ok(Class::Batched)
        } else {
            Err(format!(
                "gives {sn:?} for {n} frames where it gives {s1:?} for one (the batch is not \
                 its leading axis)"
            ))
        }
    };
    let mut classes = vec![Class::Same; irn.operands.len()];
    for (name, id) in &irn.inputs {
        let shape = &irn.desc(*id).shape;
        match class_of(*id) {
            Ok(Class::Batched) if shape[0] == n => classes[*id] = Class::Batched,
            _ => {
                return Err(fail(
                    Some(format!("input '{name}'")),
                    format!("is {shape:?}: its leading dimension is not the batch"),
                ))
            }
        }
    }
    for (i, node) in irn.nodes.iter().enumerate() {
        let origin = || batched.builder.origin_of(i);
        let name = node.op.name();
        let ins: Vec<Class> = node.inputs.iter().map(|&id| classes[id]).collect();
        let mut outs = Vec::new();
        for &id in &node.outputs {
            let c = class_of(id).map_err(|why| fail(origin(), format!("its {name} {why}")))?;
            classes[id] = c;
            outs.push(c);
        }
        let shapes: Vec<&[usize]> = node
            .inputs
            .iter()
            .map(|&id| irn.desc(id).shape.as_slice())
            .collect();
        let out_shape = node
            .outputs
            .first()
            .map(|&id| irn.desc(id).shape.as_slice());
        if let Some(why) = refusal(&node.op, &ins, &shapes, &outs, out_shape.unwrap_or(&[])) {
            return Err(fail(origin(), format!("its {name} {why}")));
        }
    }
    for (name, o) in batched.outputs {
        let shape = o.shape();
        if classes[o.id] != Class::Batched || shape.first() != Some(&n) {
            return Err(fail(
                Some(format!("output '{name}'")),
                format!("is {shape:?} for {n} frames: its leading dimension is not the batch"),
            ));
        }
    }
    Ok(())
}

/// For each operand of `irn`, its counterpart in `ir1`: inputs by name,
/// everything else by its place in the nodes, which an importer writes in
/// the same order whatever the batch. A node whose op differs is where the
/// two graphs part (Err: the node, why).
fn pair_operands(
    ir1: &GraphIr,
    irn: &GraphIr,
) -> std::result::Result<Vec<Option<OperandId>>, (Option<usize>, String)> {
    let mut pairs = vec![None; irn.operands.len()];
    let mut pair = |n: OperandId, one: OperandId| match pairs[n] {
        Some(p) => p == one,
        None => {
            pairs[n] = Some(one);
            true
        }
    };
    if ir1.inputs.len() != irn.inputs.len() {
        return Err((None, "it declares other inputs for a batch".into()));
    }
    for ((name1, a), (name, b)) in ir1.inputs.iter().zip(&irn.inputs) {
        if name1 != name || !pair(*b, *a) {
            return Err((None, format!("input '{name}' is declared differently")));
        }
    }
    for (i, node) in irn.nodes.iter().enumerate() {
        let Some(one) = ir1.nodes.get(i) else {
            return Err((
                Some(i),
                "it is written with more operators for a batch".into(),
            ));
        };
        let same = std::mem::discriminant(&one.op) == std::mem::discriminant(&node.op)
            && one.inputs.len() == node.inputs.len()
            && one.outputs.len() == node.outputs.len()
            && node
                .inputs
                .iter()
                .zip(&one.inputs)
                .all(|(&b, &a)| pair(b, a))
            && node
                .outputs
                .iter()
                .zip(&one.outputs)
                .all(|(&b, &a)| pair(b, a));
        if !same {
            return Err((
                Some(i),
                format!(
                    "it is written as {} for a batch where it is {} for one frame",
                    node.op.name(),
                    one.op.name()
                ),
            ));
        }
    }
    if ir1.nodes.len() != irn.nodes.len() {
        return Err((
            None,
            "it is written with fewer operators for a batch".into(),
        ));
    }
    Ok(pairs)
}

/// Why `op` would mix the items of a batch (or cannot be shown not to),
/// given the classes of its inputs and outputs; `None` when it keeps them
/// apart.
fn refusal(
    op: &Op,
    ins: &[Class],
    shapes: &[&[usize]],
    outs: &[Class],
    out_shape: &[usize],
) -> Option<String> {
    use Class::{Batched, Same};
    let batched = |k: usize| ins.get(k) == Some(&Batched);
    if !ins.contains(&Batched) {
        // From values that do not depend on the frames: the same result,
        // or (expand, tile) that result repeated per frame.
        return match (op, outs.contains(&Batched)) {
            (_, false) | (Op::Expand | Op::Tile { .. }, true) => None,
            (_, true) => Some("makes a batch from values that do not depend on the frames".into()),
        };
    }
    if outs.contains(&Same) {
        return Some(format!(
            "gives {out_shape:?} for any number of frames: it combines the frames"
        ));
    }
    let along_batch = |what: &str| Some(format!("{what} along axis 0, the batch"));
    // Every batched operand of an element-wise op lines up with the output.
    let aligned = || {
        ins.iter()
            .zip(shapes)
            .all(|(c, s)| *c == Same || s.len() == out_shape.len())
    };
    match op {
        Op::Conv2d(_) | Op::ConvTranspose2d(_) | Op::QuantConv2d(_) => (!batched(0)
            || ins[1..].contains(&Batched))
        .then(|| "takes its filter or bias from the frames".into()),
        Op::Pool2d(..) | Op::Reshape | Op::Identity | Op::Cast | Op::Unary(_) | Op::LogicalNot => {
            None
        }
        Op::Resample2d(o) => o
            .axes
            .contains(&0)
            .then(|| "resamples the batch axis".into()),
        Op::Reduce { axes, .. } => axes.contains(&0).then(|| "reduces the batch axis".into()),
        Op::ArgMinMax { axis, .. } | Op::Softmax { axis } if *axis == 0 => along_batch("works"),
        Op::ArgMinMax { .. } | Op::Softmax { .. } => None,
        Op::Concat { axis } if *axis == 0 => along_batch("concatenates"),
        Op::Split { axis, .. } if *axis == 0 => along_batch("splits"),
        Op::Concat { .. } | Op::Split { .. } => None,
        Op::Gather { axis } => match (batched(0), batched(1)) {
            (true, true) => Some("gathers frames' values with frames' indices".into()),
            (true, false) if *axis == 0 => along_batch("gathers"),
            (false, true) if *axis != 0 => Some("gathers with the frames' indices".into()),
            _ => None,
        },
        Op::Slice {
            starts,
            sizes,
            strides,
        } => (starts.first() != Some(&0)
            || sizes.first() != shapes[0].first()
            || strides.first().is_some_and(|&s| s != 1))
        .then(|| "slices along axis 0, the batch".into()),
        Op::Pad {
            beginning, ending, ..
        } => (beginning.first().is_some_and(|&b| b != 0)
            || ending.first().is_some_and(|&e| e != 0))
        .then(|| "pads along axis 0, the batch".into()),
        Op::Tile { repetitions } => repetitions
            .first()
            .is_some_and(|&r| r != 1)
            .then(|| "tiles along axis 0, the batch".into()),
        Op::Expand => (shapes[0].len() != out_shape.len()
            || shapes[0].first() != out_shape.first())
        .then(|| "moves the batch axis".into()),
        Op::Transpose { permutation } => {
            (permutation.first() != Some(&0)).then(|| "moves the batch axis".into())
        }
        Op::Binary(_) | Op::Compare(_) | Op::Where | Op::Prelu | Op::BatchNormalization { .. } => {
            (!aligned()).then(|| "broadcasts a batched operand across the batch axis".into())
        }
        Op::Matmul => {
            if batched(1) && shapes[1].len() < 3 {
                Some("contracts over the batch axis of its second operand".into())
            } else if batched(0) && shapes[0].len() < 2 {
                Some("contracts over the batch axis of its first operand".into())
            } else {
                None
            }
        }
        Op::Gemm(o) => {
            if batched(1) || (batched(0) && o.a_transpose) {
                Some("contracts over the batch axis".into())
            } else {
                None
            }
        }
        Op::SqueezeExcite(_) | Op::DepthwisePointwise(_) => {
            Some("is a fused node that wgnn does not check for batches".into())
        }
    }
}
