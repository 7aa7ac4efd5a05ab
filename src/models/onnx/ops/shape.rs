//! Operators that only reshape or repeat: Flatten, Reshape, Squeeze,
//! Unsqueeze, Transpose, DepthToSpace/SpaceToDepth, Expand and Tile; and
//! the ones computed only at import (Shape, Constant, ConstantOfShape, Range).

use crate::error::Result;
use crate::ml::Operand;
use crate::models::onnx::fold::{
    broadcast, broadcast_to, flat, flatten_shape, folded_len, get, index_map, perm_of,
    reshape_target, reshaped, squeeze_shape, take, unsqueeze_shape, Args, Msg,
};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::{self, Const, Data, Elem};

impl<'s> Writer<'s> {
    /// Reshape, keeping the ONNX type; no node when the shape is unchanged.
    pub(super) fn reshape_to(
        &mut self,
        inputs: &[Option<Value>],
        x: Operand,
        shape: Vec<usize>,
    ) -> Result<Vec<Value>> {
        let elem = self.need(inputs, 0)?.elem();
        if x.shape() == shape.as_slice() {
            return Ok(self.keep(x, elem));
        }
        Ok(self.keep(self.ctx(self.b.reshape(&x, &shape))?, elem))
    }
}

pub(super) fn flatten<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = wr.opnd(inputs, 0)?;
    let shape = wr.msg(flatten_shape(x.shape(), attrs.int("axis", 1)))?;
    wr.reshape_to(inputs, x, shape)
}

pub(super) fn reshape<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = wr.opnd(inputs, 0)?;
    let spec = wr
        .need_const(inputs, 1, "shape")?
        .ok_or_else(|| wr.err("input 1 (shape) is missing"))?;
    let allowzero = attrs.int("allowzero", 0) != 0;
    let mut spec = spec.as_i64();
    // A batch of items: a constant target that starts with the
    // single-item batch of 1 (an exporter's trace at batch 1)
    // starts with the batch instead; 0 and -1 follow by
    // themselves. `models::batch` checks the result.
    if wr.batch > 1
        && spec.first() == Some(&1)
        && x.shape().first().is_some_and(|d| d % wr.batch == 0)
    {
        spec[0] = wr.batch as i64;
    }
    let shape = wr.msg(reshape_target(x.shape(), &spec, allowzero))?;
    wr.reshape_to(inputs, x, shape)
}

pub(super) fn squeeze<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = wr.opnd(inputs, 0)?;
    let axes = wr.ints_in(inputs, attrs, 1, "axes", 13)?;
    let shape = wr.msg(squeeze_shape(x.shape(), axes.as_deref()))?;
    wr.reshape_to(inputs, x, shape)
}

pub(super) fn unsqueeze<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = wr.opnd(inputs, 0)?;
    let axes = wr
        .ints_in(inputs, attrs, 1, "axes", 13)?
        .unwrap_or_default();
    let shape = wr.msg(unsqueeze_shape(x.shape(), &axes))?;
    wr.reshape_to(inputs, x, shape)
}

pub(super) fn transpose<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let x = wr.opnd(inputs, 0)?;
    let perm = wr.msg(perm_of(attrs, x.shape().len()))?;
    let elem = wr.need(inputs, 0)?.elem();
    Ok(wr.keep(wr.ctx(b.transpose(&x, Some(&perm)))?, elem))
}

pub(super) fn depth_space<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let x = wr.opnd(inputs, 0)?;
    let bs = usize::try_from(attrs.int("blocksize", 0))
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| wr.err("blocksize must be positive"))?;
    let &[n, c, h, w] = x.shape() else {
        return Err(wr.err(format!("input {:?} must be 4-D", x.shape())));
    };
    let (split, perm, out): (Vec<usize>, [usize; 6], [usize; 4]) = if op_type == "SpaceToDepth" {
        if h % bs != 0 || w % bs != 0 {
            return Err(wr.err("height and width must divide by blocksize"));
        }
        (
            vec![n, c, h / bs, bs, w / bs, bs],
            [0, 3, 5, 1, 2, 4],
            [n, c * bs * bs, h / bs, w / bs],
        )
    } else {
        // blocksize is the file's number: its square may not fit.
        let square = bs.checked_mul(bs).filter(|&s| c % s == 0);
        let Some(square) = square else {
            return Err(wr.err("channels must divide by blocksize squared"));
        };
        let oc = c / square;
        let out = [n, oc, h * bs, w * bs];
        if attrs.string("mode", "DCR") == "CRD" {
            (vec![n, oc, bs, bs, h, w], [0, 1, 4, 2, 5, 3], out)
        } else {
            (vec![n, bs, bs, oc, h, w], [0, 3, 4, 1, 5, 2], out)
        }
    };
    let y = wr.ctx(b.reshape(&x, &split))?;
    let y = wr.ctx(b.transpose(&y, Some(&perm)))?;
    Ok(wr.one(wr.ctx(b.reshape(&y, &out))?))
}

