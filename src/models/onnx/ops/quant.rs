//! Quantized operators: QuantizeLinear and DequantizeLinear (the QDQ
//! format), the QOperator format's QLinearConv and QLinearMatMul, and
//! onnxruntime's `com.microsoft` QLinear operators that its quantizer writes
//! ([`CONTRIB`]).
//!
//! wgnn computes them in float, correctness first: a quantized tensor is a
//! float operand holding its integer values (exact: every int8 and uint8
//! value is a float16 too), constant weights are dequantized at load, and
//! each operator dequantizes its inputs, runs the float operator and
//! quantizes its result with a scale, a round and a clamp. Results differ
//! from onnxruntime's integer kernels only where rounding does: its
//! fixed-point requantization and our float sum may round a value on
//! either side of a half step, and our round takes halves up where ONNX
//! takes them to even (tests/models/onnx_int8.rs measures the outputs'
//! distance in quantization steps).

use std::sync::Arc;

use super::{conv, linalg, normalization, pool, Entry, Write};
use crate::error::Result;
use crate::ml::{DataType, Operand};
use crate::models::onnx::fold::{get, norm_axis, Args, Fold::Never, Msg};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::{Const, Elem};
use crate::models::quantize::{range, to_grid};

/// onnxruntime's quantized operators of the `com.microsoft` domain that
/// wgnn reads, sorted by name. Each one's inputs are (x, scale, zero point)
/// triples and the output's (scale, zero point).
#[rustfmt::skip]
pub(super) const CONTRIB: &[Entry] = &[
    super::op("QGemm", Never, qgemm),
    super::op("QLinearAdd", Never, qlinear_elementwise),
    super::op("QLinearAveragePool", Never, qlinear_pool),
    super::op("QLinearConcat", Never, qlinear_concat),
    super::op("QLinearGlobalAveragePool", Never, qlinear_pool),
    super::op("QLinearLeakyRelu", Never, qlinear_elementwise),
    super::op("QLinearMul", Never, qlinear_elementwise),
    super::op("QLinearSigmoid", Never, qlinear_elementwise),
    super::op("QLinearSoftmax", Never, qlinear_softmax),
];

/// The domain of [`CONTRIB`].
pub(in crate::models::onnx) const CONTRIB_DOMAIN: &str = "com.microsoft";

/// A tensor's quantization: its scale and zero point, one each or one per
/// index of `axis`, and the integer range of its type.
struct Quant {
    scale: Vec<f32>,
    zero: Vec<f32>,
    axis: usize,
    lo: f32,
    hi: f32,
}

impl Quant {
    /// From host constants: `zero` `None` is ONNX's default, uint8 zero;
    /// `axis` is where a per-axis scale runs in a rank-`rank` tensor.
    fn of(
        scale: &Const,
        zero: Option<&Const>,
        axis: i64,
        rank: usize,
    ) -> std::result::Result<Quant, String> {
        let values = scale.as_f32();
        if let Some(bad) = values.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(format!("scale {bad} is not a positive number"));
        }
        let (zero, elem) = match zero {
            Some(z) => (z.as_f32(), z.elem),
            None => (vec![0.0; values.len()], Elem::U8),
        };
        let (lo, hi) = match elem {
            Elem::U8 => range(false),
            Elem::I8 => range(true),
            Elem::I32 => (i32::MIN as f32, i32::MAX as f32),
            e => {
                return Err(format!(
                    "a zero point of type {} is not supported (int8, uint8 and int32 are)",
                    e.name()
                ))
            }
        };
        if zero.len() != values.len() {
            return Err(format!(
                "{} scales and {} zero points differ in number",
                values.len(),
                zero.len()
            ));
        }
        let axis = if values.len() > 1 {
            norm_axis(axis, rank)?
        } else {
            0
        };
        Ok(Quant {
            scale: values,
            zero,
            axis,
            lo,
            hi,
        })
    }

    fn per_axis(&self) -> bool {
        self.scale.len() > 1
    }

    /// The shape its scale and zero point broadcast in against a
    /// rank-`rank` tensor.
    fn shape(&self, rank: usize) -> Vec<usize> {
        let mut shape = vec![1; rank];
        if self.per_axis() {
            shape[self.axis] = self.scale.len();
        }
        shape
    }

    /// The scale and zero point of element `i` of a tensor of `shape`.
    fn at(&self, shape: &[usize], i: usize) -> (f32, f32) {
        if !self.per_axis() {
            return (self.scale[0], self.zero[0]);
        }
        let inner: usize = shape[self.axis + 1..].iter().product();
        let k = (i / inner.max(1)) % self.scale.len();
        (self.scale[k], self.zero[k])
    }

    fn check(&self, shape: &[usize]) -> std::result::Result<(), String> {
        if self.per_axis() && shape.get(self.axis) != Some(&self.scale.len()) {
            return Err(format!(
                "{} scales do not match axis {} of {shape:?}",
                self.scale.len(),
                self.axis
            ));
        }
        Ok(())
    }
}

