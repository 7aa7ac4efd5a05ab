//! ONNX convolutions that compute in int8 (`Op::QuantConv2d`,
//! `ml/quant_conv.rs`) instead of in float on dequantized values:
//!
//! - the QDQ form: a 2-D Conv whose input is DequantizeLinear(
//!   QuantizeLinear(x)) with one scale and zero point (the same on both),
//!   and whose weights are DequantizeLinear of an int8 or uint8 constant
//!   (one scale, or one per output channel along axis 0), reads x and
//!   quantizes it in its own kernel. The pair is written too (other nodes
//!   may read it) and left out of the graph where nothing else reads it
//!   (`ml/fuse/unread.rs`). A bias (onnxruntime writes it as the
//!   DequantizeLinear of int32 values, folded at load) is added in float;
//! - QOperator's QLinearConv, whose input is already integers, dequantized
//!   and quantized again by the kernel (exact: a value comes back to its
//!   integer).
//!
//! Anything else (a BatchNormalization after the Conv, block or
//! differing quantizations, a 1-D conv) runs in float as before.
//!
//! A QuantizeLinear -> DequantizeLinear pair on a float tensor with one
//! scale and zero point (what QDQ puts between every two float ops) is
//! written as one `fakeQuantize` activation of the pair's input, which the
//! node computing that input takes into its kernel, instead of the eight
//! element-wise nodes the two operators write apart (the QuantizeLinear's,
//! then read by nothing, are left out).

use std::sync::Arc;

use crate::error::Result;
use crate::ml::{Operand, QuantConv2dOptions};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::{Const, Elem};

/// A tensor's quantization as the op takes it: one scale and zero point,
/// or one per output channel, and the type.
struct Int8 {
    scale: Vec<f32>,
    zero: Vec<i32>,
    signed: bool,
}

impl Int8 {
    /// From constants; `data` is the quantized values' type, which a
    /// missing zero point takes.
    fn of(scale: &Const, zero: Option<&Const>, data: Elem) -> Option<Int8> {
        let signed = match zero.map_or(data, |z| z.elem) {
            Elem::I8 => true,
            Elem::U8 => false,
            _ => return None,
        };
        let scale = scale.as_f32();
        let zero: Vec<i32> = match zero {
            Some(z) => z.as_f32().iter().map(|&v| v as i32).collect(),
            None => vec![0; scale.len()],
        };
        let positive = scale.iter().all(|s| s.is_finite() && *s > 0.0);
        (positive && zero.len() == scale.len()).then_some(Int8 {
            scale,
            zero,
            signed,
        })
    }
}

fn default_domain(n: &proto::NodeProto) -> bool {
    n.domain().is_empty() || n.domain() == "ai.onnx"
}

/// The `op` node that writes `name`, if one does.
fn producer<'s>(wr: &Writer<'s>, name: &str, op: &str) -> Option<&'s proto::NodeProto> {
    wr.nodes()
        .iter()
        .find(|p| p.op_type() == op && default_domain(p) && p.output.iter().any(|o| o == name))
}

/// The constant named by input `i` of `n`, if it is one.
fn konst(wr: &Writer<'_>, n: &proto::NodeProto, i: usize) -> Option<Arc<Const>> {
    let name = n.input.get(i).filter(|s| !s.is_empty())?;
    wr.values.get(name.as_str())?.konst().cloned()
}

/// The quantization of a QuantizeLinear or DequantizeLinear node, without
/// blocks, and its constants (to compare a pair's).
fn node_quant(wr: &Writer<'_>, n: &proto::NodeProto, data: Elem) -> Option<(Int8, Vec<f32>)> {
    let attrs = Attrs(&n.attribute);
    if attrs.int("block_size", 0) != 0 || attrs.int("output_dtype", 0) != 0 {
        return None;
    }
    let scale = konst(wr, n, 1)?;
    let zero = konst(wr, n, 2);
    let q = Int8::of(&scale, zero.as_deref(), data)?;
    let mut key = q.scale.clone();
    key.extend(q.zero.iter().map(|&z| z as f32));
    key.push(q.signed as u8 as f32);
    Some((q, key))
}

/// The float input and quantization of the QuantizeLinear writing
/// DequantizeLinear `dq`'s input, where both quantize alike, per tensor.
fn qdq_pair(wr: &Writer<'_>, dq: &proto::NodeProto) -> Option<(Value, Int8)> {
    let q = producer(wr, dq.input.first()?, "QuantizeLinear")?;
    let (xq, key) = node_quant(wr, q, Elem::U8)?;
    let (_, dq_key) = node_quant(wr, dq, if xq.signed { Elem::I8 } else { Elem::U8 })?;
    if key != dq_key || xq.scale.len() != 1 {
        return None;
    }
    let x = wr.values.get(q.input.first()?.as_str())?.clone();
    (x.konst().is_none() && x.elem().is_float()).then_some((x, xq))
}