pub(super) fn expand<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let elem = wr.need(inputs, 0)?.elem();
    let x = wr.opnd(inputs, 0)?;
    let spec = wr
        .need_const(inputs, 1, "shape")?
        .ok_or_else(|| wr.err("input 1 (shape) is missing"))?;
    let target = wr.msg(tensor::checked_shape(&spec.as_i64()))?;
    let out = broadcast(x.shape(), &target)
        .ok_or_else(|| wr.err(format!("{:?} does not broadcast to {target:?}", x.shape())))?;
    if out == x.shape() {
        return Ok(vec![wr.need(inputs, 0)?.clone()]);
    }
    Ok(wr.keep(wr.ctx(b.expand(&x, &out))?, elem))
}

pub(super) fn tile<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let elem = wr.need(inputs, 0)?.elem();
    let x = wr.opnd(inputs, 0)?;
    let reps = wr
        .need_const(inputs, 1, "repeats")?
        .ok_or_else(|| wr.err("input 1 (repeats) is missing"))?
        .as_i64();
    let reps: Vec<usize> = reps
        .iter()
        .map(|&r| usize::try_from(r).ok().filter(|&r| r > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| wr.err(format!("repeats {reps:?} must be positive")))?;
    Ok(wr.keep(wr.ctx(b.tile(&x, &reps))?, elem))
}

pub(super) fn not_at_import<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    _inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    Err(wr.err(
        "its inputs must be known at import (constants or shapes), \
     not computed from the model's input values",
    ))
}

pub(super) fn fold_reshape(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
    let x = get(c, 0)?;
    let shape = reshape_target(
        &x.shape,
        &get(c, 1)?.as_i64(),
        attrs.int("allowzero", 0) != 0,
    )?;
    Ok(vec![reshaped(x, shape)])
}

pub(super) fn fold_flatten(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
    let x = get(c, 0)?;
    Ok(vec![reshaped(
        x,
        flatten_shape(&x.shape, attrs.int("axis", 1))?,
    )])
}

pub(super) fn fold_squeeze(args: &Args<'_>) -> Msg {
    let Args {
        c, attrs, opset, ..
    } = *args;
    let x = get(c, 0)?;
    let axes = if opset >= 13 {
        c.get(1).copied().flatten().map(Const::as_i64)
    } else {
        attrs.ints("axes")
    };
    Ok(vec![reshaped(x, squeeze_shape(&x.shape, axes.as_deref())?)])
}

pub(super) fn fold_unsqueeze(args: &Args<'_>) -> Msg {
    let Args {
        c, attrs, opset, ..
    } = *args;
    let x = get(c, 0)?;
    let axes = if opset >= 13 {
        get(c, 1)?.as_i64()
    } else {
        attrs.ints("axes").unwrap_or_default()
    };
    Ok(vec![reshaped(x, unsqueeze_shape(&x.shape, &axes)?)])
}

pub(super) fn fold_transpose(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
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
}

pub(super) fn fold_constant_of_shape(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
    let shape = tensor::checked_shape(&get(c, 0)?.as_i64())?;
    let count = folded_len(&shape)?;
    let value = match attrs.tensor("value") {
        Some(t) => tensor::decode(t, None).map_err(|e| format!("'value': {e}"))?,
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
}

pub(super) fn fold_range(args: &Args<'_>) -> Msg {
    let Args { c, .. } = *args;
    range(c).map(|c| vec![c])
}

pub(super) fn fold_expand(args: &Args<'_>) -> Msg {
    let Args { c, .. } = *args;
    let x = get(c, 0)?;
    let target = tensor::checked_shape(&get(c, 1)?.as_i64())?;
    let out = broadcast(&x.shape, &target)
        .ok_or_else(|| format!("shape {:?} does not broadcast to {target:?}", x.shape))?;
    Ok(vec![broadcast_to(x, &out)?])
}

pub(super) fn fold_tile(args: &Args<'_>) -> Msg {
    let Args { c, .. } = *args;
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
}

pub(super) fn constant(attrs: &Attrs<'_>) -> Msg {
    let a = attrs.0.first().ok_or("has no value attribute")?;
    let c = match a.name() {
        "value" => tensor::decode(a.t.as_ref().ok_or("'value' holds no tensor")?, None)
            .map_err(|e| format!("'value': {e}"))?,
        "value_float" => Const::floats(Elem::F32, vec![], vec![a.f()]),
        "value_floats" => Const::floats(Elem::F32, vec![a.floats.len()], a.floats.clone()),
        "value_int" => Const::ints(Elem::I64, vec![], vec![a.i()]),
        "value_ints" => Const::ints(Elem::I64, vec![a.ints.len()], a.ints.clone()),
        other => return Err(format!("attribute '{other}' is not supported")),
    };
    Ok(vec![c])
}

pub(super) fn shape_op(shape: &[usize], attrs: &Attrs<'_>) -> Msg {
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

pub(super) fn range(c: &[Option<&Const>]) -> std::result::Result<Const, String> {
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

/// Shape needs only its input's static shape, so it folds even for a
/// computed input.
pub(super) fn fold_shape(attrs: &Attrs<'_>, inputs: &[Option<Value>]) -> Option<Msg> {
    inputs
        .first()
        .and_then(Option::as_ref)
        .map(|v| shape_op(&v.shape(), attrs))
}

pub(super) fn fold_constant(attrs: &Attrs<'_>, _inputs: &[Option<Value>]) -> Option<Msg> {
    Some(constant(attrs))
}
