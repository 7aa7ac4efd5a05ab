//! Import-time evaluation: nodes whose inputs are all host constants and
//! that are shape arithmetic or cheap are computed on the CPU, so shape
//! subgraphs (Shape -> Gather -> Concat -> Reshape) never reach the GPU and
//! every graph shape is static. Each operator's evaluation is in its family
//! file under `ops/`, named by its registry entry's [`Fold`] rule; this file
//! runs the rule and holds what the evaluations share: the index helpers and
//! the shape rules `ops` also writes by (Reshape's 0/-1, Squeeze/Unsqueeze
//! axes, Slice bounds, broadcasting).

use super::graph::{Attrs, Value, Writer};
use super::proto;
use super::tensor::{Const, Data};
use crate::error::Result;

/// Element-wise arithmetic on constants is folded up to this many elements:
/// beyond it the result is weights-sized, and computing it per run keeps
/// import fast and the file's constants shared.
pub(super) const CHEAP: usize = 1 << 16;

/// The most bytes a constant built at load (folded, ConstantOfShape, Range,
/// Expand) may take on the host. Folding runs at load time: shape arithmetic
/// and small tables, but also the weights of models that build them
/// (ONNX's light model zoo fills VGG-19's 102,760,448-element first
/// classifier weight with ConstantOfShape: 822 MB at 8 bytes). 1 GiB is what
/// any machine that runs such a model can afford for one tensor; past it a
/// model is refused rather than allocating gigabytes (found by fuzz/
/// `onnx_structured` and `onnx`).
const MAX_FOLDED_BYTES: usize = 1 << 30;

/// Bytes the host holds per element of a folded constant at most: int64
/// values and the index tables of gathers are 8 bytes.
const HELD_BYTES: usize = 8;

/// The element count of a folded result of `shape`, if it is within
/// [`MAX_FOLDED_BYTES`].
pub(super) fn folded_len(shape: &[usize]) -> std::result::Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_FOLDED_BYTES / HELD_BYTES)
        .ok_or_else(|| {
            format!(
                "a constant of shape {shape:?} is past the bound on constants built at load \
                 ({} elements: 1 GiB at 8 bytes each)",
                MAX_FOLDED_BYTES / HELD_BYTES
            )
        })
}

pub(super) type Msg = std::result::Result<Vec<Const>, String>;

/// What an import-time evaluation reads: the operator, the default-domain
/// opset, the attributes and the inputs, every one a host constant (`None`:
/// an optional input left out).
#[derive(Clone, Copy)]
pub(super) struct Args<'a> {
    pub(super) op: &'a str,
    pub(super) opset: i64,
    pub(super) attrs: &'a Attrs<'a>,
    pub(super) c: &'a [Option<&'a Const>],
}

