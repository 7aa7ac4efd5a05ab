//! Import-time evaluation: nodes whose inputs are all host constants and
//! that are shape arithmetic or cheap are computed on the CPU, so shape
//! subgraphs (Shape -> Gather -> Concat -> Reshape) never reach the GPU and
//! every graph shape is static. Also the shape rules shared with `ops`
//! (Reshape's 0/-1, Squeeze/Unsqueeze axes, Slice bounds, broadcasting).

use super::graph::{Attrs, Value, Writer};
use super::proto;
use super::tensor::{self, Const, Data, Elem};
use crate::error::Result;

/// Element-wise arithmetic on constants is folded up to this many elements:
/// beyond it the result is weights-sized, and computing it per run keeps
/// import fast and the file's constants shared.
const CHEAP: usize = 1 << 16;

/// The most elements a folded constant may have. Folding runs at load time
/// on the host: shape arithmetic and small tables, never a tensor the size
/// of an activation map in a real model; past this a model is refused
/// rather than allocating gigabytes (found by fuzz/ `onnx_structured`).
const MAX_FOLDED: usize = 1 << 24;

/// The element count of a folded result of `shape`, if it is within
/// [`MAX_FOLDED`].
fn folded_len(shape: &[usize]) -> std::result::Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_FOLDED)
        .ok_or_else(|| format!("a constant of shape {shape:?} would exceed {MAX_FOLDED} elements"))
}

type Msg = std::result::Result<Vec<Const>, String>;

