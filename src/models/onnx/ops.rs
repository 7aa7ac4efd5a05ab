//! ONNX operators mapped onto the WebNN builder, by opset where their form
//! changed. ONNX is NCHW / OIHW, the builder's defaults, so nothing is
//! transposed; 1-D convolutions and pools run as 2-D ones of height 1.

use std::sync::Arc;

use super::fold::{self, broadcast, norm_axis, SliceArgs};
use super::graph::{Attrs, Value, Writer};
use super::proto;
use super::tensor::{Const, Elem};
use crate::error::Result;
use crate::ml::{
    Conv2dOptions, ConvTranspose2dOptions, CoordinateTransform, DataType, GemmOptions, InputLayout,
    InterpolationMode, NearestRounding, Operand, OperandDescriptor, PaddingMode, Pool2dOptions,
    Resample2dOptions, RoundingType,
};

/// Stand-ins for Clip's absent bounds: WGSL has no infinity literal.
/// The largest stride, dilation, kernel size or padding a spatial
/// attribute may hold: far beyond any real model, and small enough that
/// window arithmetic on tensor sizes cannot overflow (found by fuzz/
/// `onnx_structured`).
const MAX_SPATIAL: usize = 1 << 16;

const NO_MIN: f32 = -f32::MAX;
const NO_MAX: f32 = f32::MAX;

type Ints = std::result::Result<Vec<usize>, String>;

/// A BatchNormalization folded into its Conv: (node index, scale, shift).
type FoldedBn = (usize, Vec<f32>, Vec<f32>);

impl<'s> Writer<'s> {
    fn opnd(&mut self, inputs: &[Option<Value>], i: usize) -> Result<Operand> {
        let v = self.need(inputs, i)?.clone();
        self.operand(&v)
    }

    fn opt_opnd(&mut self, inputs: &[Option<Value>], i: usize) -> Result<Option<Operand>> {
        match inputs.get(i).and_then(Option::as_ref) {
            Some(v) => Ok(Some(self.operand(&v.clone())?)),
            None => Ok(None),
        }
    }

    fn one(&self, op: Operand) -> Vec<Value> {
        vec![self.computed(op)]
    }

    fn keep(&self, op: Operand, elem: Elem) -> Vec<Value> {
        vec![Value::Op { op, elem }]
    }

    fn msg<T>(&self, r: std::result::Result<T, String>) -> Result<T> {
        r.map_err(|e| self.err(e))
    }

    /// A constant integer list input (axes, pads, sizes), or the attribute
    /// of the same name in the opsets before it became an input.
    fn ints_in(
        &self,
        inputs: &[Option<Value>],
        attrs: &Attrs<'_>,
        i: usize,
        name: &str,
        input_from: i64,
    ) -> Result<Option<Vec<i64>>> {
        if self.opset >= input_from {
            Ok(self.need_const(inputs, i, name)?.map(|c| c.as_i64()))
        } else {
            Ok(attrs.ints(name))
        }
    }