/// The quantization given by inputs `s` and `z` (scale, zero point), which
/// must be constants, for a tensor of rank `rank`.
fn quant_in(
    wr: &Writer<'_>,
    inputs: &[Option<Value>],
    s: usize,
    z: usize,
    axis: i64,
    rank: usize,
) -> Result<Quant> {
    let scale = wr
        .need_const(inputs, s, "scale")?
        .ok_or_else(|| wr.err(format!("input {s} (scale) is missing")))?;
    let zero = wr.need_const(inputs, z, "zero point")?;
    wr.msg(Quant::of(&scale, zero.as_deref(), axis, rank))
}

fn floats(q: &Quant, values: &[f32], rank: usize) -> Const {
    Const::floats(Elem::F32, q.shape(rank), values.to_vec())
}

/// Integer values (a float operand, or an int operand of a graph input) as
/// the real values they stand for: `(x - zero) * scale`.
fn dequantize(wr: &mut Writer<'_>, x: &Value, q: &Quant) -> Result<Value> {
    if let Value::Const(c) = x {
        return Ok(Value::Const(Arc::new(wr.msg(dequantize_const(c, q))?)));
    }
    let mut x = wr.operand(x)?;
    let b = wr.b;
    let rank = x.shape().len();
    wr.msg(q.check(x.shape()))?;
    if x.data_type() != DataType::Float32 {
        x = wr.ctx(b.cast(&x, DataType::Float32))?;
    }
    if q.zero.iter().any(|&z| z != 0.0) {
        let zero = wr.operand(&Value::Const(Arc::new(floats(q, &q.zero, rank))))?;
        x = wr.ctx(b.sub(&x, &zero))?;
    }
    let scale = wr.operand(&Value::Const(Arc::new(floats(q, &q.scale, rank))))?;
    Ok(wr.computed(wr.ctx(b.mul(&x, &scale))?))
}

/// `f(value, scale, zero point)` of each element of `c`, with the scale
/// and zero point of the element's channel (or the tensor's).
fn per_element<T>(
    c: &Const,
    q: &Quant,
    f: impl Fn(f32, f32, f32) -> T,
) -> std::result::Result<Vec<T>, String> {
    q.check(&c.shape)?;
    let values = c.as_f32();
    let each = values.iter().enumerate().map(|(i, &v)| {
        let (s, z) = q.at(&c.shape, i);
        f(v, s, z)
    });
    Ok(each.collect())
}

fn dequantize_const(c: &Const, q: &Quant) -> std::result::Result<Const, String> {
    let values = per_element(c, q, |v, s, z| (v - z) * s)?;
    Ok(Const::floats(Elem::F32, c.shape.clone(), values))
}

/// Real values as the integers `round(x / scale) + zero`, clamped to the
/// type's range; a float operand.
fn quantize(wr: &mut Writer<'_>, x: &Operand, q: &Quant) -> Result<Operand> {
    let rank = x.shape().len();
    wr.msg(q.check(x.shape()))?;
    let scale = wr.operand(&Value::Const(Arc::new(floats(q, &q.scale, rank))))?;
    let shift: Vec<f32> = q.zero.iter().map(|z| z - q.lo + 0.5).collect();
    let shift = wr.operand(&Value::Const(Arc::new(floats(q, &shift, rank))))?;
    wr.ctx(to_grid(wr.b, x, &scale, &shift, q.lo, q.hi))
}

fn quantize_const(c: &Const, q: &Quant, elem: Elem) -> std::result::Result<Const, String> {
    let values = per_element(c, q, |v, s, z| {
        ((v / s).round_ties_even() + z).clamp(q.lo, q.hi) as i64
    })?;
    Ok(Const::ints(elem, c.shape.clone(), values))
}

/// The type QuantizeLinear writes: its zero point's, else `output_dtype`,
/// else uint8.
fn quantized_elem(attrs: &Attrs<'_>, zero: Option<&Const>) -> std::result::Result<Elem, String> {
    match (zero, attrs.int("output_dtype", 0)) {
        (Some(z), _) => Ok(z.elem),
        (None, 0) => Ok(Elem::U8),
        (None, t) => Elem::from_onnx(t as i32),
    }
}

fn refuse_blocks(attrs: &Attrs<'_>) -> std::result::Result<(), String> {
    match attrs.int("block_size", 0) {
        0 => Ok(()),
        b => Err(format!(
            "block_size {b}: blocked quantization is not supported"
        )),
    }
}

fn quant_of_consts(args: &Args<'_>, x: &Const) -> std::result::Result<Quant, String> {
    refuse_blocks(args.attrs)?;
    let scale = get(args.c, 1)?;
    let zero = args.c.get(2).copied().flatten();
    Quant::of(scale, zero, args.attrs.int("axis", 1), x.shape.len())
}