/// The node's results if it can be computed now, else `None`.
pub(super) fn fold(
    w: &Writer<'_>,
    n: &proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Option<Vec<Const>>> {
    let op = n.op_type();
    let r = match op {
        // Needs only the static shape, so folds even for a computed input.
        "Shape" => inputs
            .first()
            .and_then(Option::as_ref)
            .map(|v| shape_op(&v.shape(), attrs)),
        "Constant" => Some(constant(attrs)),
        _ => {
            let consts: Option<Vec<Option<&Const>>> = inputs
                .iter()
                .map(|v| match v {
                    None => Some(None),
                    Some(Value::Const(c)) => Some(Some(c.as_ref())),
                    Some(Value::Op { .. }) => None,
                })
                .collect();
            match consts {
                Some(c) if !c.is_empty() => evaluate(op, w.opset, attrs, &c),
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

fn get<'c>(inputs: &[Option<&'c Const>], i: usize) -> std::result::Result<&'c Const, String> {
    inputs
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| format!("input {i} is missing"))
}

fn evaluate(op: &str, opset: i64, attrs: &Attrs<'_>, c: &[Option<&Const>]) -> Option<Msg> {
    let x = c.first().copied().flatten();
    let small = c.iter().flatten().all(|c| c.len() <= CHEAP);
    Some(match op {
        // A training-mode Dropout is refused in `ops`.
        "Dropout"
            if c.get(2)
                .copied()
                .flatten()
                .is_some_and(|t| t.as_i64().iter().any(|&v| v != 0)) =>
        {
            return None
        }
        "Identity" | "Dropout" => Ok(vec![x?.clone()]),
        "Cast" => cast(x?, attrs.int("to", 0) as i32).map(|c| vec![c]),
        "Reshape" => (|| {
            let x = get(c, 0)?;
            let shape = reshape_target(
                &x.shape,
                &get(c, 1)?.as_i64(),
                attrs.int("allowzero", 0) != 0,
            )?;
            Ok(vec![reshaped(x, shape)])
        })(),
        "Flatten" => (|| {
            let x = get(c, 0)?;
            Ok(vec![reshaped(
                x,
                flatten_shape(&x.shape, attrs.int("axis", 1))?,
            )])
        })(),
        "Squeeze" => (|| {
            let x = get(c, 0)?;
            let axes = if opset >= 13 {
                c.get(1).copied().flatten().map(Const::as_i64)
            } else {
                attrs.ints("axes")
            };
            Ok(vec![reshaped(x, squeeze_shape(&x.shape, axes.as_deref())?)])
        })(),
        "Unsqueeze" => (|| {
            let x = get(c, 0)?;
            let axes = if opset >= 13 {
                get(c, 1)?.as_i64()
            } else {
                attrs.ints("axes").unwrap_or_default()
            };
            Ok(vec![reshaped(x, unsqueeze_shape(&x.shape, &axes)?)])
        })(),
        "Transpose" => (|| {
            let x = get(c, 0)?;
            let perm = perm_of(attrs, x.shape.len())?;
            let out: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
            let idx = index_map(&out, |o, i| {
                let mut v = vec![0; o.len()];
                for (k, &p) in perm.iter().enumerate() {
                    v[p] = o[k];
                }
                flat(&x.shape, &v, i)
            })?;
            Ok(vec![take(x, out, &idx)])
        })(),
        "Concat" => concat(c, attrs.int("axis", 0)).map(|c| vec![c]),
        "Gather" => (|| {
            let (x, i) = (get(c, 0)?, get(c, 1)?);
            gather(x, i, attrs.int("axis", 0)).map(|c| vec![c])
        })(),
        "Slice" => (|| {
            let x = get(c, 0)?;
            let params = if opset >= 10 {
                let opt = |i: usize| c.get(i).copied().flatten().map(Const::as_i64);
                SliceArgs {
                    starts: get(c, 1)?.as_i64(),
                    ends: get(c, 2)?.as_i64(),
                    axes: opt(3),
                    steps: opt(4),
                }
            } else {
                SliceArgs {
                    starts: attrs.ints("starts").unwrap_or_default(),
                    ends: attrs.ints("ends").unwrap_or_default(),
                    axes: attrs.ints("axes"),
                    steps: None,
                }
            };
            let ranges = slice_ranges(&x.shape, &params)?;
            let out: Vec<usize> = ranges.iter().map(|r| r.count).collect();
            let idx = index_map(&out, |o, i| {
                let v: Vec<usize> = o
                    .iter()
                    .zip(&ranges)
                    .map(|(&k, r)| (r.start + k as i64 * r.step) as usize)
                    .collect();
                flat(&x.shape, &v, i)
            })?;
            Ok(vec![take(x, out, &idx)])
        })(),
        "ConstantOfShape" => (|| {
            let shape = tensor::checked_shape(&get(c, 0)?.as_i64())?;
            let count = folded_len(&shape)?;
            let value = match attrs.tensor("value") {
                Some(t) => tensor::decode(t, None)?,
                None => Const::floats(Elem::F32, vec![1], vec![0.0]),
            };
            if value.len() != 1 {
                return Err("'value' must hold one element".into());
            }
            let data = match &value.data {
                Data::F(v) => Data::F(vec![v[0]; count]),
                Data::I(v) => Data::I(vec![v[0]; count]),
            };
            Ok(vec![Const {
                elem: value.elem,
                shape,
                data,
            }])
        })(),
        "Range" => range(c).map(|c| vec![c]),
        "Expand" => (|| {
            let x = get(c, 0)?;
            let target = tensor::checked_shape(&get(c, 1)?.as_i64())?;
            let out = broadcast(&x.shape, &target)
                .ok_or_else(|| format!("shape {:?} does not broadcast to {target:?}", x.shape))?;
            Ok(vec![broadcast_to(x, &out)?])
        })(),
        "Tile" => (|| {
            let x = get(c, 0)?;
            let reps = get(c, 1)?.as_i64();
            if reps.len() != x.shape.len() || reps.iter().any(|&r| r < 0) {
                return Err(format!("repeats {reps:?} do not fit shape {:?}", x.shape));
            }
            let out: Vec<usize> = x
                .shape
                .iter()
                .zip(&reps)
                .map(|(&d, &r)| d.checked_mul(r as usize))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("repeats {reps:?} of shape {:?} overflow", x.shape))?;
            let idx = index_map(&out, |o, i| {
                let v: Vec<usize> = o.iter().zip(&x.shape).map(|(&k, &d)| k % d).collect();
                flat(&x.shape, &v, i)
            })?;
            Ok(vec![take(x, out, &idx)])
        })(),
        "Where" if small => (|| {
            let (cond, a, b) = (get(c, 0)?, get(c, 1)?, get(c, 2)?);
            let out = broadcast(&cond.shape, &a.shape)
                .and_then(|s| broadcast(&s, &b.shape))
                .ok_or("condition and values do not broadcast")?;
            let (cond, a, b) = (
                broadcast_to(cond, &out)?,
                broadcast_to(a, &out)?,
                broadcast_to(b, &out)?,
            );
            let pick = cond.as_i64();
            let data = match (&a.data, &b.data) {
                (Data::F(x), Data::F(y)) => Data::F(
                    pick.iter()
                        .enumerate()
                        .map(|(i, &p)| if p != 0 { x[i] } else { y[i] })
                        .collect(),
                ),
                (Data::I(x), Data::I(y)) => Data::I(
                    pick.iter()
                        .enumerate()
                        .map(|(i, &p)| if p != 0 { x[i] } else { y[i] })
                        .collect(),
                ),
                _ => return Err("the two values have different types".into()),
            };
            Ok(vec![Const {
                elem: a.elem,
                shape: out,
                data,
            }])
        })(),
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" | "Mean" | "Equal"
        | "Greater" | "Less"
            if small =>
        {
            variadic(op, c)
        }
        "Neg" | "Abs" | "Sqrt" | "Exp" | "Log" | "Reciprocal" | "Relu" if small => {
            unary(op, x?).map(|c| vec![c])
        }
        _ => return None,
    })
}