/// DequantizeLinear `n` of a QuantizeLinear (see the module's note) as one
/// `fakeQuantize`; `None` where it is not one.
pub(super) fn fake_quantize(wr: &mut Writer<'_>, n: &proto::NodeProto) -> Result<Option<Value>> {
    let Some((x, xq)) = qdq_pair(wr, n) else {
        return Ok(None);
    };
    let x = wr.operand(&x)?;
    let range = if xq.signed {
        (-128.0, 127.0)
    } else {
        (0.0, 255.0)
    };
    let y =
        wr.b.fake_quantize(&x, xq.scale[0], xq.zero[0] as f32, range);
    Ok(Some(wr.computed(wr.ctx(y)?)))
}

/// What a QDQ Conv is made of: x (float, 4-D), its quantization, the
/// integer weights and theirs.
fn qdq_parts(wr: &Writer<'_>, n: &proto::NodeProto) -> Option<(Value, Int8, Arc<Const>, Int8)> {
    let dq = producer(wr, n.input.first()?, "DequantizeLinear")?;
    let (x, xq) = qdq_pair(wr, dq)?;
    if x.shape().len() != 4 {
        return None;
    }
    let wdq = producer(wr, n.input.get(1)?, "DequantizeLinear")?;
    let w = konst(wr, wdq, 0)?;
    let (wq, _) = node_quant(wr, wdq, w.elem)?;
    let axis = Attrs(&wdq.attribute).int("axis", 1);
    let per_channel_ok = wq.scale.len() == 1 || axis == 0 || axis == -4;
    (w.elem == if wq.signed { Elem::I8 } else { Elem::U8 } && per_channel_ok)
        .then_some((x, xq, w, wq))
}

/// A QDQ Conv (see the module's note) as one quantized conv2d; `None`
/// where the Conv is not one.
pub(super) fn qdq_conv<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Option<Vec<Value>>> {
    let Some((x, xq, w, wq)) = qdq_parts(wr, n) else {
        return Ok(None);
    };
    let bias = inputs.get(2).cloned().flatten();
    let weights = wr.need(inputs, 1)?.clone();
    if bias.as_ref().is_some_and(|b| b.konst().is_none())
        || wr.bn_after(n, &weights, &bias)?.is_some()
    {
        return Ok(None);
    }
    let x = wr.operand(&x)?;
    let y = write(wr, attrs, &x, &xq, &w, wq, bias)?;
    Ok(Some(wr.one(y)))
}

/// QLinearConv's float result (before its output is quantized) computed
/// in int8: `x` is its input dequantized, `bias` its bias in float;
/// `None` where its weights are not a 4-D integer constant.
pub(super) fn qlinear_conv(
    wr: &mut Writer<'_>,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
    x: &Value,
    bias: Option<Value>,
) -> Result<Option<Value>> {
    let c = |i: usize| {
        inputs
            .get(i)
            .cloned()
            .flatten()
            .and_then(|v| v.konst().cloned())
    };
    let data = wr.need(inputs, 0)?.elem();
    let (Some(xs), Some(w), Some(ws)) = (c(1), c(3), c(4)) else {
        return Ok(None);
    };
    let (Some(xq), Some(wq)) = (
        Int8::of(&xs, c(2).as_deref(), data),
        Int8::of(&ws, c(5).as_deref(), w.elem),
    ) else {
        return Ok(None);
    };
    if x.shape().len() != 4 || xq.scale.len() != 1 {
        return Ok(None);
    }
    let x = wr.operand(x)?;
    let y = write(wr, attrs, &x, &xq, &w, wq, bias)?;
    Ok(Some(wr.computed(y)))
}

/// The quantized conv2d of float `x` quantized by `xq` with integer
/// weights `w` quantized by `wq`, plus a float `bias`.
fn write(
    wr: &mut Writer<'_>,
    attrs: &Attrs<'_>,
    x: &Operand,
    xq: &Int8,
    w: &Const,
    wq: Int8,
    bias: Option<Value>,
) -> Result<Operand> {
    let &[oc, icg, kh, kw] = w.shape.as_slice() else {
        return Err(wr.err(format!("weights {:?} must be 4-D", w.shape)));
    };
    if wq.scale.len() != 1 && wq.scale.len() != oc {
        return Err(wr.err(format!(
            "{} weight scales for {oc} output channels",
            wq.scale.len()
        )));
    }
    let each = |v: &[f32]| -> Vec<f32> { (0..oc).map(|m| v[m % v.len()]).collect() };
    // uint8 values are held minus 128 (ml/quant_conv.rs).
    let shift = if wq.signed { 0 } else { 128 };
    let filter: Vec<i8> = w
        .as_f32()
        .iter()
        .map(|&v| (v as i32 - shift) as i8)
        .collect();
    let filter_zero = (0..oc)
        .map(|m| wq.zero[m % wq.zero.len()] - shift)
        .collect();
    let options = QuantConv2dOptions {
        conv: wr.conv2d_options(attrs, 2, x, &w.shape)?,
        input_scale: xq.scale[0],
        input_zero: xq.zero[0],
        input_signed: xq.signed,
        filter_shape: [oc, icg, kh, kw],
        filter: Arc::new(filter),
        filter_zero,
        filter_scale: each(&wq.scale),
    };
    let bias = bias.map(|b| wr.operand(&b)).transpose()?;
    wr.ctx(wr.b.quant_conv2d(x, bias.as_ref(), options))
}