pub(super) fn fold_quantize(args: &Args<'_>) -> Msg {
    let x = get(args.c, 0)?;
    let q = quant_of_consts(args, x)?;
    let elem = quantized_elem(args.attrs, args.c.get(2).copied().flatten())?;
    Ok(vec![quantize_const(x, &q, elem)?])
}

pub(super) fn fold_dequantize(args: &Args<'_>) -> Msg {
    let x = get(args.c, 0)?;
    let q = quant_of_consts(args, x)?;
    Ok(vec![dequantize_const(x, &q)?])
}

pub(super) fn quantize_linear<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    wr.msg(refuse_blocks(attrs))?;
    let x = wr.opnd(inputs, 0)?;
    let q = quant_in(wr, inputs, 1, 2, attrs.int("axis", 1), x.shape().len())?;
    let zero = wr.need_const(inputs, 2, "zero point")?;
    let elem = wr.msg(quantized_elem(attrs, zero.as_deref()))?;
    if !matches!(elem, Elem::U8 | Elem::I8) {
        return Err(wr.err(format!(
            "quantizing to {} is not supported (int8 and uint8 are)",
            elem.name()
        )));
    }
    let y = quantize(wr, &x, &q)?;
    Ok(wr.one(y))
}

pub(super) fn dequantize_linear<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    wr.msg(refuse_blocks(attrs))?;
    if let Some(y) = super::quant_conv::fake_quantize(wr, n)? {
        return Ok(vec![y]);
    }
    let x = wr.need(inputs, 0)?.clone();
    let q = quant_in(wr, inputs, 1, 2, attrs.int("axis", 1), x.shape().len())?;
    Ok(vec![dequantize(wr, &x, &q)?])
}

/// Input `x` of a (x, scale, zero point) triple starting at `i`,
/// dequantized; a per-axis scale runs along `axis`.
fn real_in(wr: &mut Writer<'_>, inputs: &[Option<Value>], i: usize, axis: i64) -> Result<Value> {
    let x = wr.need(inputs, i)?.clone();
    let q = quant_in(wr, inputs, i + 1, i + 2, axis, x.shape().len())?;
    dequantize(wr, &x, &q)
}

/// The float result `y` quantized by the (scale, zero point) inputs at `s`.
fn quantized_out(
    wr: &mut Writer<'_>,
    inputs: &[Option<Value>],
    y: &[Value],
    s: usize,
) -> Result<Vec<Value>> {
    let y = y
        .first()
        .ok_or_else(|| wr.err("the float operator wrote nothing"))?;
    let y = wr.operand(y)?;
    let q = quant_in(wr, inputs, s, s + 1, 1, y.shape().len())?;
    let y = quantize(wr, &y, &q)?;
    Ok(wr.one(y))
}

/// A bias of int32 values in units of `x_scale * w_scale[channel]`, as floats.
fn real_bias(
    wr: &Writer<'_>,
    inputs: &[Option<Value>],
    i: usize,
    x_scale: usize,
    w_scale: usize,
) -> Result<Option<Value>> {
    let Some(bias) = wr.need_const(inputs, i, "bias")? else {
        return Ok(None);
    };
    let xs = quant_in(wr, inputs, x_scale, usize::MAX, 0, 1)?.scale[0];
    let ws = quant_in(wr, inputs, w_scale, usize::MAX, 0, 1)?;
    let values: Vec<f32> = bias
        .as_f32()
        .iter()
        .enumerate()
        .map(|(c, &v)| v * xs * ws.scale[if ws.per_axis() { c } else { 0 }])
        .collect();
    if ws.per_axis() && ws.scale.len() != values.len() {
        return Err(wr.err(format!(
            "{} bias values and {} weight scales differ in number",
            values.len(),
            ws.scale.len()
        )));
    }
    Ok(Some(Value::Const(Arc::new(Const::floats(
        Elem::F32,
        bias.shape.clone(),
        values,
    )))))
}

/// QLinearConv: (x, x scale, x zero), (w, w scale per output channel, w
/// zero), y scale, y zero, int32 bias.
pub(super) fn qlinear_conv<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = real_in(wr, inputs, 0, 1)?;
    let bias = real_bias(wr, inputs, 8, 1, 4)?;
    // In int8 where it can (`quant_conv.rs`), else in float.
    if let Some(y) = super::quant_conv::qlinear_conv(wr, attrs, inputs, &x, bias.clone())? {
        return quantized_out(wr, inputs, &[y], 6);
    }
    let w = real_in(wr, inputs, 3, 0)?;
    let y = conv::conv(wr, n, attrs, &[Some(x), Some(w), bias])?;
    quantized_out(wr, inputs, &y, 6)
}