fn constant(attrs: &Attrs<'_>) -> Msg {
    let a = attrs.0.first().ok_or("has no value attribute")?;
    let c = match a.name() {
        "value" => tensor::decode(a.t.as_ref().ok_or("'value' holds no tensor")?, None)?,
        "value_float" => Const::floats(Elem::F32, vec![], vec![a.f()]),
        "value_floats" => Const::floats(Elem::F32, vec![a.floats.len()], a.floats.clone()),
        "value_int" => Const::ints(Elem::I64, vec![], vec![a.i()]),
        "value_ints" => Const::ints(Elem::I64, vec![a.ints.len()], a.ints.clone()),
        other => return Err(format!("attribute '{other}' is not supported")),
    };
    Ok(vec![c])
}

fn shape_op(shape: &[usize], attrs: &Attrs<'_>) -> Msg {
    let rank = shape.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(attrs.int("start", 0));
    let end = clamp(attrs.int("end", rank));
    let dims: Vec<i64> = shape
        .get(start..end.max(start))
        .unwrap_or_default()
        .iter()
        .map(|&d| d as i64)
        .collect();
    Ok(vec![Const::ints(Elem::I64, vec![dims.len()], dims)])
}

pub(super) fn cast(x: &Const, to: i32) -> std::result::Result<Const, String> {
    let elem = Elem::from_onnx(to)?;
    let shape = x.shape.clone();
    Ok(match (elem, &x.data) {
        (Elem::F32 | Elem::F16, _) => Const::floats(elem, shape, x.as_f32()),
        (Elem::Bool, Data::F(v)) => Const::ints(
            elem,
            shape,
            v.iter().map(|&f| i64::from(f != 0.0)).collect(),
        ),
        (Elem::Bool, Data::I(v)) => {
            Const::ints(elem, shape, v.iter().map(|&f| i64::from(f != 0)).collect())
        }
        (_, Data::F(v)) => Const::ints(
            elem,
            shape,
            v.iter().map(|&f| wrap(elem, f as i64)).collect(),
        ),
        (_, Data::I(v)) => Const::ints(elem, shape, v.iter().map(|&f| wrap(elem, f)).collect()),
    })
}

/// Integer conversion as C does it (two's complement wrap-around).
fn wrap(elem: Elem, v: i64) -> i64 {
    match elem {
        Elem::I32 => i64::from(v as i32),
        Elem::U8 => i64::from(v as u8),
        _ => v,
    }
}