    pub(super) fn write_op(
        &mut self,
        n: &'s proto::NodeProto,
        attrs: &Attrs<'_>,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>> {
        let b = self.b;
        let op_type = n.op_type();
        match op_type {
            "Dropout" if self.training(inputs, attrs)? => {
                Err(self.err("training mode is not supported (inference only)"))
            }
            "Identity" | "Dropout" => Ok(vec![self.need(inputs, 0)?.clone()]),
            "Relu" | "Sigmoid" | "Tanh" | "HardSwish" | "Softplus" | "Erf" | "Abs" | "Neg"
            | "Exp" | "Log" | "Sqrt" | "Reciprocal" | "LeakyRelu" | "HardSigmoid" | "Elu"
            | "Selu" => {
                let v = self.need(inputs, 0)?.clone();
                let x = self.operand(&v)?;
                let y = match op_type {
                    "Relu" if !v.elem().is_float() => {
                        let zero = self.scalar_like(&x, 0.0)?;
                        b.max(&x, &zero)
                    }
                    "Relu" => b.relu(&x),
                    "Sigmoid" => b.sigmoid(&x),
                    "Tanh" => b.tanh(&x),
                    "HardSwish" => b.hard_swish(&x),
                    "Softplus" => b.softplus(&x),
                    "Erf" => b.erf(&x),
                    "Abs" => b.abs(&x),
                    "Neg" => b.neg(&x),
                    "Exp" => b.exp(&x),
                    "Log" => b.log(&x),
                    "Sqrt" => b.sqrt(&x),
                    "Reciprocal" => b.reciprocal(&x),
                    "LeakyRelu" => b.leaky_relu(&x, attrs.float("alpha", 0.01)),
                    "HardSigmoid" => {
                        b.hard_sigmoid(&x, attrs.float("alpha", 0.2), attrs.float("beta", 0.5))
                    }
                    "Elu" => b.elu(&x, attrs.float("alpha", 1.0)),
                    _ => {
                        // Selu = gamma * elu(x, alpha).
                        let alpha = attrs.float("alpha", 1.673_263_2);
                        let gamma = attrs.float("gamma", 1.050_701);
                        let e = self.ctx(b.elu(&x, alpha))?;
                        let g = self.scalar_like(&e, gamma)?;
                        b.mul(&e, &g)
                    }
                };
                Ok(self.keep(self.ctx(y)?, v.elem()))
            }
            "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Max" | "Min" | "Sum" | "Mean" => {
                let present: Vec<Value> = inputs.iter().flatten().cloned().collect();
                let first = present.first().ok_or_else(|| self.err("has no inputs"))?;
                let elem = first.elem();
                let mut acc = self.operand(first)?;
                let out_type = acc.data_type();
                // WebNN's arithmetic takes float or int32: uint8 (and bool)
                // runs as int32, and pow of integers as float32 (exact for
                // the integer results ONNX defines).
                let work = match (op_type, out_type) {
                    ("Pow", t) if !t.is_float() => DataType::Float32,
                    (_, DataType::Uint8) => DataType::Int32,
                    (_, t) => t,
                };
                if work != out_type {
                    acc = self.ctx(b.cast(&acc, work))?;
                }
                for v in &present[1..] {
                    let mut o = self.operand(v)?;
                    if o.data_type() != work {
                        o = self.ctx(b.cast(&o, work))?;
                    }
                    acc = self.ctx(match op_type {
                        "Add" | "Sum" | "Mean" => b.add(&acc, &o),
                        "Sub" => b.sub(&acc, &o),
                        "Mul" => b.mul(&acc, &o),
                        "Div" => b.div(&acc, &o),
                        "Pow" => b.pow(&acc, &o),
                        "Max" => b.max(&acc, &o),
                        _ => b.min(&acc, &o),
                    })?;
                }
                if op_type == "Mean" && present.len() > 1 {
                    let k = self.scalar_like(&acc, present.len() as f32)?;
                    acc = self.ctx(b.div(&acc, &k))?;
                }
                if work != out_type {
                    acc = self.ctx(b.cast(&acc, out_type))?;
                }
                Ok(self.keep(acc, elem))
            }
            "Equal" | "Greater" | "Less" | "GreaterOrEqual" | "LessOrEqual" => {
                let (mut a, mut c) = (self.opnd(inputs, 0)?, self.opnd(inputs, 1)?);
                // WebNN compares float or int32 operands; bool compares as int.
                if a.data_type() == DataType::Uint8 {
                    a = self.ctx(b.cast(&a, DataType::Int32))?;
                    c = self.ctx(b.cast(&c, DataType::Int32))?;
                }
                let y = self.ctx(match op_type {
                    "Equal" => b.equal(&a, &c),
                    "Greater" => b.greater(&a, &c),
                    "GreaterOrEqual" => b.greater_or_equal(&a, &c),
                    "LessOrEqual" => b.lesser_or_equal(&a, &c),
                    _ => b.lesser(&a, &c),
                })?;
                Ok(self.keep(y, Elem::Bool))
            }
            "Not" => {
                let x = self.opnd(inputs, 0)?;
                Ok(self.keep(self.ctx(b.logical_not(&x))?, Elem::Bool))
            }
            "Gelu" => {
                // Opset 20's Gelu: exact (erf) or its tanh approximation.
                let x = self.opnd(inputs, 0)?;
                let half = self.scalar_like(&x, 0.5)?;
                let one = self.scalar_like(&x, 1.0)?;
                let inner = match attrs.string("approximate", "none").as_str() {
                    "none" => {
                        let k = self.scalar_like(&x, std::f32::consts::FRAC_1_SQRT_2)?;
                        self.ctx(b.mul(&x, &k).and_then(|v| b.erf(&v)))?
                    }
                    "tanh" => {
                        let c = self.scalar_like(&x, 0.044_715)?;
                        let k = self.scalar_like(&x, (2.0 / std::f32::consts::PI).sqrt())?;
                        let x3 = self.ctx(b.mul(&x, &x).and_then(|v| b.mul(&v, &x)))?;
                        let t = self.ctx(b.mul(&x3, &c).and_then(|v| b.add(&v, &x)))?;
                        self.ctx(b.mul(&t, &k).and_then(|v| b.tanh(&v)))?
                    }
                    other => return Err(self.err(format!("approximate '{other}' is unknown"))),
                };
                let y = self.ctx(
                    b.add(&inner, &one)
                        .and_then(|v| b.mul(&v, &x))
                        .and_then(|v| b.mul(&v, &half)),
                )?;
                Ok(self.one(y))
            }
            "GatherND" => self.gather_nd(attrs, inputs),
            "If" => {
                // Exporters branch on shapes (PyTorch's LocalResponseNorm
                // does): with the sizes fixed at build time the condition is
                // known, and the branch taken is written in place.
                let cond = self
                    .need_const(inputs, 0, "cond")?
                    .ok_or_else(|| self.err("input 0 (cond) is missing"))?;
                let Some(&c) = cond.as_i64().first() else {
                    return Err(self.err("the condition is empty"));
                };
                let name = if c != 0 { "then_branch" } else { "else_branch" };
                let g = n
                    .attribute
                    .iter()
                    .find(|a| a.name() == name)
                    .and_then(|a| a.g.as_ref())
                    .ok_or_else(|| self.err(format!("it has no {name}")))?;
                self.inline_branch(g)
            }
            "Where" => {
                let c = self.opnd(inputs, 0)?;
                let v = self.need(inputs, 1)?.elem();
                let (t, f) = (self.opnd(inputs, 1)?, self.opnd(inputs, 2)?);
                Ok(self.keep(self.ctx(b.where_(&c, &t, &f))?, v))
            }
            "Cast" => self.cast(inputs, attrs),
            "Clip" => self.clip(inputs, attrs),
            "PRelu" => {
                let (x, s) = (self.opnd(inputs, 0)?, self.opnd(inputs, 1)?);
                Ok(self.one(self.ctx(b.prelu(&x, &s))?))
            }
            "MatMul" => self.matmul(inputs),
            "Gemm" => {
                let (a, w) = (self.opnd(inputs, 0)?, self.opnd(inputs, 1)?);
                let c = self.opt_opnd(inputs, 2)?;
                let options = GemmOptions {
                    alpha: attrs.float("alpha", 1.0),
                    beta: attrs.float("beta", 1.0),
                    a_transpose: attrs.int("transA", 0) != 0,
                    b_transpose: attrs.int("transB", 0) != 0,
                };
                Ok(self.one(self.ctx(b.gemm(&a, &w, c.as_ref(), options))?))
            }
            "Conv" => self.conv(n, attrs, inputs),
            "ConvTranspose" => self.conv_transpose(attrs, inputs),
            "BatchNormalization" => self.batch_norm(attrs, inputs),
            "InstanceNormalization" => {
                let x = self.opnd(inputs, 0)?;
                let (s, t) = (self.opnd(inputs, 1)?, self.opnd(inputs, 2)?);
                let eps = attrs.float("epsilon", 1e-5);
                let (x4, back) = self.as_4d(&x)?;
                let y = self.ctx(b.instance_normalization(
                    &x4,
                    Some(&s),
                    Some(&t),
                    eps,
                    InputLayout::Nchw,
                ))?;
                Ok(self.one(self.ctx(b.reshape(&y, &back))?))
            }
            "LayerNormalization" => {
                let x = self.opnd(inputs, 0)?;
                let rank = x.shape().len();
                let axis = self.msg(norm_axis(attrs.int("axis", -1), rank))?;
                let axes: Vec<usize> = (axis..rank).collect();
                let normalized = x.shape()[axis..].to_vec();
                let shaped = |w: &mut Self, i: usize| -> Result<Option<Operand>> {
                    let Some(o) = w.opt_opnd(inputs, i)? else {
                        return Ok(None);
                    };
                    if o.shape() == normalized.as_slice() {
                        return Ok(Some(o));
                    }
                    Ok(Some(w.ctx(b.expand(&o, &normalized))?))
                };
                let s = shaped(self, 1)?;
                let t = shaped(self, 2)?;
                let eps = attrs.float("epsilon", 1e-5);
                let y = b.layer_normalization(&x, s.as_ref(), t.as_ref(), &axes, eps);
                Ok(self.one(self.ctx(y)?))
            }
            "LRN" => self.lrn(attrs, inputs),
            "Flatten" => {
                let x = self.opnd(inputs, 0)?;
                let shape = self.msg(fold::flatten_shape(x.shape(), attrs.int("axis", 1)))?;
                self.reshape_to(inputs, x, shape)
            }
            "Reshape" => {
                let x = self.opnd(inputs, 0)?;
                let spec = self
                    .need_const(inputs, 1, "shape")?
                    .ok_or_else(|| self.err("input 1 (shape) is missing"))?;
                let allowzero = attrs.int("allowzero", 0) != 0;
                let mut spec = spec.as_i64();
                // A batch of items: a constant target that starts with the
                // single-item batch of 1 (an exporter's trace at batch 1)
                // starts with the batch instead; 0 and -1 follow by
                // themselves. `models::batch` checks the result.
                if self.batch > 1
                    && spec.first() == Some(&1)
                    && x.shape().first().is_some_and(|d| d % self.batch == 0)
                {
                    spec[0] = self.batch as i64;
                }
                let shape = self.msg(fold::reshape_target(x.shape(), &spec, allowzero))?;
                self.reshape_to(inputs, x, shape)
            }
            "Squeeze" => {
                let x = self.opnd(inputs, 0)?;
                let axes = self.ints_in(inputs, attrs, 1, "axes", 13)?;
                let shape = self.msg(fold::squeeze_shape(x.shape(), axes.as_deref()))?;
                self.reshape_to(inputs, x, shape)
            }
            "Unsqueeze" => {
                let x = self.opnd(inputs, 0)?;
                let axes = self
                    .ints_in(inputs, attrs, 1, "axes", 13)?
                    .unwrap_or_default();
                let shape = self.msg(fold::unsqueeze_shape(x.shape(), &axes))?;
                self.reshape_to(inputs, x, shape)
            }
            "Transpose" => {
                let x = self.opnd(inputs, 0)?;
                let perm = self.msg(fold::perm_of(attrs, x.shape().len()))?;
                let elem = self.need(inputs, 0)?.elem();
                Ok(self.keep(self.ctx(b.transpose(&x, Some(&perm)))?, elem))
            }
            "Concat" => {
                let elem = self.need(inputs, 0)?.elem();
                let mut parts = Vec::new();
                for v in inputs.iter().flatten() {
                    // Empty pieces (shape subgraphs make them) add nothing.
                    if !v.shape().contains(&0) {
                        parts.push(self.operand(v)?);
                    }
                }
                let first = parts
                    .first()
                    .ok_or_else(|| self.err("all inputs are empty"))?;
                let axis = self.msg(norm_axis(attrs.int("axis", 0), first.shape().len()))?;
                let refs: Vec<&Operand> = parts.iter().collect();
                let y = if refs.len() == 1 {
                    parts[0].clone()
                } else {
                    self.ctx(b.concat(&refs, axis))?
                };
                Ok(self.keep(y, elem))
            }
            "Split" => self.split(n, attrs, inputs),
            "Slice" => self.slice(attrs, inputs),
            "Pad" => self.pad(attrs, inputs),
            "Resize" | "Upsample" => self.resize(op_type, attrs, inputs),
            "MaxPool" | "AveragePool" => self.pool(op_type, attrs, inputs),
            "GlobalAveragePool" | "GlobalMaxPool" => {
                let x = self.opnd(inputs, 0)?;
                let (x4, _) = self.as_4d(&x)?;
                let o = Pool2dOptions::new();
                let y = self.ctx(if op_type == "GlobalMaxPool" {
                    b.max_pool2d(&x4, o)
                } else {
                    b.average_pool2d(&x4, o)
                })?;
                let mut shape = x.shape().to_vec();
                shape[2..].iter_mut().for_each(|d| *d = 1);
                Ok(self.one(self.ctx(b.reshape(&y, &shape))?))
            }
            "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceL2"
            | "ReduceSumSquare" | "ReduceLogSumExp" => {
                let v = self.need(inputs, 0)?.clone();
                let x = self.operand(&v)?;
                let input_from = if op_type == "ReduceSum" { 13 } else { 18 };
                let axes = self.ints_in(inputs, attrs, 1, "axes", input_from)?;
                let keep = attrs.int("keepdims", 1) != 0;
                let rank = x.shape().len();
                let axes: Option<Vec<usize>> = match axes {
                    Some(a) if !a.is_empty() => Some(
                        a.iter()
                            .map(|&a| norm_axis(a, rank))
                            .collect::<std::result::Result<_, _>>()
                            .map_err(|e| self.err(e))?,
                    ),
                    // Empty axes with noop_with_empty_axes reduce nothing.
                    _ if attrs.int("noop_with_empty_axes", 0) != 0 => return Ok(vec![v]),
                    _ => None,
                };
                let a = axes.as_deref();
                // Reductions take float or int32: bool/uint8 run as int32.
                let x = if x.data_type() == DataType::Uint8 {
                    self.ctx(b.cast(&x, DataType::Int32))?
                } else {
                    x
                };
                let y = self.ctx(match op_type {
                    "ReduceMean" => b.reduce_mean(&x, a, keep),
                    "ReduceSum" => b.reduce_sum(&x, a, keep),
                    "ReduceMax" => b.reduce_max(&x, a, keep),
                    "ReduceProd" => b.reduce_product(&x, a, keep),
                    "ReduceL2" => b.reduce_l2(&x, a, keep),
                    "ReduceSumSquare" => b.reduce_sum_square(&x, a, keep),
                    "ReduceLogSumExp" => b.reduce_log_sum_exp(&x, a, keep),
                    _ => b.reduce_min(&x, a, keep),
                })?;
                let y = if v.elem().data_type() == y.data_type() {
                    y
                } else {
                    self.ctx(b.cast(&y, v.elem().data_type()))?
                };
                Ok(self.keep(y, v.elem()))
            }
            "Softmax" | "LogSoftmax" => {
                let x = self.opnd(inputs, 0)?;
                let rank = x.shape().len();
                let log = op_type == "LogSoftmax";
                if self.opset >= 13 {
                    let axis = self.msg(norm_axis(attrs.int("axis", -1), rank))?;
                    let y = if log {
                        b.log_softmax(&x, axis)
                    } else {
                        b.softmax(&x, axis)
                    };
                    return Ok(self.one(self.ctx(y)?));
                }
                // Before opset 13 the input is coerced to 2-D at `axis` and
                // normalised over everything from it on.
                let axis = self.msg(norm_axis(attrs.int("axis", 1), rank.max(1)))?;
                let shape = x.shape().to_vec();
                let flat = [
                    shape[..axis].iter().product(),
                    shape[axis..].iter().product(),
                ];
                let x2 = self.ctx(b.reshape(&x, &flat))?;
                let y = self.ctx(if log {
                    b.log_softmax(&x2, 1)
                } else {
                    b.softmax(&x2, 1)
                })?;
                Ok(self.one(self.ctx(b.reshape(&y, &shape))?))
            }
            "ArgMax" | "ArgMin" => {
                let x = self.opnd(inputs, 0)?;
                let axis = self.msg(norm_axis(attrs.int("axis", 0), x.shape().len()))?;
                let keep = attrs.int("keepdims", 1) != 0;
                let last = attrs.int("select_last_index", 0) != 0;
                let y = if op_type == "ArgMax" {
                    b.arg_max(&x, axis, keep, last)
                } else {
                    b.arg_min(&x, axis, keep, last)
                };
                Ok(self.keep(self.ctx(y)?, Elem::I64))
            }
            "DepthToSpace" | "SpaceToDepth" => {
                let x = self.opnd(inputs, 0)?;
                let bs = usize::try_from(attrs.int("blocksize", 0))
                    .ok()
                    .filter(|&b| b > 0)
                    .ok_or_else(|| self.err("blocksize must be positive"))?;
                let &[n, c, h, w] = x.shape() else {
                    return Err(self.err(format!("input {:?} must be 4-D", x.shape())));
                };
                let (split, perm, out): (Vec<usize>, [usize; 6], [usize; 4]) =
                    if op_type == "SpaceToDepth" {
                        if h % bs != 0 || w % bs != 0 {
                            return Err(self.err("height and width must divide by blocksize"));
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
                            return Err(self.err("channels must divide by blocksize squared"));
                        };
                        let oc = c / square;
                        let out = [n, oc, h * bs, w * bs];
                        if attrs.string("mode", "DCR") == "CRD" {
                            (vec![n, oc, bs, bs, h, w], [0, 1, 4, 2, 5, 3], out)
                        } else {
                            (vec![n, bs, bs, oc, h, w], [0, 3, 4, 1, 5, 2], out)
                        }
                    };
                let y = self.ctx(b.reshape(&x, &split))?;
                let y = self.ctx(b.transpose(&y, Some(&perm)))?;
                Ok(self.one(self.ctx(b.reshape(&y, &out))?))
            }
            "Gather" => {
                let elem = self.need(inputs, 0)?.elem();
                let x = self.opnd(inputs, 0)?;
                let i = self.opnd(inputs, 1)?;
                let axis = self.msg(norm_axis(attrs.int("axis", 0), x.shape().len()))?;
                Ok(self.keep(self.ctx(b.gather(&x, &i, axis))?, elem))
            }
            "Expand" => {
                let elem = self.need(inputs, 0)?.elem();
                let x = self.opnd(inputs, 0)?;
                let spec = self
                    .need_const(inputs, 1, "shape")?
                    .ok_or_else(|| self.err("input 1 (shape) is missing"))?;
                let target = self.msg(super::tensor::checked_shape(&spec.as_i64()))?;
                let out = broadcast(x.shape(), &target).ok_or_else(|| {
                    self.err(format!("{:?} does not broadcast to {target:?}", x.shape()))
                })?;
                if out == x.shape() {
                    return Ok(vec![self.need(inputs, 0)?.clone()]);
                }
                Ok(self.keep(self.ctx(b.expand(&x, &out))?, elem))
            }
            "Tile" => {
                let elem = self.need(inputs, 0)?.elem();
                let x = self.opnd(inputs, 0)?;
                let reps = self
                    .need_const(inputs, 1, "repeats")?
                    .ok_or_else(|| self.err("input 1 (repeats) is missing"))?
                    .as_i64();
                let reps: Vec<usize> = reps
                    .iter()
                    .map(|&r| usize::try_from(r).ok().filter(|&r| r > 0))
                    .collect::<Option<_>>()
                    .ok_or_else(|| self.err(format!("repeats {reps:?} must be positive")))?;
                Ok(self.keep(self.ctx(b.tile(&x, &reps))?, elem))
            }
            "Shape" | "Constant" | "ConstantOfShape" | "Range" => Err(self.err(
                "its inputs must be known at import (constants or shapes), \
                 not computed from the model's input values",
            )),
            _ => Err(self.err("operator not supported")),
        }
    }