/// QLinearMatMul: a per-column scale of b runs along its last axis.
pub(super) fn qlinear_matmul<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let a = real_in(wr, inputs, 0, -2)?;
    let b = real_in(wr, inputs, 3, -1)?;
    let y = linalg::matmul(wr, n, attrs, &[Some(a), Some(b)])?;
    quantized_out(wr, inputs, &y, 6)
}

/// QGemm: as QLinearMatMul with Gemm's attributes, an int32 bias C in
/// units of `a_scale * b_scale`, and a float result when y's scale is
/// left out.
fn qgemm<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let a = real_in(wr, inputs, 0, -2)?;
    let b_axis = if attrs.int("transB", 0) != 0 { 0 } else { -1 };
    let b = real_in(wr, inputs, 3, b_axis)?;
    let c = real_bias(wr, inputs, 6, 1, 4)?;
    let y = linalg::gemm(wr, n, attrs, &[Some(a), Some(b), c])?;
    if inputs.get(7).is_some_and(Option::is_some) {
        quantized_out(wr, inputs, &y, 7)
    } else {
        Ok(y)
    }
}

/// QLinearAdd and QLinearMul: (a triple), (b triple), c scale, c zero;
/// QLinearSigmoid and QLinearLeakyRelu: (x triple), y scale, y zero.
fn qlinear_elementwise<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let a = real_in(wr, inputs, 0, 1)?;
    let a = wr.operand(&a)?;
    let b = wr.b;
    let (y, out) = match n.op_type() {
        "QLinearAdd" | "QLinearMul" => {
            let c = real_in(wr, inputs, 3, 1)?;
            let c = wr.operand(&c)?;
            let y = if n.op_type() == "QLinearMul" {
                b.mul(&a, &c)
            } else {
                b.add(&a, &c)
            };
            (y, 6)
        }
        "QLinearSigmoid" => (b.sigmoid(&a), 3),
        _ => (b.leaky_relu(&a, attrs.float("alpha", 0.01)), 3),
    };
    let y = wr.ctx(y)?;
    quantized_out(wr, inputs, &[wr.computed(y)], out)
}

/// QLinearConcat: y scale, y zero, then a triple per input.
fn qlinear_concat<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    if inputs.len() < 5 || (inputs.len() - 2) % 3 != 0 {
        return Err(wr.err(format!(
            "{} inputs: QLinearConcat takes y's scale and zero point, then a (x, scale, zero \
             point) triple per input",
            inputs.len()
        )));
    }
    let mut parts = Vec::new();
    for i in (2..inputs.len()).step_by(3) {
        let x = real_in(wr, inputs, i, 1)?;
        parts.push(wr.operand(&x)?);
    }
    let axis = wr.msg(norm_axis(attrs.int("axis", 0), parts[0].shape().len()))?;
    let refs: Vec<&Operand> = parts.iter().collect();
    let y = wr.ctx(wr.b.concat(&refs, axis))?;
    quantized_out(wr, inputs, &[wr.computed(y)], 0)
}

/// QLinearSoftmax: its `opset` attribute says which Softmax it is (before
/// 13: normalised over everything from `axis` on).
fn qlinear_softmax<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = real_in(wr, inputs, 0, 1)?;
    let opset = wr.opset;
    wr.opset = attrs.int("opset", opset);
    let y = normalization::softmax(wr, n, attrs, &[Some(x)]);
    wr.opset = opset;
    quantized_out(wr, inputs, &y?, 3)
}

/// QLinearAveragePool and QLinearGlobalAveragePool (NCHW only).
fn qlinear_pool<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    if attrs.int("channels_last", 0) != 0 {
        return Err(wr.err("channels_last is not supported"));
    }
    let x = real_in(wr, inputs, 0, 1)?;
    let write: Write = if n.op_type() == "QLinearGlobalAveragePool" {
        pool::global_pool
    } else {
        pool::pool
    };
    let y = write(wr, n, attrs, &[Some(x)])?;
    quantized_out(wr, inputs, &y, 3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::onnx::tensor::Data;

    #[test]
    fn quantizing_rounds_half_to_even_and_saturates() {
        let q = Quant::of(
            &Const::floats(Elem::F32, vec![], vec![0.5]),
            Some(&Const::ints(Elem::I8, vec![], vec![-1])),
            1,
            1,
        )
        .unwrap();
        let x = Const::floats(Elem::F32, vec![5], vec![0.25, 0.75, -100.0, 100.0, 1.0]);
        let y = quantize_const(&x, &q, Elem::I8).unwrap();
        assert_eq!(y.data, Data::I(vec![-1, 1, -128, 127, 1]));
        let back = dequantize_const(&y, &q).unwrap();
        assert_eq!(back.as_f32(), vec![0.0, 1.0, -63.5, 64.0, 1.0]);
    }
}