fn reshaped(x: &Const, shape: Vec<usize>) -> Const {
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
fn index_map(
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

fn flat(shape: &[usize], coord: &[usize], _i: usize) -> usize {
    coord.iter().zip(shape).fold(0, |acc, (&c, &d)| acc * d + c)
}

fn take(x: &Const, shape: Vec<usize>, idx: &[usize]) -> Const {
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

fn broadcast_to(x: &Const, out: &[usize]) -> std::result::Result<Const, String> {
    let rank = out.len();
    let pad = rank - x.shape.len();
    let idx = index_map(out, |o, _| {
        x.shape.iter().enumerate().fold(0, |acc, (k, &d)| {
            acc * d + if d == 1 { 0 } else { o[k + pad] }
        })
    })?;
    Ok(take(x, out.to_vec(), &idx))
}

fn concat(c: &[Option<&Const>], axis: i64) -> std::result::Result<Const, String> {
    let parts: Vec<&Const> = c.iter().flatten().copied().collect();
    let first = parts.first().ok_or("no inputs")?;
    let rank = first.shape.len();
    let axis = norm_axis(axis, rank)?;
    let mut out = first.shape.clone();
    out[axis] = 0;
    for p in &parts {
        let fits = p.shape.len() == rank
            && (0..rank).all(|k| k == axis || p.shape[k] == first.shape[k])
            && p.elem == first.elem;
        if !fits {
            return Err(format!(
                "inputs {:?} and {:?} do not concatenate",
                first.shape, p.shape
            ));
        }
        out[axis] += p.shape[axis];
    }
    let outer: usize = out[..axis].iter().product();
    let mut f = Vec::new();
    let mut i = Vec::new();
    for o in 0..outer {
        for p in &parts {
            let block: usize = p.shape[axis..].iter().product();
            match &p.data {
                Data::F(v) => f.extend_from_slice(&v[o * block..(o + 1) * block]),
                Data::I(v) => i.extend_from_slice(&v[o * block..(o + 1) * block]),
            }
        }
    }
    let data = if matches!(first.data, Data::F(_)) {
        Data::F(f)
    } else {
        Data::I(i)
    };
    Ok(Const {
        elem: first.elem,
        shape: out,
        data,
    })
}

fn gather(x: &Const, indices: &Const, axis: i64) -> std::result::Result<Const, String> {
    let axis = norm_axis(axis, x.shape.len())?;
    let d = x.shape[axis] as i64;
    let ind: Vec<usize> = indices
        .as_i64()
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + d } else { i };
            if (0..d).contains(&j) {
                Ok(j as usize)
            } else {
                Err(format!("index {i} is out of range for dimension {d}"))
            }
        })
        .collect::<std::result::Result<_, _>>()?;
    let q = indices.shape.len();
    let mut out = x.shape[..axis].to_vec();
    out.extend(&indices.shape);
    out.extend(&x.shape[axis + 1..]);
    let idx = index_map(&out, |o, _| {
        let inner: usize = o[axis..axis + q]
            .iter()
            .zip(&indices.shape)
            .fold(0, |acc, (&c, &n)| acc * n + c);
        let mut v = o[..axis].to_vec();
        v.push(ind[inner]);
        v.extend(&o[axis + q..]);
        flat(&x.shape, &v, 0)
    })?;
    Ok(take(x, out, &idx))
}

fn range(c: &[Option<&Const>]) -> std::result::Result<Const, String> {
    let (start, limit, delta) = (get(c, 0)?, get(c, 1)?, get(c, 2)?);
    // Range's inputs are scalars; a model may still give empty or longer
    // tensors, which have no first value to take.
    for (name, t) in [("start", start), ("limit", limit), ("delta", delta)] {
        if t.len() != 1 {
            return Err(format!(
                "{name} has {} values; it must be a scalar",
                t.len()
            ));
        }
    }
    match (&start.data, &limit.data, &delta.data) {
        (Data::I(s), Data::I(l), Data::I(d)) => {
            let (s, l, d) = (s[0], l[0], *d.first().unwrap_or(&0));
            if d == 0 {
                return Err("delta is 0".into());
            }
            // In i128: limit - start may not fit an i64.
            let n = ((l as i128 - s as i128) as f64 / d as f64).ceil().max(0.0) as usize;
            folded_len(&[n])?;
            Ok(Const::ints(
                start.elem,
                vec![n],
                // Each value lies between start and limit, but k * d alone
                // may not fit an i64.
                (0..n as i128)
                    .map(|k| (s as i128 + k * d as i128) as i64)
                    .collect(),
            ))
        }
        _ => {
            let (s, l, d) = (start.as_f32()[0], limit.as_f32()[0], delta.as_f32()[0]);
            let n = ((l - s) / d).ceil().max(0.0) as usize;
            folded_len(&[n])?;
            Ok(Const::floats(
                start.elem,
                vec![n],
                (0..n).map(|k| s + k as f32 * d).collect(),
            ))
        }
    }
}