    /// GatherND (batch_dims 0) with constant indices: the index tuples become
    /// flat offsets into the leading axes at import, and one gather reads them.
    fn gather_nd(&mut self, attrs: &Attrs<'_>, inputs: &[Option<Value>]) -> Result<Vec<Value>> {
        if attrs.int("batch_dims", 0) != 0 {
            return Err(self.err("batch_dims other than 0 is not supported"));
        }
        let elem = self.need(inputs, 0)?.elem();
        let x = self.opnd(inputs, 0)?;
        let idx = self.need_const(inputs, 1, "indices")?.ok_or_else(|| {
            self.err("input 1 (indices) must be known at import (a constant or from shapes)")
        })?;
        let ishape = idx.shape.clone();
        let k = *ishape
            .last()
            .ok_or_else(|| self.err("indices must have at least one dimension"))?;
        let shape = x.shape().to_vec();
        if k == 0 || k > shape.len() {
            return Err(self.err(format!(
                "index tuples of {k} do not fit data of rank {}",
                shape.len()
            )));
        }
        let lead: usize = shape[..k].iter().product();
        let values = idx.as_i64();
        let mut flat = Vec::with_capacity(values.len() / k);
        for tuple in values.chunks(k) {
            let mut offset = 0i64;
            for (a, &i) in tuple.iter().enumerate() {
                let d = shape[a] as i64;
                let i = if i < 0 { i + d } else { i };
                if !(0..d).contains(&i) {
                    return Err(self.err(format!("index {tuple:?} is out of range for {shape:?}")));
                }
                offset = offset * d + i;
            }
            flat.push(offset as i32);
        }
        let mut rest = vec![lead];
        rest.extend_from_slice(&shape[k..]);
        let b = self.b;
        let data = self.ctx(b.reshape(&x, &rest))?;
        let outer = &ishape[..ishape.len() - 1];
        let indices = self.ctx(b.constant(
            OperandDescriptor::new(DataType::Int32, outer.to_vec()),
            bytemuck::cast_slice(&flat),
        ))?;
        Ok(self.keep(self.ctx(b.gather(&data, &indices, 0))?, elem))
    }