/// When an operator is computed at import rather than written as graph
/// operations (each registry entry in `ops` has one).
pub(super) enum Fold {
    /// Never: it always becomes graph operations.
    Never,
    /// From its attributes and its inputs' static shapes alone, so even for
    /// computed inputs (Shape, Constant); `None` when it cannot.
    Always(fn(&Attrs<'_>, &[Option<Value>]) -> Option<Msg>),
    /// When every input is a host constant.
    Consts(fn(&Args<'_>) -> Msg),
    /// When every input is a host constant of at most [`CHEAP`] elements.
    Cheap(fn(&Args<'_>) -> Msg),
    /// On the host only: at import when every input is a host constant,
    /// else per run in the graph's host stage (`tail.rs`), where the result
    /// sizes depend on the data (NonZero, NonMaxSuppression).
    Late(fn(&Args<'_>) -> Msg),
}

/// The node's results if `how` computes it now, else `None`.
pub(super) fn fold(
    w: &Writer<'_>,
    how: &Fold,
    n: &proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Option<Vec<Const>>> {
    let r = match how {
        Fold::Never => None,
        Fold::Always(f) => f(attrs, inputs),
        Fold::Consts(f) | Fold::Cheap(f) | Fold::Late(f) => {
            let consts: Option<Vec<Option<&Const>>> = inputs
                .iter()
                .map(|v| match v {
                    None => Some(None),
                    Some(Value::Const(c)) => Some(Some(c.as_ref())),
                    Some(Value::Op { .. }) => None,
                })
                .collect();
            match consts {
                Some(c) if !c.is_empty() => {
                    let cheap = c.iter().flatten().all(|c| c.len() <= CHEAP);
                    (cheap || matches!(how, Fold::Consts(_) | Fold::Late(_))).then(|| {
                        f(&Args {
                            op: n.op_type(),
                            opset: w.opset,
                            attrs,
                            c: &c,
                        })
                    })
                }
                _ => None,
            }
        }
    };
    match r {
        None => Ok(None),
        Some(Ok(v)) => Ok(Some(v)),
        Some(Err(e)) => Err(w.err(e)),
    }
}

pub(super) fn get<'c>(
    inputs: &[Option<&'c Const>],
    i: usize,
) -> std::result::Result<&'c Const, String> {
    inputs
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| format!("input {i} is missing"))
}

pub(super) fn reshaped(x: &Const, shape: Vec<usize>) -> Const {
    Const {
        elem: x.elem,
        shape,
        data: x.data.clone(),
    }
}

/// ONNX Reshape's target: 0 copies the input's dimension (unless
/// `allowzero`), one -1 takes what is left.
pub(super) fn reshape_target(
    input: &[usize],
    spec: &[i64],
    allowzero: bool,
) -> std::result::Result<Vec<usize>, String> {
    let count: usize = input.iter().product();
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &s) in spec.iter().enumerate() {
        match s {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 if !allowzero => out.push(*input.get(i).ok_or_else(|| {
                format!("shape {spec:?}: 0 at {i} has no input dimension to copy")
            })?),
            s if s >= 0 => out.push(s as usize),
            _ => return Err(format!("shape {spec:?} is not a valid Reshape target")),
        }
    }
    // The file's numbers: their product may not fit.
    let known = out
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("shape {spec:?} has too many elements"))?;
    if let Some(i) = infer {
        if known == 0 || count % known != 0 {
            return Err(format!("cannot reshape {input:?} into {spec:?}"));
        }
        out[i] = count / known;
    } else if known != count {
        return Err(format!(
            "cannot reshape {input:?} ({count} elements) into {spec:?}"
        ));
    }
    Ok(out)
}

pub(super) fn flatten_shape(input: &[usize], axis: i64) -> std::result::Result<Vec<usize>, String> {
    // Flatten's axis may equal the rank; a negative one counts from it.
    let rank = input.len() as i64;
    let axis = if axis < 0 { axis + rank } else { axis };
    if !(0..=rank).contains(&axis) {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    let axis = axis as usize;
    let product = |dims: &[usize]| {
        dims.iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format!("shape {input:?} has too many elements"))
    };
    Ok(vec![product(&input[..axis])?, product(&input[axis..])?])
}

/// A possibly negative axis of a rank-`rank` tensor.
pub(super) fn norm_axis(axis: i64, rank: usize) -> std::result::Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

pub(super) fn squeeze_shape(
    input: &[usize],
    axes: Option<&[i64]>,
) -> std::result::Result<Vec<usize>, String> {
    match axes {
        None => Ok(input.iter().copied().filter(|&d| d != 1).collect()),
        Some(axes) => {
            let axes: Vec<usize> = axes
                .iter()
                .map(|&a| norm_axis(a, input.len()))
                .collect::<std::result::Result<_, _>>()?;
            if let Some(&a) = axes.iter().find(|&&a| input[a] != 1) {
                return Err(format!(
                    "axis {a} of {input:?} is not 1 and cannot be squeezed"
                ));
            }
            Ok(input
                .iter()
                .enumerate()
                .filter(|(i, _)| !axes.contains(i))
                .map(|(_, &d)| d)
                .collect())
        }
    }
}

pub(super) fn unsqueeze_shape(
    input: &[usize],
    axes: &[i64],
) -> std::result::Result<Vec<usize>, String> {
    let rank = input.len() + axes.len();
    let mut axes: Vec<usize> = axes
        .iter()
        .map(|&a| norm_axis(a, rank))
        .collect::<std::result::Result<_, _>>()?;
    axes.sort_unstable();
    if axes.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("axes {axes:?} repeat"));
    }
    let mut rest = input.iter();
    Ok((0..rank)
        .map(|i| {
            if axes.contains(&i) {
                1
            } else {
                *rest.next().unwrap_or(&1)
            }
        })
        .collect())
}

pub(super) fn perm_of(attrs: &Attrs<'_>, rank: usize) -> std::result::Result<Vec<usize>, String> {
    let perm: Vec<usize> = match attrs.ints("perm") {
        Some(p) => p
            .iter()
            .map(|&a| norm_axis(a, rank))
            .collect::<std::result::Result<_, _>>()?,
        None => (0..rank).rev().collect(),
    };
    let mut seen = vec![false; rank];
    if perm.len() != rank || perm.iter().any(|&p| std::mem::replace(&mut seen[p], true)) {
        return Err(format!("perm {perm:?} is not a permutation of {rank} axes"));
    }
    Ok(perm)
}

pub(super) struct SliceArgs {
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    pub axes: Option<Vec<i64>>,
    pub steps: Option<Vec<i64>>,
}

/// One axis of a slice: `count` elements from `start`, `step` apart.
#[derive(Clone, Copy, Debug)]
pub(super) struct Range1 {
    pub start: i64,
    pub step: i64,
    pub count: usize,
}

/// ONNX Slice bounds, clamped as numpy does, for every axis of `shape`.
pub(super) fn slice_ranges(
    shape: &[usize],
    a: &SliceArgs,
) -> std::result::Result<Vec<Range1>, String> {
    let rank = shape.len();
    let axes: Vec<usize> = match &a.axes {
        Some(ax) => ax
            .iter()
            .map(|&x| norm_axis(x, rank))
            .collect::<std::result::Result<_, _>>()?,
        None => (0..a.starts.len()).collect(),
    };
    let steps = a.steps.clone().unwrap_or_else(|| vec![1; axes.len()]);
    if a.starts.len() != axes.len() || a.ends.len() != axes.len() || steps.len() != axes.len() {
        return Err("starts, ends, axes and steps differ in length".into());
    }
    let mut out: Vec<Range1> = shape
        .iter()
        .map(|&d| Range1 {
            start: 0,
            step: 1,
            count: d,
        })
        .collect();
    for (k, &axis) in axes.iter().enumerate() {
        let d = shape.get(axis).copied().ok_or("axis out of range")? as i64;
        let step = steps[k];
        if step == 0 {
            return Err("a step is 0".into());
        }
        let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (start, end) = (norm(a.starts[k]), norm(a.ends[k]));
        let (start, count) = if step > 0 {
            let s = start.clamp(0, d);
            let e = end.clamp(0, d);
            (s, if e > s { (e - s + step - 1) / step } else { 0 })
        } else {
            let s = start.clamp(-1, d - 1);
            let e = end.clamp(-1, d - 1);
            (
                s,
                if s > e {
                    (s - e + (-step) - 1) / (-step)
                } else {
                    0
                },
            )
        };
        out[axis] = Range1 {
            start,
            step,
            count: count as usize,
        };
    }
    Ok(out)
}

/// numpy broadcasting of two shapes.
pub(super) fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    (0..rank)
        .map(|i| {
            let x = if i + a.len() >= rank {
                a[i + a.len() - rank]
            } else {
                1
            };
            let y = if i + b.len() >= rank {
                b[i + b.len() - rank]
            } else {
                1
            };
            match (x, y) {
                (x, y) if x == y => Some(x),
                (1, y) => Some(y),
                (x, 1) => Some(x),
                _ => None,
            }
        })
        .collect()
}

/// For each element of `out` (row-major), the flat index `f` gives.
pub(super) fn index_map(
    out: &[usize],
    f: impl Fn(&[usize], usize) -> usize,
) -> std::result::Result<Vec<usize>, String> {
    let count = folded_len(out)?;
    let mut coord = vec![0usize; out.len()];
    let mut idx = Vec::with_capacity(count);
    for i in 0..count {
        idx.push(f(&coord, i));
        for k in (0..out.len()).rev() {
            coord[k] += 1;
            if coord[k] < out[k] {
                break;
            }
            coord[k] = 0;
        }
    }
    Ok(idx)
}

pub(super) fn flat(shape: &[usize], coord: &[usize], _i: usize) -> usize {
    coord.iter().zip(shape).fold(0, |acc, (&c, &d)| acc * d + c)
}

pub(super) fn take(x: &Const, shape: Vec<usize>, idx: &[usize]) -> Const {
    let data = match &x.data {
        Data::F(v) => Data::F(idx.iter().map(|&i| v[i]).collect()),
        Data::I(v) => Data::I(idx.iter().map(|&i| v[i]).collect()),
    };
    Const {
        elem: x.elem,
        shape,
        data,
    }
}

pub(super) fn broadcast_to(x: &Const, out: &[usize]) -> std::result::Result<Const, String> {
    let rank = out.len();
    let pad = rank - x.shape.len();
    let idx = index_map(out, |o, _| {
        x.shape.iter().enumerate().fold(0, |acc, (k, &d)| {
            acc * d + if d == 1 { 0 } else { o[k + pad] }
        })
    })?;
    Ok(take(x, out.to_vec(), &idx))
}