fn variadic(op: &str, c: &[Option<&Const>]) -> Msg {
    let parts: Vec<&Const> = c.iter().flatten().copied().collect();
    let mut acc = (*parts.first().ok_or("no inputs")?).clone();
    let bop = match op {
        "Sum" | "Mean" => "Add",
        o => o,
    };
    for p in &parts[1..] {
        acc = binary(bop, &acc, p)?;
    }
    if op == "Mean" {
        let n = parts.len() as f32;
        if let Data::F(v) = &mut acc.data {
            v.iter_mut().for_each(|x| *x /= n);
        }
    }
    Ok(vec![acc])
}

fn binary(op: &str, a: &Const, b: &Const) -> std::result::Result<Const, String> {
    let out = broadcast(&a.shape, &b.shape)
        .ok_or_else(|| format!("shapes {:?} and {:?} do not broadcast", a.shape, b.shape))?;
    let (x, y) = (broadcast_to(a, &out)?, broadcast_to(b, &out)?);
    let compare = matches!(op, "Equal" | "Greater" | "Less");
    let elem = if compare { Elem::Bool } else { a.elem };
    let data = match (&x.data, &y.data) {
        (Data::F(p), Data::F(q)) => {
            let f = |u: f32, v: f32| -> f32 {
                match op {
                    "Add" => u + v,
                    "Sub" => u - v,
                    "Mul" => u * v,
                    "Div" => u / v,
                    "Pow" => u.powf(v),
                    "Max" => u.max(v),
                    "Min" => u.min(v),
                    "Equal" => f32::from(u8::from(u == v)),
                    "Greater" => f32::from(u8::from(u > v)),
                    _ => f32::from(u8::from(u < v)),
                }
            };
            let v: Vec<f32> = p.iter().zip(q).map(|(&u, &v)| f(u, v)).collect();
            if compare {
                Data::I(v.iter().map(|&x| x as i64).collect())
            } else {
                return Ok(Const::floats(elem, out, v));
            }
        }
        (Data::I(p), Data::I(q)) => {
            let f = |u: i64, v: i64| -> std::result::Result<i64, String> {
                Ok(match op {
                    "Add" => u.wrapping_add(v),
                    "Sub" => u.wrapping_sub(v),
                    "Mul" => u.wrapping_mul(v),
                    // Truncating, as integer Div does in C and onnxruntime.
                    "Div" => u.checked_div(v).ok_or("integer division by zero")?,
                    "Pow" => (u as f64).powf(v as f64) as i64,
                    "Max" => u.max(v),
                    "Min" => u.min(v),
                    "Equal" => i64::from(u == v),
                    "Greater" => i64::from(u > v),
                    _ => i64::from(u < v),
                })
            };
            Data::I(
                p.iter()
                    .zip(q)
                    .map(|(&u, &v)| f(u, v).map(|r| if compare { r } else { wrap(elem, r) }))
                    .collect::<std::result::Result<_, _>>()?,
            )
        }
        // Pow's exponent may have another type than its base.
        (Data::F(p), Data::I(q)) if op == "Pow" => {
            return Ok(Const::floats(
                elem,
                out,
                p.iter().zip(q).map(|(&u, &v)| u.powf(v as f32)).collect(),
            ))
        }
        _ => {
            return Err(format!(
                "inputs of types {} and {} differ",
                a.elem.name(),
                b.elem.name()
            ))
        }
    };
    Ok(Const {
        elem,
        shape: out,
        data,
    })
}

fn unary(op: &str, x: &Const) -> std::result::Result<Const, String> {
    Ok(match &x.data {
        Data::F(v) => {
            let f = |u: f32| match op {
                "Neg" => -u,
                "Abs" => u.abs(),
                "Sqrt" => u.sqrt(),
                "Exp" => u.exp(),
                "Log" => u.ln(),
                "Relu" => u.max(0.0),
                _ => 1.0 / u,
            };
            Const::floats(x.elem, x.shape.clone(), v.iter().map(|&u| f(u)).collect())
        }
        Data::I(v) => {
            let f = |u: i64| match op {
                "Neg" => Ok(u.wrapping_neg()),
                "Abs" => Ok(u.wrapping_abs()),
                "Relu" => Ok(u.max(0)),
                _ => Err(format!("{op} of an integer tensor")),
            };
            Const::ints(
                x.elem,
                x.shape.clone(),
                v.iter()
                    .map(|&u| f(u))
                    .collect::<std::result::Result<_, _>>()?,
            )
        }
    })
}