    /// Whether a Dropout runs in training mode (its `training_mode` input
    /// from opset 12, `is_test` = 0 before opset 7 has no meaning here).
    fn training(&self, inputs: &[Option<Value>], _attrs: &Attrs<'_>) -> Result<bool> {
        Ok(self
            .need_const(inputs, 2, "training_mode")?
            .is_some_and(|c| c.as_i64().first().is_some_and(|&t| t != 0)))
    }

    /// Reshape, keeping the ONNX type; no node when the shape is unchanged.
    fn reshape_to(
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

    /// A rank-3 (N, C, L) tensor as (N, C, 1, L); 4-D as is. Returns the
    /// 4-D operand and the original shape.
    fn as_4d(&mut self, x: &Operand) -> Result<(Operand, Vec<usize>)> {
        let shape = x.shape().to_vec();
        match shape.len() {
            4 => Ok((x.clone(), shape)),
            3 => Ok((
                self.ctx(self.b.reshape(x, &[shape[0], shape[1], 1, shape[2]]))?,
                shape,
            )),
            r => Err(self.err(format!(
                "a {r}-D input is not supported (1-D and 2-D spatial inputs are)"
            ))),
        }
    }

    /// The inverse of [`Self::as_4d`] (and of a 3-D pool's merge of its last
    /// two axes): a 4-D result back to the rank of the `shape` it came from.
    fn back_from_4d(&mut self, y: Operand, shape: &[usize]) -> Result<Operand> {
        let s = y.shape().to_vec();
        match shape.len() {
            3 => self.ctx(self.b.reshape(&y, &[s[0], s[1], s[3]])),
            5 => self.ctx(self.b.reshape(&y, &[s[0], s[1], s[2], shape[3], shape[4]])),
            _ => Ok(y),
        }
    }

    fn cast(&mut self, inputs: &[Option<Value>], attrs: &Attrs<'_>) -> Result<Vec<Value>> {
        let v = self.need(inputs, 0)?.clone();
        let to = self.msg(Elem::from_onnx(attrs.int("to", 0) as i32))?;
        let x = self.operand(&v)?;
        let b = self.b;
        if to == Elem::Bool && v.elem() != Elem::Bool {
            // bool(x) is x != 0, not a truncation.
            let zero = self.scalar_like(&x, 0.0)?;
            let eq = self.ctx(b.equal(&x, &zero))?;
            return Ok(self.keep(self.ctx(b.logical_not(&eq))?, Elem::Bool));
        }
        if to.data_type() == x.data_type() {
            return Ok(self.keep(x, to));
        }
        Ok(self.keep(self.ctx(b.cast(&x, to.data_type()))?, to))
    }

    fn clip(&mut self, inputs: &[Option<Value>], attrs: &Attrs<'_>) -> Result<Vec<Value>> {
        let v = self.need(inputs, 0)?.clone();
        let x = self.operand(&v)?;
        let b = self.b;
        let bound =
            |w: &mut Self, i: usize, attr: &str, none: f32| -> Result<Result<f32, Operand>> {
                if w.opset < 11 {
                    return Ok(Ok(attrs.float(attr, none)));
                }
                match inputs.get(i).and_then(Option::as_ref) {
                    None => Ok(Ok(none)),
                    Some(Value::Const(c)) if c.len() == 1 => Ok(Ok(c.as_f32()[0])),
                    Some(o) => Ok(Err(w.operand(&o.clone())?)),
                }
            };
        let lo = bound(self, 1, "min", NO_MIN)?;
        let hi = bound(self, 2, "max", NO_MAX)?;
        let y = match (lo, hi) {
            (Ok(lo), Ok(hi)) if v.elem().is_float() => {
                // numpy's clip: with min > max every value is max.
                let lo = if lo > hi { hi } else { lo };
                self.ctx(b.clamp(&x, lo, hi))?
            }
            (lo, hi) => {
                let mut y = x;
                for (bnd, is_max) in [(lo, true), (hi, false)] {
                    let o = match bnd {
                        Ok(f) if f == NO_MIN || f == NO_MAX => continue,
                        Ok(f) => self.scalar_like(&y, f)?,
                        Err(o) => o,
                    };
                    y = self.ctx(if is_max { b.max(&y, &o) } else { b.min(&y, &o) })?;
                }
                y
            }
        };
        Ok(self.keep(y, v.elem()))
    }

    fn matmul(&mut self, inputs: &[Option<Value>]) -> Result<Vec<Value>> {
        let (mut a, mut c) = (self.opnd(inputs, 0)?, self.opnd(inputs, 1)?);
        let b = self.b;
        // numpy's matmul: a 1-D operand is a row (a) or column (b) vector,
        // and that axis is dropped from the result.
        let (a1, c1) = (a.shape().len() == 1, c.shape().len() == 1);
        if a1 {
            a = self.ctx(b.reshape(&a, &[1, a.shape()[0]]))?;
        }
        if c1 {
            c = self.ctx(b.reshape(&c, &[c.shape()[0], 1]))?;
        }
        let mut y = self.ctx(b.matmul(&a, &c))?;
        if a1 || c1 {
            let mut shape = y.shape().to_vec();
            let r = shape.len();
            if c1 {
                shape.remove(r - 1);
            }
            if a1 {
                shape.remove(r - 2);
            }
            y = self.ctx(b.reshape(&y, &shape))?;
        }
        Ok(self.one(y))
    }

    /// Spatial attributes of a conv or pool with `spatial` (1 or 2) axes,
    /// given as 2-D ones (a 1-D op is 2-D with height 1).
    fn spatial(
        &self,
        attrs: &Attrs<'_>,
        name: &str,
        spatial: usize,
        default: usize,
    ) -> Result<[usize; 2]> {
        let v = attrs
            .ints(name)
            .unwrap_or_else(|| vec![default as i64; spatial]);
        let v: Vec<usize> = v
            .iter()
            .map(|&x| usize::try_from(x).ok().filter(|&x| x <= MAX_SPATIAL))
            .collect::<Option<_>>()
            .filter(|v: &Vec<usize>| v.len() == spatial)
            .ok_or_else(|| {
                self.err(format!(
                    "{name} {v:?} must be {spatial} values from 0 to {MAX_SPATIAL}"
                ))
            })?;
        Ok(if spatial == 1 {
            [default, v[0]]
        } else {
            [v[0], v[1]]
        })
    }

    /// Padding as the builder takes it: [top, bottom, left, right], from
    /// `pads` or `auto_pad` (SAME_UPPER puts the odd pixel at the end).
    fn conv_padding(
        &self,
        attrs: &Attrs<'_>,
        spatial: usize,
        input: [usize; 2],
        kernel: [usize; 2],
        strides: [usize; 2],
        dilations: [usize; 2],
    ) -> Result<[usize; 4]> {
        let auto = attrs.string("auto_pad", "NOTSET");
        match auto.as_str() {
            "NOTSET" => {
                let p = attrs.ints("pads").unwrap_or_else(|| vec![0; 2 * spatial]);
                let p: Vec<usize> = p
                    .iter()
                    .map(|&x| usize::try_from(x).ok().filter(|&x| x <= MAX_SPATIAL))
                    .collect::<Option<_>>()
                    .filter(|v: &Vec<usize>| v.len() == 2 * spatial)
                    .ok_or_else(|| {
                        self.err(format!(
                            "pads {p:?} must be {} values from 0 to {MAX_SPATIAL}",
                            2 * spatial
                        ))
                    })?;
                Ok(if spatial == 1 {
                    [0, 0, p[0], p[1]]
                } else {
                    [p[0], p[2], p[1], p[3]]
                })
            }
            "VALID" => Ok([0; 4]),
            "SAME_UPPER" | "SAME_LOWER" => {
                let mut out = [0; 4];
                for a in 0..2 {
                    let eff = (kernel[a].max(1) - 1) * dilations[a] + 1;
                    let o = input[a].div_ceil(strides[a].max(1));
                    let total = ((o.max(1) - 1) * strides[a] + eff).saturating_sub(input[a]);
                    let (small, big) = (total / 2, total - total / 2);
                    let (p0, p1) = if auto == "SAME_UPPER" {
                        (small, big)
                    } else {
                        (big, small)
                    };
                    out[2 * a] = p0;
                    out[2 * a + 1] = p1;
                }
                Ok(out)
            }
            other => Err(self.err(format!("auto_pad '{other}' is not valid"))),
        }
    }

    fn conv(
        &mut self,
        n: &'s proto::NodeProto,
        attrs: &Attrs<'_>,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>> {
        let x = self.opnd(inputs, 0)?;
        let (x4, shape) = self.as_4d(&x)?;
        let spatial = shape.len() - 2;
        let wv = self.need(inputs, 1)?.clone();
        let mut bias = inputs.get(2).cloned().flatten();
        let mut wv = wv;
        // BatchNormalization right after a constant-weight Conv (its only
        // reader) folds into the weights: one kernel, no extra pass.
        if let Some((bn, scale, shift)) = self.bn_after(n, &wv, &bias)? {
            let w = wv
                .konst()
                .cloned()
                .unwrap_or_else(|| Arc::new(Const::floats(Elem::F32, vec![], vec![])));
            let per = w.len() / scale.len().max(1);
            let weights: Vec<f32> = w
                .as_f32()
                .iter()
                .enumerate()
                .map(|(i, &v)| v * scale[i / per.max(1)])
                .collect();
            let old_bias = bias
                .as_ref()
                .and_then(Value::konst)
                .map(|c| c.as_f32())
                .unwrap_or_else(|| vec![0.0; scale.len()]);
            let new_bias: Vec<f32> = (0..scale.len())
                .map(|c| old_bias[c] * scale[c] + shift[c])
                .collect();
            wv = Value::Const(Arc::new(Const::floats(w.elem, w.shape.clone(), weights)));
            bias = Some(Value::Const(Arc::new(Const::floats(
                w.elem,
                vec![scale.len()],
                new_bias,
            ))));
            self.folded.insert(bn);
        }
        let w = self.operand(&wv)?;
        let w4 = if spatial == 1 {
            let s = w.shape().to_vec();
            if s.len() != 3 {
                return Err(self.err(format!("weights {s:?} must be 3-D for a 1-D conv")));
            }
            self.ctx(self.b.reshape(&w, &[s[0], s[1], 1, s[2]]))?
        } else {
            w
        };
        let bias = match bias {
            Some(v) => Some(self.operand(&v)?),
            None => None,
        };
        let ws = w4.shape().to_vec();
        let kernel = [
            ws.get(2).copied().unwrap_or(1),
            ws.get(3).copied().unwrap_or(1),
        ];
        let strides = self.spatial(attrs, "strides", spatial, 1)?;
        let dilations = self.spatial(attrs, "dilations", spatial, 1)?;
        let hw = [x4.shape()[2], x4.shape()[3]];
        let padding = self.conv_padding(attrs, spatial, hw, kernel, strides, dilations)?;
        let groups = usize::try_from(attrs.int("group", 1))
            .ok()
            .filter(|&g| g > 0)
            .ok_or_else(|| self.err("group must be positive"))?;
        let options = Conv2dOptions {
            padding,
            strides,
            dilations,
            groups,
            ..Conv2dOptions::new()
        };
        let y = self.ctx(self.b.conv2d(&x4, &w4, bias.as_ref(), options))?;
        let y = self.back_from_4d(y, &shape)?;
        Ok(self.one(y))
    }

    /// When the Conv's only reader is a BatchNormalization with constant
    /// parameters and the Conv's weights (and bias) are constant: that node
    /// and the per-channel (scale, shift) it applies.
    fn bn_after(
        &self,
        n: &proto::NodeProto,
        w: &Value,
        bias: &Option<Value>,
    ) -> Result<Option<FoldedBn>> {
        let Some(out) = n.output.first() else {
            return Ok(None);
        };
        if w.konst().is_none() || bias.as_ref().is_some_and(|b| b.konst().is_none()) {
            return Ok(None);
        }
        let readers = self
            .readers
            .get(out.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let &[r] = readers else {
            return Ok(None);
        };
        let Some(bn) = self.nodes().get(r) else {
            return Ok(None);
        };
        if bn.op_type() != "BatchNormalization"
            || bn.input.first() != Some(out)
            || bn
                .output
                .iter()
                .skip(1)
                .any(|o| !o.is_empty() && self.readers.contains_key(o.as_str()))
        {
            return Ok(None);
        }
        let params: Option<Vec<Vec<f32>>> = bn.input[1..]
            .iter()
            .map(|name| match self.values.get(name.as_str()) {
                Some(Value::Const(c)) => Some(c.as_f32()),
                _ => None,
            })
            .collect();
        let Some(p) = params.filter(|p| p.len() == 4) else {
            return Ok(None);
        };
        if w.konst().map(|c| c.shape.first().copied()) != Some(Some(p[0].len())) {
            return Ok(None);
        }
        let eps = Attrs(&bn.attribute).float("epsilon", 1e-5);
        Ok(bn_affine(&p[0], &p[1], &p[2], &p[3], eps).map(|(s, t)| (r, s, t)))
    }

    fn batch_norm(&mut self, attrs: &Attrs<'_>, inputs: &[Option<Value>]) -> Result<Vec<Value>> {
        if attrs.int("training_mode", 0) != 0 {
            return Err(self.err("training_mode is not supported"));
        }
        let x = self.opnd(inputs, 0)?;
        let eps = attrs.float("epsilon", 1e-5);
        let b = self.b;
        let consts: Option<Vec<Vec<f32>>> = (1..5)
            .map(|i| {
                inputs
                    .get(i)
                    .and_then(Option::as_ref)
                    .and_then(Value::konst)
                    .map(|c| c.as_f32())
            })
            .collect();
        let rank = x.shape().len();
        if let Some((s, t)) = consts.and_then(|p| bn_affine(&p[0], &p[1], &p[2], &p[3], eps)) {
            // y = x * s + t with per-channel constants (axis 1).
            let mut shape = vec![s.len()];
            shape.extend(std::iter::repeat_n(1, rank.saturating_sub(2)));
            let so = self.const_like(&x, &shape, s)?;
            let to = self.const_like(&x, &shape, t)?;
            let y = self.ctx(b.mul(&x, &so))?;
            return Ok(self.one(self.ctx(b.add(&y, &to))?));
        }
        let scale = self.opnd(inputs, 1)?;
        let shift = self.opnd(inputs, 2)?;
        let mean = self.opnd(inputs, 3)?;
        let var = self.opnd(inputs, 4)?;
        let y = b.batch_normalization(&x, &mean, &var, Some(&scale), Some(&shift), 1, eps);
        Ok(self.one(self.ctx(y)?))
    }

    /// A float constant of `x`'s float type.
    fn const_like(&mut self, x: &Operand, shape: &[usize], values: Vec<f32>) -> Result<Operand> {
        let elem = if x.data_type() == DataType::Float16 {
            Elem::F16
        } else {
            Elem::F32
        };
        self.operand(&Value::Const(Arc::new(Const::floats(
            elem,
            shape.to_vec(),
            values,
        ))))
    }

    fn conv_transpose(
        &mut self,
        attrs: &Attrs<'_>,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>> {
        let x = self.opnd(inputs, 0)?;
        let (x4, shape) = self.as_4d(&x)?;
        let spatial = shape.len() - 2;
        let w = self.opnd(inputs, 1)?;
        let w4 = if spatial == 1 {
            let s = w.shape().to_vec();
            if s.len() != 3 {
                return Err(self.err(format!("weights {s:?} must be 3-D for a 1-D conv")));
            }
            self.ctx(self.b.reshape(&w, &[s[0], s[1], 1, s[2]]))?
        } else {
            w
        };
        let bias = self.opt_opnd(inputs, 2)?;
        let ws = w4.shape().to_vec();
        let kernel = [
            ws.get(2).copied().unwrap_or(1),
            ws.get(3).copied().unwrap_or(1),
        ];
        let strides = self.spatial(attrs, "strides", spatial, 1)?;
        let dilations = self.spatial(attrs, "dilations", spatial, 1)?;
        let output_padding = self.spatial(attrs, "output_padding", spatial, 0)?;
        let groups = usize::try_from(attrs.int("group", 1))
            .ok()
            .filter(|&g| g > 0)
            .ok_or_else(|| self.err("group must be positive"))?;
        let hw = [x4.shape()[2], x4.shape()[3]];
        let auto = attrs.string("auto_pad", "NOTSET");
        let out_shape = attrs.ints("output_shape").map(|v| {
            let v: Vec<usize> = v.iter().map(|&d| d.max(0) as usize).collect();
            let tail = &v[v.len().saturating_sub(spatial)..];
            if spatial == 1 {
                [1, tail.first().copied().unwrap_or(0)]
            } else {
                [
                    tail.first().copied().unwrap_or(0),
                    tail.get(1).copied().unwrap_or(0),
                ]
            }
        });
        let same = auto == "SAME_UPPER" || auto == "SAME_LOWER";
        let (padding, output_sizes) = if out_shape.is_some() || same {
            // The padding that gives the wanted size (the input times the
            // stride for SAME); what padding cannot take off is added at the end.
            let target = out_shape.unwrap_or([hw[0] * strides[0], hw[1] * strides[1]]);
            let mut p = [0; 4];
            for a in 0..2 {
                let full = strides[a] * (hw[a] - 1)
                    + output_padding[a]
                    + (kernel[a] - 1) * dilations[a]
                    + 1;
                let total = full.saturating_sub(target[a]);
                let (small, big) = (total / 2, total - total / 2);
                let (p0, p1) = if auto == "SAME_UPPER" {
                    (small, big)
                } else {
                    (big, small)
                };
                p[2 * a] = p0;
                p[2 * a + 1] = p1;
            }
            (p, Some(target))
        } else {
            (
                self.conv_padding(attrs, spatial, hw, kernel, strides, dilations)?,
                None,
            )
        };
        let options = ConvTranspose2dOptions {
            padding,
            strides,
            dilations,
            output_padding,
            output_sizes,
            groups,
            ..ConvTranspose2dOptions::new()
        };
        let y = self.ctx(self.b.conv_transpose2d(&x4, &w4, bias.as_ref(), options))?;
        let y = self.back_from_4d(y, &shape)?;
        Ok(self.one(y))
    }

    fn lrn(&mut self, attrs: &Attrs<'_>, inputs: &[Option<Value>]) -> Result<Vec<Value>> {
        // y = x / (bias + alpha / size * sum of x^2 over `size` channels
        // around c)^beta; the channel window sum is a conv2d with a ones
        // filter over (N, 1, C, H*W).
        let x = self.opnd(inputs, 0)?;
        let b = self.b;
        let size = usize::try_from(attrs.int("size", 0))
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| self.err("size must be positive"))?;
        let (alpha, beta, bias) = (
            attrs.float("alpha", 1e-4),
            attrs.float("beta", 0.75),
            attrs.float("bias", 1.0),
        );
        let shape = x.shape().to_vec();
        if shape.len() < 3 {
            return Err(self.err("input must have channels and spatial axes"));
        }
        let (n, c) = (shape[0], shape[1]);
        let rest: usize = shape[2..].iter().product();
        let sq = self.ctx(b.mul(&x, &x))?;
        let sq = self.ctx(b.reshape(&sq, &[n, 1, c, rest]))?;
        // A window reaching past the channels sums the same values as one
        // reaching c - 1 each way: clamping keeps the result and keeps a
        // lying `size` from sizing the filter.
        let reach = c.saturating_sub(1);
        let (before, after) = (((size - 1) / 2).min(reach), (size / 2).min(reach));
        let window = before + after + 1;
        let ones = self.const_like(&x, &[1, 1, window, 1], vec![1.0; window])?;
        let options = Conv2dOptions {
            padding: [before, after, 0, 0],
            ..Conv2dOptions::new()
        };
        let sum = self.ctx(b.conv2d(&sq, &ones, None, options))?;
        let sum = self.ctx(b.reshape(&sum, &shape))?;
        let scale = self.scalar_like(&sum, alpha / size as f32)?;
        let k = self.scalar_like(&sum, bias)?;
        let d = self.ctx(b.mul(&sum, &scale))?;
        let d = self.ctx(b.add(&d, &k))?;
        let e = self.scalar_like(&d, beta)?;
        let d = self.ctx(b.pow(&d, &e))?;
        Ok(self.one(self.ctx(b.div(&x, &d))?))
    }

    fn split(
        &mut self,
        n: &proto::NodeProto,
        attrs: &Attrs<'_>,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>> {
        let elem = self.need(inputs, 0)?.elem();
        let x = self.opnd(inputs, 0)?;
        let axis = self.msg(norm_axis(attrs.int("axis", 0), x.shape().len()))?;
        let dim = x.shape()[axis];
        let given = self.ints_in(inputs, attrs, 1, "split", 13)?;
        let sizes: Vec<usize> = match given {
            Some(s) if !s.is_empty() => s
                .iter()
                .map(|&v| usize::try_from(v).ok())
                .collect::<Option<_>>()
                .ok_or_else(|| self.err(format!("split {s:?} must be non-negative")))?,
            _ => {
                let count = n.output.len().max(1);
                // num_outputs names the outputs the node has; a different
                // count (the fuzzers gave 2^62) has nothing to split into.
                if attrs.has("num_outputs") && attrs.int("num_outputs", 1) != count as i64 {
                    return Err(self.err(format!(
                        "num_outputs {} differs from the node's {count} outputs",
                        attrs.int("num_outputs", 1)
                    )));
                }
                // Opset 18's num_outputs allows an uneven split: ceil-sized
                // parts, the last one smaller.
                let part = dim.div_ceil(count);
                (0..count)
                    .map(|i| part.min(dim.saturating_sub(i * part)))
                    .collect()
            }
        };
        if sizes.len() == 1 {
            return Ok(self.keep(x, elem));
        }
        // Empty parts (sizes of 0) become empty host values: only shape
        // arithmetic and Concat can use them.
        let nonzero: Vec<usize> = sizes.iter().copied().filter(|&s| s > 0).collect();
        let mut parts = if nonzero.len() == 1 {
            vec![x.clone()]
        } else {
            self.ctx(self.b.split_sizes(&x, &nonzero, axis))?
        }
        .into_iter();
        Ok(sizes
            .iter()
            .map(|&s| {
                if s == 0 {
                    let mut shape = x.shape().to_vec();
                    shape[axis] = 0;
                    let c = if elem.is_float() {
                        Const::floats(elem, shape, vec![])
                    } else {
                        Const::ints(elem, shape, vec![])
                    };
                    Value::Const(Arc::new(c))
                } else {
                    parts.next().map_or_else(
                        || Value::Const(Arc::new(Const::ints(elem, vec![0], vec![]))),
                        |op| Value::Op { op, elem },
                    )
                }
            })
            .collect())
    }

    fn slice(&mut self, attrs: &Attrs<'_>, inputs: &[Option<Value>]) -> Result<Vec<Value>> {
        let elem = self.need(inputs, 0)?.elem();
        let x = self.opnd(inputs, 0)?;
        let args = if self.opset >= 10 {
            let c = |w: &Self, i: usize, what: &str| -> Result<Option<Vec<i64>>> {
                Ok(w.need_const(inputs, i, what)?.map(|c| c.as_i64()))
            };
            SliceArgs {
                starts: c(self, 1, "starts")?.unwrap_or_default(),
                ends: c(self, 2, "ends")?.unwrap_or_default(),
                axes: c(self, 3, "axes")?,
                steps: c(self, 4, "steps")?,
            }
        } else {
            SliceArgs {
                starts: attrs.ints("starts").unwrap_or_default(),
                ends: attrs.ints("ends").unwrap_or_default(),
                axes: attrs.ints("axes"),
                steps: None,
            }
        };
        let ranges = self.msg(fold::slice_ranges(x.shape(), &args))?;
        if ranges.iter().any(|r| r.count == 0) {
            return Err(self.err("the slice is empty, which wgnn cannot hold"));
        }
        let b = self.b;
        // Negative steps: take the same elements forwards, then reverse
        // those axes with a gather.
        let starts: Vec<usize> = ranges
            .iter()
            .map(|r| if r.step > 0 { r.start } else { r.start + (r.count as i64 - 1) * r.step } as usize)
            .collect();
        let sizes: Vec<usize> = ranges.iter().map(|r| r.count).collect();
        let strides: Vec<usize> = ranges
            .iter()
            .map(|r| r.step.unsigned_abs() as usize)
            .collect();
        let mut y = if starts.iter().all(|&s| s == 0)
            && sizes == x.shape()
            && strides.iter().all(|&s| s == 1)
        {
            x
        } else {
            self.ctx(b.slice(&x, &starts, &sizes, Some(&strides)))?
        };
        for (axis, r) in ranges.iter().enumerate() {
            if r.step < 0 && r.count > 1 {
                let rev: Vec<i64> = (0..r.count as i64).rev().collect();
                let idx = self.operand(&Value::Const(Arc::new(Const::ints(
                    Elem::I64,
                    vec![r.count],
                    rev,
                ))))?;
                y = self.ctx(b.gather(&y, &idx, axis))?;
            }
        }
        Ok(self.keep(y, elem))
    }

    fn pad(&mut self, attrs: &Attrs<'_>, inputs: &[Option<Value>]) -> Result<Vec<Value>> {
        let elem = self.need(inputs, 0)?.elem();
        let x = self.opnd(inputs, 0)?;
        let rank = x.shape().len();
        let (pads, value) = if self.opset >= 11 {
            let pads = self
                .need_const(inputs, 1, "pads")?
                .ok_or_else(|| self.err("input 1 (pads) is missing"))?
                .as_i64();
            let value = self
                .need_const(inputs, 2, "constant_value")?
                .map(|c| c.as_f32().first().copied().unwrap_or(0.0))
                .unwrap_or(0.0);
            let axes = self.need_const(inputs, 3, "axes")?.map(|c| c.as_i64());
            let pads = match axes {
                None => pads,
                Some(axes) => {
                    let mut full = vec![0; 2 * rank];
                    if pads.len() != 2 * axes.len() {
                        return Err(self.err("pads and axes differ in length"));
                    }
                    for (k, &a) in axes.iter().enumerate() {
                        let a = self.msg(norm_axis(a, rank))?;
                        full[a] = pads[k];
                        full[rank + a] = pads[axes.len() + k];
                    }
                    full
                }
            };
            (pads, value)
        } else {
            (
                attrs.ints("pads").unwrap_or_default(),
                attrs.float("value", 0.0),
            )
        };
        if pads.len() != 2 * rank {
            return Err(self.err(format!(
                "pads {pads:?} need {} values for rank {rank}",
                2 * rank
            )));
        }
        // No real padding comes near this; it keeps the crop arithmetic
        // below (negation, sums with the dimensions) from overflowing.
        const MAX_PAD: u64 = 1 << 31;
        if let Some(p) = pads.iter().find(|p| p.unsigned_abs() > MAX_PAD) {
            return Err(self.err(format!("pad amount {p} is out of range (|pad| <= 2^31)")));
        }
        let mode = match attrs.string("mode", "constant").as_str() {
            "constant" => PaddingMode::Constant,
            "reflect" => PaddingMode::Reflection,
            "edge" => PaddingMode::Edge,
            m => {
                return Err(self.err(format!(
                    "mode '{m}' is not supported (constant, reflect and edge are)"
                )))
            }
        };
        let b = self.b;
        let mut y = x;
        // Negative amounts crop: a slice first.
        if pads.iter().any(|&p| p < 0) {
            let shape = y.shape().to_vec();
            let starts: Vec<usize> = (0..rank).map(|a| (-pads[a]).max(0) as usize).collect();
            let sizes: Vec<usize> = (0..rank)
                .map(|a| {
                    (shape[a] as i64 - (-pads[a]).max(0) - (-pads[rank + a]).max(0)).max(0) as usize
                })
                .collect();
            y = self.ctx(b.slice(&y, &starts, &sizes, None))?;
        }
        if pads.iter().any(|&p| p > 0) {
            let begin: Vec<usize> = pads[..rank].iter().map(|&p| p.max(0) as usize).collect();
            let end: Vec<usize> = pads[rank..].iter().map(|&p| p.max(0) as usize).collect();
            y = self.ctx(b.pad(&y, &begin, &end, mode, value))?;
        }
        Ok(self.keep(y, elem))
    }

    fn pool(
        &mut self,
        op_type: &str,
        attrs: &Attrs<'_>,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>> {
        let x = self.opnd(inputs, 0)?;
        let in_type = x.data_type();
        // Pools take floats; an integer max pool is exact in float32.
        let x = if in_type.is_float() {
            x
        } else {
            self.ctx(self.b.cast(&x, DataType::Float32))?
        };
        let (x4, shape, kernel, strides, dilations, padding) = if x.shape().len() == 5 {
            self.pool_3d_as_2d(&x, attrs)?
        } else {
            let (x4, shape) = self.as_4d(&x)?;
            let spatial = shape.len() - 2;
            let kernel = self.spatial(attrs, "kernel_shape", spatial, 1)?;
            let strides = self.spatial(attrs, "strides", spatial, 1)?;
            let dilations = self.spatial(attrs, "dilations", spatial, 1)?;
            let hw = [x4.shape()[2], x4.shape()[3]];
            let padding = self.conv_padding(attrs, spatial, hw, kernel, strides, dilations)?;
            (x4, shape, kernel, strides, dilations, padding)
        };
        let hw = [x4.shape()[2], x4.shape()[3]];
        let ceil = attrs.int("ceil_mode", 0) != 0;
        // Output sizes as ONNX (and PyTorch) define them: with ceil_mode a
        // last window that would start in the end padding is dropped.
        let mut out = [0; 2];
        for a in 0..2 {
            let eff = (kernel[a].max(1) - 1) * dilations[a] + 1;
            let padded = hw[a] + padding[2 * a] + padding[2 * a + 1];
            if padded < eff || strides[a] == 0 {
                return Err(self.err(format!(
                    "window {eff} is larger than the padded input {padded}"
                )));
            }
            let span = padded - eff;
            let mut o = if ceil {
                span.div_ceil(strides[a]) + 1
            } else {
                span / strides[a] + 1
            };
            if ceil && (o - 1) * strides[a] >= hw[a] + padding[2 * a] {
                o -= 1;
            }
            out[a] = o;
        }
        let options = Pool2dOptions {
            window_dimensions: Some(kernel),
            padding,
            strides,
            dilations,
            layout: InputLayout::Nchw,
            rounding_type: if ceil {
                RoundingType::Ceil
            } else {
                RoundingType::Floor
            },
            output_sizes: Some(out),
            count_include_pad: attrs.int("count_include_pad", 0) != 0,
        };
        let b = self.b;
        let y = self.ctx(if op_type == "MaxPool" {
            if attrs.int("storage_order", 0) != 0 {
                return Err(self.err("storage_order 1 is not supported"));
            }
            b.max_pool2d(&x4, options)
        } else {
            b.average_pool2d(&x4, options)
        })?;
        let y = self.back_from_4d(y, &shape)?;
        let elem = self.need(inputs, 0)?.elem();
        if in_type.is_float() {
            return Ok(self.keep(y, elem));
        }
        Ok(self.keep(self.ctx(b.cast(&y, in_type))?, elem))
    }

    /// A 3-D pool whose window, stride and dilation are 1 along the last two
    /// axes, with no padding there: a 2-D pool over [depth, height x width].
    /// PyTorch's legacy export of LocalResponseNorm pools [N, 1, C, H, W]
    /// this way, across channels.
    #[allow(clippy::type_complexity)]
    fn pool_3d_as_2d(
        &mut self,
        x: &Operand,
        attrs: &Attrs<'_>,
    ) -> Result<(
        Operand,
        Vec<usize>,
        [usize; 2],
        [usize; 2],
        [usize; 2],
        [usize; 4],
    )> {
        let shape = x.shape().to_vec();
        let list = |name: &str, n: usize, default: i64| -> Result<Vec<usize>> {
            let v = attrs.ints(name).unwrap_or_else(|| vec![default; n]);
            v.iter()
                .map(|&d| usize::try_from(d).ok())
                .collect::<Option<Vec<usize>>>()
                .filter(|v| v.len() == n)
                .ok_or_else(|| self.err(format!("{name} {v:?} must be {n} non-negative values")))
        };
        let kernel = list("kernel_shape", 3, 1)?;
        let strides = list("strides", 3, 1)?;
        let dilations = list("dilations", 3, 1)?;
        let pads = list("pads", 6, 0)?;
        let auto = attrs.string("auto_pad", "NOTSET");
        let trivial = |v: &[usize], one: usize| v[1] == one && v[2] == one;
        if !(trivial(&kernel, 1)
            && trivial(&strides, 1)
            && trivial(&dilations, 1)
            && pads[1] == 0
            && pads[2] == 0
            && pads[4] == 0
            && pads[5] == 0
            && matches!(auto.as_str(), "NOTSET" | "VALID"))
        {
            return Err(self.err(format!(
                "a 3-D pool is supported only with window, strides and dilations of 1 and no \
                 padding along its last two axes (kernel {kernel:?}, strides {strides:?}, pads \
                 {pads:?}, auto_pad {auto})"
            )));
        }
        let x4 = self.ctx(
            self.b
                .reshape(x, &[shape[0], shape[1], shape[2], shape[3] * shape[4]]),
        )?;
        let padding = if auto == "VALID" {
            [0; 4]
        } else {
            [pads[0], pads[3], 0, 0]
        };
        Ok((
            x4,
            shape,
            [kernel[0], 1],
            [strides[0], 1],
            [dilations[0], 1],
            padding,
        ))
    }

    fn resize(
        &mut self,
        op_type: &str,
        attrs: &Attrs<'_>,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>> {
        let x = self.opnd(inputs, 0)?;
        let shape = x.shape().to_vec();
        let rank = shape.len();
        let upsample = op_type == "Upsample";
        let opset = self.opset;
        // Scales or sizes for every axis.
        let (scales, sizes): (Option<Vec<f32>>, Option<Vec<usize>>) = if upsample && opset < 9 {
            (attrs.floats("scales"), None)
        } else if upsample || opset < 11 {
            (
                self.need_const(inputs, 1, "scales")?.map(|c| c.as_f32()),
                None,
            )
        } else {
            let scales = self
                .need_const(inputs, 2, "scales")?
                .map(|c| c.as_f32())
                .filter(|s| !s.is_empty());
            let sizes = self
                .need_const(inputs, 3, "sizes")?
                .map(|c| c.as_i64())
                .filter(|s| !s.is_empty());
            let axes: Vec<usize> = match attrs.ints("axes") {
                Some(a) => a
                    .iter()
                    .map(|&a| norm_axis(a, rank))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| self.err(e))?,
                None => (0..rank).collect(),
            };
            let spread_f = |v: Vec<f32>| {
                let mut full = vec![1.0; rank];
                for (k, &a) in axes.iter().enumerate() {
                    full[a] = v.get(k).copied().unwrap_or(1.0);
                }
                full
            };
            let spread_i = |v: Vec<i64>| -> Ints {
                let mut full = shape.clone();
                for (k, &a) in axes.iter().enumerate() {
                    full[a] = v
                        .get(k)
                        .and_then(|&d| usize::try_from(d).ok())
                        .ok_or_else(|| format!("sizes {v:?} do not fit the axes"))?;
                }
                Ok(full)
            };
            let sizes = match sizes {
                Some(s) => Some(self.msg(spread_i(s))?),
                None => None,
            };
            (scales.map(spread_f), sizes)
        };
        if scales.is_none() && sizes.is_none() {
            return Err(self.err("needs scales or sizes"));
        }
        if let Some(s) = &scales {
            if s.len() != rank {
                return Err(self.err(format!("scales {s:?} need {rank} values")));
            }
        }
        if attrs.string("keep_aspect_ratio_policy", "stretch") != "stretch" {
            return Err(self.err("keep_aspect_ratio_policy other than 'stretch' is not supported"));
        }
        if attrs.int("antialias", 0) != 0 {
            return Err(self.err("antialias is not supported"));
        }
        // Which axes change: at most two consecutive ones.
        let changed: Vec<usize> = (0..rank)
            .filter(|&a| match (&scales, &sizes) {
                (_, Some(s)) => s[a] != shape[a],
                (Some(s), None) => s[a] != 1.0,
                _ => false,
            })
            .collect();
        if changed.is_empty() {
            return Ok(vec![self.need(inputs, 0)?.clone()]);
        }
        let a0 = match changed.as_slice() {
            [a] if *a + 1 < rank => *a,
            // The last axis pairs with the one before it, where there is one.
            [a] if *a > 0 => *a - 1,
            [a, c] if *c == a + 1 => *a,
            _ => {
                return Err(self.err(format!(
                    "resizing axes {changed:?} is not supported (two neighbouring axes are)"
                )))
            }
        };
        let mode_attr = attrs.string("mode", "nearest");
        let mode = match mode_attr.as_str() {
            "nearest" => InterpolationMode::NearestNeighbor,
            "linear" | "bilinear" => InterpolationMode::Linear,
            m => {
                return Err(self.err(format!(
                    "mode '{m}' is not supported (nearest and linear are)"
                )))
            }
        };
        let nearest = mode == InterpolationMode::NearestNeighbor;
        let (transform, rounding) = if upsample || opset < 11 {
            // Upsample and Resize-10 map asymmetrically; their nearest
            // pixel is onnxruntime's "simple" mode: floor when enlarging,
            // ceil when shrinking.
            let shrink = scales
                .as_ref()
                .is_some_and(|s| s[a0] < 1.0 || s[a0 + 1] < 1.0);
            (
                CoordinateTransform::Asymmetric,
                if shrink {
                    NearestRounding::Ceil
                } else {
                    NearestRounding::Floor
                },
            )
        } else {
            let t = match attrs
                .string("coordinate_transformation_mode", "half_pixel")
                .as_str()
            {
                "half_pixel" => CoordinateTransform::HalfPixel,
                "pytorch_half_pixel" => CoordinateTransform::PytorchHalfPixel,
                "align_corners" => CoordinateTransform::AlignCorners,
                "asymmetric" => CoordinateTransform::Asymmetric,
                "tf_half_pixel_for_nn" => CoordinateTransform::TfHalfPixelForNn,
                m => {
                    return Err(self.err(format!(
                        "coordinate_transformation_mode '{m}' is not supported"
                    )))
                }
            };
            let r = match attrs.string("nearest_mode", "round_prefer_floor").as_str() {
                "round_prefer_floor" => NearestRounding::RoundPreferFloor,
                "round_prefer_ceil" => NearestRounding::RoundPreferCeil,
                "floor" => NearestRounding::Floor,
                "ceil" => NearestRounding::Ceil,
                m => return Err(self.err(format!("nearest_mode '{m}' is not supported"))),
            };
            (t, r)
        };
        let _ = nearest;
        let b = self.b;
        // resample2d takes 4-D input: view the tensor as (outer, 1?, a0, a0+1, inner...).
        let outer: usize = shape[..a0].iter().product();
        let inner: usize = shape[a0 + 2..].iter().product();
        let (x4, axes) = if rank == 4 {
            (x, [a0, a0 + 1])
        } else if inner == 1 {
            (
                self.ctx(b.reshape(&x, &[outer, 1, shape[a0], shape[a0 + 1]]))?,
                [2, 3],
            )
        } else {
            return Err(self.err(format!(
                "resizing axes {a0} and {} of {shape:?} is not supported",
                a0 + 1
            )));
        };
        let options = Resample2dOptions {
            mode,
            scales: scales.as_ref().map_or([1.0, 1.0], |s| [s[a0], s[a0 + 1]]),
            sizes: sizes.as_ref().map(|s| [s[a0], s[a0 + 1]]),
            axes,
            coordinate_transform: transform,
            nearest_rounding: rounding,
        };
        let y = self.ctx(b.resample2d(&x4, options))?;
        let y = if rank == 4 {
            y
        } else {
            let mut out = shape.clone();
            out[a0] = y.shape()[2];
            out[a0 + 1] = y.shape()[3];
            self.ctx(b.reshape(&y, &out))?
        };
        Ok(self.one(y))
    }
}

/// BatchNormalization as y = x * s + t per channel.
fn bn_affine(
    scale: &[f32],
    bias: &[f32],
    mean: &[f32],
    var: &[f32],
    eps: f32,
) -> Option<(Vec<f32>, Vec<f32>)> {
    let c = scale.len();
    if bias.len() != c || mean.len() != c || var.len() != c {
        return None;
    }
    let s: Vec<f32> = (0..c).map(|i| scale[i] / (var[i] + eps).sqrt()).collect();
    let t: Vec<f32> = (0..c).map(|i| bias[i] - mean[i] * s[i]).collect();
    Some((s, t))
}
