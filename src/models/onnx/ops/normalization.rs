//! InstanceNormalization, LayerNormalization, LRN, Softmax and LogSoftmax.

use crate::error::Result;
use crate::ml::{Conv2dOptions, InputLayout, Operand};
use crate::models::onnx::fold::norm_axis;
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;

pub(super) fn instance_norm<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let x = wr.opnd(inputs, 0)?;
    let (s, t) = (wr.opnd(inputs, 1)?, wr.opnd(inputs, 2)?);
    let eps = attrs.float("epsilon", 1e-5);
    let (x4, back) = wr.as_4d(&x)?;
    let y = wr.ctx(b.instance_normalization(&x4, Some(&s), Some(&t), eps, InputLayout::Nchw))?;
    Ok(wr.one(wr.ctx(b.reshape(&y, &back))?))
}

pub(super) fn layer_norm<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let x = wr.opnd(inputs, 0)?;
    let rank = x.shape().len();
    let axis = wr.msg(norm_axis(attrs.int("axis", -1), rank))?;
    let axes: Vec<usize> = (axis..rank).collect();
    let normalized = x.shape()[axis..].to_vec();
    let shaped = |w: &mut Writer<'s>, i: usize| -> Result<Option<Operand>> {
        let Some(o) = w.opt_opnd(inputs, i)? else {
            return Ok(None);
        };
        if o.shape() == normalized.as_slice() {
            return Ok(Some(o));
        }
        Ok(Some(w.ctx(b.expand(&o, &normalized))?))
    };
    let s = shaped(wr, 1)?;
    let t = shaped(wr, 2)?;
    let eps = attrs.float("epsilon", 1e-5);
    let y = b.layer_normalization(&x, s.as_ref(), t.as_ref(), &axes, eps);
    Ok(wr.one(wr.ctx(y)?))
}

pub(super) fn softmax<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let x = wr.opnd(inputs, 0)?;
    let rank = x.shape().len();
    let log = op_type == "LogSoftmax";
    if wr.opset >= 13 {
        let axis = wr.msg(norm_axis(attrs.int("axis", -1), rank))?;
        let y = if log {
            b.log_softmax(&x, axis)
        } else {
            b.softmax(&x, axis)
        };
        return Ok(wr.one(wr.ctx(y)?));
    }
    // Before opset 13 the input is coerced to 2-D at `axis` and
    // normalised over everything from it on.
    let axis = wr.msg(norm_axis(attrs.int("axis", 1), rank.max(1)))?;
    let shape = x.shape().to_vec();
    let flat = [
        shape[..axis].iter().product(),
        shape[axis..].iter().product(),
    ];
    let x2 = wr.ctx(b.reshape(&x, &flat))?;
    let y = wr.ctx(if log {
        b.log_softmax(&x2, 1)
    } else {
        b.softmax(&x2, 1)
    })?;
    Ok(wr.one(wr.ctx(b.reshape(&y, &shape))?))
}

pub(super) fn lrn<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    // y = x / (bias + alpha / size * sum of x^2 over `size` channels
    // around c)^beta; the channel window sum is a conv2d with a ones
    // filter over (N, 1, C, H*W).
    let x = wr.opnd(inputs, 0)?;
    let b = wr.b;
    let size = usize::try_from(attrs.int("size", 0))
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| wr.err("size must be positive"))?;
    let (alpha, beta, bias) = (
        attrs.float("alpha", 1e-4),
        attrs.float("beta", 0.75),
        attrs.float("bias", 1.0),
    );
    let shape = x.shape().to_vec();
    if shape.len() < 3 {
        return Err(wr.err("input must have channels and spatial axes"));
    }
    let (n, c) = (shape[0], shape[1]);
    let rest: usize = shape[2..].iter().product();
    let sq = wr.ctx(b.mul(&x, &x))?;
    let sq = wr.ctx(b.reshape(&sq, &[n, 1, c, rest]))?;
    // A window reaching past the channels sums the same values as one
    // reaching c - 1 each way: clamping keeps the result and keeps a
    // lying `size` from sizing the filter.
    let reach = c.saturating_sub(1);
    let (before, after) = (((size - 1) / 2).min(reach), (size / 2).min(reach));
    let window = before + after + 1;
    let ones = wr.const_like(&x, &[1, 1, window, 1], vec![1.0; window])?;
    let options = Conv2dOptions {
        padding: [before, after, 0, 0],
        ..Conv2dOptions::new()
    };
    let sum = wr.ctx(b.conv2d(&sq, &ones, None, options))?;
    let sum = wr.ctx(b.reshape(&sum, &shape))?;
    let scale = wr.scalar_like(&sum, alpha / size as f32)?;
    let k = wr.scalar_like(&sum, bias)?;
    let d = wr.ctx(b.mul(&sum, &scale))?;
    let d = wr.ctx(b.add(&d, &k))?;
    let e = wr.scalar_like(&d, beta)?;
    let d = wr.ctx(b.pow(&d, &e))?;
    Ok(wr.one(wr.ctx(b.div(&x, &d))?))
}
