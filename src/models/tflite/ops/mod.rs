//! TFLite operators mapped onto wgnn (WebNN) operators, one operator at a time,
//! checking each result's shape against the one the file declares. This file
//! holds the walk over the subgraph and what every family shares (operands,
//! constants, options); the families live beside it.

mod conv;
mod elementwise;
mod pool;
mod quant_conv;
mod resize;
mod shape;

use std::collections::HashMap;

use super::densify::{densify, Sparsity};
use super::fb;
use super::quant::{self, Quant};
use super::{file_element_bytes, Subgraph, TfliteSource};
use crate::error::{Error, Result};
use crate::ml::{DataType, GraphBuilder, Operand, OperandDescriptor};
use crate::models::same_padding;

/// MediaPipe's transposed convolution with bias, a custom op.
const TRANSPOSE_CONV_BIAS: &str = "Convolution2DTransposeBias";

pub(super) struct Writer<'s, 'a> {
    src: &'s TfliteSource,
    model: fb::Model<'a>,
    graph: Subgraph<'a>,
    b: &'s GraphBuilder,
    values: HashMap<usize, Operand>,
    /// Float tensors computed at load time (DEQUANTIZE of a constant,
    /// DENSIFY), held as float32 values until an operator reads them.
    folded: HashMap<usize, Vec<f32>>,
    /// Where errors point: the operator being written.
    location: String,
    /// Items in the batch being written: the file declares 1 in dim 0 of
    /// the inputs and of what is computed from them; the graph has this.
    batch: usize,
}

/// The operator being written: its options and its tensors.
pub(super) struct Call<'o, 'a> {
    op: &'o fb::Operator<'a>,
    /// Raw input tensor indices (-1: an omitted optional input).
    inputs: Vec<i32>,
    outputs: Vec<usize>,
}

/// A constant tensor's values, decoded from the file.
enum Values {
    F32(Vec<f32>),
    I32(Vec<i32>),
    U8(Vec<u8>),
}

impl<'s, 'a> Writer<'s, 'a> {
    pub(super) fn new(
        src: &'s TfliteSource,
        model: &fb::Model<'a>,
        graph: Subgraph<'a>,
        b: &'s GraphBuilder,
        batch: usize,
    ) -> Result<Self> {
        Ok(Writer {
            src,
            model: *model,
            graph,
            b,
            values: HashMap::new(),
            folded: HashMap::new(),
            location: "subgraph 0".into(),
            batch,
        })
    }

    fn err(&self, message: impl std::fmt::Display) -> Error {
        self.src.err(&self.location, message)
    }

    /// Wraps an error from the graph builder with the file and operator.
    fn ctx<T>(&self, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.err(e))
    }

    fn tensor_index(&self, raw: i32) -> Result<usize> {
        usize::try_from(raw)
            .ok()
            .filter(|&i| i < self.graph.tensors.len())
            .ok_or_else(|| {
                self.err(format!(
                    "tensor index {raw} is out of range ({} tensors)",
                    self.graph.tensors.len()
                ))
            })
    }

    fn tensor(&self, index: usize) -> Result<(fb::Tensor<'a>, DataType, Vec<usize>)> {
        let t = self.graph.tensors.get(index);
        let (dt, shape) = self.src.tensor_type(&t, index)?;
        Ok((t, dt, shape))
    }

    fn tensor_name(&self, index: usize) -> String {
        self.graph
            .tensors
            .get(index)
            .name()
            .unwrap_or_default()
            .to_string()
    }

    /// The raw bytes of a tensor's buffer; `None` for a computed tensor.
    fn buffer(&self, index: usize) -> Result<Option<&'a [u8]>> {
        let t = self.graph.tensors.get(index);
        let buffers = self
            .model
            .buffers()
            .ok_or_else(|| self.err("the model has no buffers"))?;
        let b = t.buffer() as usize;
        if b >= buffers.len() {
            return Err(self.err(format!(
                "tensor {index} refers to buffer {b}, but there are {}",
                buffers.len()
            )));
        }
        Ok(buffers
            .get(b)
            .data()
            .filter(|d| !d.is_empty())
            .map(|d| d.bytes()))
    }

    /// A constant tensor's values (float16 widened, int64 narrowed with a
    /// range check), or `None` for a computed one.
    fn constant(&self, index: usize) -> Result<Option<(Vec<usize>, Values)>> {
        let (t, data_type, shape) = self.tensor(index)?;
        if let Some(v) = self.folded.get(&index) {
            return Ok(Some((shape, Values::F32(v.clone()))));
        }
        let Some(data) = self.buffer(index)? else {
            return Ok(None);
        };
        if t.sparsity().is_some() {
            return Err(self.err(format!(
                "tensor {index} '{}' is sparse; only DENSIFY may read it",
                self.tensor_name(index)
            )));
        }
        let file_type = t.type_();
        let quantization = self.quant(index)?;
        let count = shape.iter().product::<usize>();
        let want = count * file_element_bytes(file_type);
        if data.len() != want {
            return Err(self.err(format!(
                "tensor {index} '{}' {shape:?} needs {want} bytes of {}, its buffer has {}",
                self.tensor_name(index),
                file_type.variant_name().unwrap_or("?"),
                data.len()
            )));
        }
        if let Some(q) = quantization {
            // Integers (int8, uint8, int32 biases) as the real values they
            // stand for, once, at load.
            let raw: Vec<f32> = match file_type {
                fb::TensorType::INT8 => data.iter().map(|&b| f32::from(b as i8)).collect(),
                fb::TensorType::UINT8 => data.iter().map(|&b| f32::from(b)).collect(),
                _ => bytemuck::pod_collect_to_vec::<u8, i32>(data)
                    .iter()
                    .map(|&v| v as f32)
                    .collect(),
            };
            let values = self.msg(q.dequantize(&shape, &raw))?;
            self.finite(index, &values)?;
            return Ok(Some((shape, Values::F32(values))));
        }
        let values = match file_type {
            fb::TensorType::INT64 => {
                let wide: Vec<i64> = bytemuck::pod_collect_to_vec(data);
                let narrow = wide
                    .iter()
                    .map(|&v| i32::try_from(v))
                    .collect::<std::result::Result<Vec<i32>, _>>()
                    .map_err(|_| {
                        self.err(format!(
                            "tensor {index} '{}' holds an int64 value outside int32",
                            self.tensor_name(index)
                        ))
                    })?;
                Values::I32(narrow)
            }
            _ => match data_type {
                DataType::Float32 => Values::F32(bytemuck::pod_collect_to_vec(data)),
                DataType::Float16 => Values::F32(
                    bytemuck::pod_collect_to_vec::<u8, half::f16>(data)
                        .iter()
                        .map(|h| h.to_f32())
                        .collect(),
                ),
                DataType::Int32 => Values::I32(bytemuck::pod_collect_to_vec(data)),
                DataType::Uint8 => Values::U8(data.to_vec()),
            },
        };
        if let Values::F32(v) = &values {
            self.finite(index, v)?;
        }
        Ok(Some((shape, values)))
    }

    /// The quantization of tensor `index`, `None` for a float one.
    fn quant(&self, index: usize) -> Result<Option<Quant>> {
        quant::of(&self.graph.tensors.get(index))
            .map_err(|e| self.err(format!("tensor {index} '{}' {e}", self.tensor_name(index))))
    }

    fn msg<T>(&self, r: std::result::Result<T, String>) -> Result<T> {
        r.map_err(|e| self.err(e))
    }

    fn finite(&self, index: usize, values: &[f32]) -> Result<()> {
        match values.iter().position(|v| !v.is_finite()) {
            Some(i) => Err(self.err(format!(
                "tensor {index} '{}' holds a non-finite weight ({}) at element {i}",
                self.tensor_name(index),
                values[i]
            ))),
            None => Ok(()),
        }
    }

    fn const_f32(&self, index: usize) -> Result<Option<(Vec<usize>, Vec<f32>)>> {
        match self.constant(index)? {
            None => Ok(None),
            Some((shape, Values::F32(v))) => Ok(Some((shape, v))),
            Some(_) => Err(self.err(format!("tensor {index} is not float"))),
        }
    }

    /// A constant integer tensor (int32 or int64 in the file), e.g. axes or sizes.
    fn const_ints(&self, index: usize, what: &str) -> Result<Vec<i64>> {
        match self.constant(index)? {
            Some((_, Values::I32(v))) => Ok(v.into_iter().map(i64::from).collect()),
            _ => Err(self.err(format!(
                "{what} (tensor {index}) must be a constant int32 or int64 tensor"
            ))),
        }
    }

    /// The operand for a tensor: computed earlier, a graph input, or a constant.
    fn operand(&mut self, index: usize) -> Result<Operand> {
        if let Some(o) = self.values.get(&index) {
            return Ok(o.clone());
        }
        let Some((shape, values)) = self.constant(index)? else {
            return Err(self.err(format!(
                "tensor {index} is read before any operator writes it"
            )));
        };
        let o = self.ctx(match values {
            Values::F32(v) => self.b.constant_f32(&shape, &v),
            Values::I32(v) => self.b.constant(
                OperandDescriptor::new(DataType::Int32, shape),
                bytemuck::cast_slice(&v),
            ),
            Values::U8(v) => self
                .b
                .constant(OperandDescriptor::new(DataType::Uint8, shape), &v),
        })?;
        self.values.insert(index, o.clone());
        Ok(o)
    }

    pub(super) fn write(mut self, hw: Option<(usize, usize)>) -> Result<Vec<(String, Operand)>> {
        let inputs: Vec<i32> = self
            .graph
            .subgraph
            .inputs()
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        for raw in inputs {
            let index = self.tensor_index(raw)?;
            let (t, dt, shape) = self.tensor(index)?;
            let name = t.name().unwrap_or_default().to_string();
            let shape = self.batched_shape(&shape);
            if let Some((h, w)) = hw {
                if shape.len() != 4 || shape[1] != h || shape[2] != w {
                    return Err(self.err(format!(
                        "input '{name}' is {shape:?}; this TFLite model has a fixed size and \
                         cannot be built for {h}x{w}"
                    )));
                }
            }
            let mut o = self.ctx(self.b.input(&name, OperandDescriptor::new(dt, shape)))?;
            if let Some(q) = self.quant(index)? {
                // Real values in are put on the input's grid, so that the
                // operators read what its integers would give them.
                o = if self.src.real_io {
                    self.ctx(quant::requantize(self.b, &o, &q))?
                } else {
                    self.ctx(quant::to_real(self.b, &o, &q))?
                };
            }
            self.values.insert(index, o);
        }
        let operators = self
            .graph
            .subgraph
            .operators()
            .ok_or_else(|| self.err("subgraph 0 has no operators"))?;
        for (i, op) in operators.iter().enumerate() {
            self.operator(i, &op)?;
        }
        self.location = "subgraph 0 outputs".into();
        let outputs: Vec<i32> = self
            .graph
            .subgraph
            .outputs()
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        let mut named = Vec::new();
        for raw in outputs {
            let index = self.tensor_index(raw)?;
            let name = self.tensor_name(index);
            let mut o = self.values.get(&index).cloned().ok_or_else(|| {
                self.err(format!(
                    "output '{name}' (tensor {index}) is never computed"
                ))
            })?;
            if let Some(q) = self.quant(index)? {
                o = if self.src.real_io {
                    self.ctx(quant::requantize(self.b, &o, &q))?
                } else {
                    self.ctx(quant::to_integers(self.b, &o, &q))?
                };
            }
            named.push((name, o));
        }
        if named.is_empty() {
            return Err(self.err("the subgraph declares no outputs"));
        }
        Ok(named)
    }

    /// The operator's builtin code and its name for messages.
    fn op_code(&self, op: &fb::Operator<'a>) -> Result<(fb::BuiltinOperator, String)> {
        let codes = self
            .model
            .operator_codes()
            .ok_or_else(|| self.err("the model has no operator codes"))?;
        let ci = op.opcode_index() as usize;
        if ci >= codes.len() {
            return Err(self.err(format!(
                "opcode index {ci} is out of range ({} operator codes)",
                codes.len()
            )));
        }
        let code = codes.get(ci);
        // Files written before builtin_code existed keep it in the deprecated field.
        let builtin = fb::BuiltinOperator(
            code.builtin_code()
                .0
                .max(code.deprecated_builtin_code() as i32),
        );
        let name = match builtin {
            fb::BuiltinOperator::CUSTOM => code.custom_code().unwrap_or("?").to_string(),
            b => b
                .variant_name()
                .map_or_else(|| format!("builtin op code {}", b.0), str::to_string),
        };
        Ok((builtin, name))
    }

    fn operator(&mut self, i: usize, op: &fb::Operator<'a>) -> Result<()> {
        use fb::BuiltinOperator as B;
        self.location = format!("operator #{i}");
        let (builtin, name) = self.op_code(op)?;
        self.location = format!("operator #{i} ({name})");
        self.b.note_origin(&self.location);
        let outputs = op
            .outputs()
            .map(|v| v.iter().collect::<Vec<i32>>())
            .unwrap_or_default()
            .into_iter()
            .map(|raw| self.tensor_index(raw))
            .collect::<Result<Vec<usize>>>()?;
        if outputs.is_empty() {
            return Err(self.err("has no outputs"));
        }
        let call = Call {
            op,
            inputs: op.inputs().map(|v| v.iter().collect()).unwrap_or_default(),
            outputs,
        };
        let one = |r: Result<Operand>| r.map(|o| vec![o]);
        let values = match builtin {
            B::CONV_2D => one(self.conv2d(&call)),
            B::DEPTHWISE_CONV_2D => one(self.depthwise_conv2d(&call)),
            B::TRANSPOSE_CONV => one(self.transpose_conv(&call)),
            B::FULLY_CONNECTED => one(self.fully_connected(&call)),
            B::CUSTOM if name == TRANSPOSE_CONV_BIAS => one(self.transpose_conv_bias(&call)),
            B::AVERAGE_POOL_2D | B::MAX_POOL_2D => one(self.pool2d(&call, builtin)),
            B::MEAN | B::SUM => one(self.reduce(&call, builtin)),
            B::ADD
            | B::SUB
            | B::MUL
            | B::DIV
            | B::MAXIMUM
            | B::MINIMUM
            | B::SQUARED_DIFFERENCE
            | B::FLOOR_MOD => one(self.binary(&call, builtin)),
            B::RELU
            | B::RELU6
            | B::RELU_N1_TO_1
            | B::LEAKY_RELU
            | B::LOGISTIC
            | B::TANH
            | B::HARD_SWISH
            | B::ELU
            | B::EXP
            | B::SQRT
            | B::RSQRT => one(self.unary(&call, builtin)),
            B::PRELU => one(self.prelu(&call)),
            B::SOFTMAX => one(self.softmax(&call)),
            B::CAST => one(self.cast(&call)),
            B::CONCATENATION => one(self.concatenation(&call)),
            B::RESHAPE => one(self.reshape(&call)),
            B::SQUEEZE => one(self.squeeze(&call)),
            B::TRANSPOSE => one(self.transpose(&call)),
            B::PAD | B::PADV2 => one(self.pad(&call, builtin)),
            B::MIRROR_PAD => one(self.mirror_pad(&call)),
            B::SLICE => one(self.slice(&call)),
            B::STRIDED_SLICE => one(self.strided_slice(&call)),
            B::SPLIT | B::SPLIT_V => self.split(&call, builtin),
            B::DEPTH_TO_SPACE | B::SPACE_TO_DEPTH => one(self.depth_space(&call, builtin)),
            B::GATHER => one(self.gather(&call)),
            B::ARG_MAX => one(self.arg_max(&call)),
            B::RESIZE_BILINEAR | B::RESIZE_NEAREST_NEIGHBOR => one(self.resize(&call, builtin)),
            B::QUANTIZE => one(self.input(&call, 0)),
            B::DEQUANTIZE => match self.dequantize(&call)? {
                Some(o) => Ok(vec![o]),
                None => return Ok(()),
            },
            B::DENSIFY => return self.densify(&call),
            B::CUSTOM => Err(self.err(format!("unsupported custom op '{name}'"))),
            _ => Err(self.err(format!(
                "unsupported op {name} (wgnn's TFLite importer maps the float ops vision \
                 models use)"
            ))),
        }?;
        if values.len() != call.outputs.len() {
            return Err(self.err(format!(
                "has {} outputs, computes {}",
                call.outputs.len(),
                values.len()
            )));
        }
        for (&out, mut value) in call.outputs.iter().zip(values) {
            self.check_shape(out, &value)?;
            if let Some(q) = self.quant(out)? {
                value = self.ctx(quant::requantize(self.b, &value, &q))?;
            }
            self.values.insert(out, value);
        }
        Ok(())
    }

    /// DEQUANTIZE: float16 constants become float32 constants once, at load
    /// (`None`: folded); a computed float16 tensor is cast.
    fn dequantize(&mut self, call: &Call<'_, 'a>) -> Result<Option<Operand>> {
        let x = self.arg(call, 0)?;
        let out = self.out(call)?;
        if let Some((_, values)) = self.const_f32(x)? {
            self.folded.insert(out, values);
            let (_, _, declared) = self.tensor(out)?;
            let (_, _, from) = self.tensor(x)?;
            if declared != from {
                return Err(self.err(format!(
                    "turns {from:?} into {declared:?}; DEQUANTIZE keeps the shape"
                )));
            }
            return Ok(None);
        }
        let quantized = self.quant(x)?.is_some();
        let x = self.operand(x)?;
        if quantized {
            // Already the real values (`quant`).
            return Ok(Some(x));
        }
        if x.data_type() != DataType::Float16 {
            return Err(self.err(format!(
                "only float16 -> float32 is supported, input is {}",
                x.data_type()
            )));
        }
        self.ctx(self.b.cast(&x, DataType::Float32)).map(Some)
    }

    /// DENSIFY: a sparse constant decoded into a dense one at load time.
    fn densify(&mut self, call: &Call<'_, 'a>) -> Result<()> {
        let x = self.arg(call, 0)?;
        let out = self.out(call)?;
        let (t, dt, shape) = self.tensor(x)?;
        let sparsity = t
            .sparsity()
            .ok_or_else(|| self.err(format!("input tensor {x} has no sparsity parameters")))?;
        let sparsity =
            Sparsity::read(&sparsity).map_err(|e| self.err(format!("tensor {x} sparsity: {e}")))?;
        let data = self
            .buffer(x)?
            .ok_or_else(|| self.err(format!("input tensor {x} is not a constant")))?;
        let values: Vec<f32> = match (t.type_(), data.len() % dt.byte_size()) {
            (fb::TensorType::FLOAT32, 0) => bytemuck::pod_collect_to_vec(data),
            (fb::TensorType::FLOAT16, 0) => bytemuck::pod_collect_to_vec::<u8, half::f16>(data)
                .iter()
                .map(|h| h.to_f32())
                .collect(),
            (t, _) => {
                return Err(self.err(format!(
                    "input tensor {x} is {} with {} bytes; float32 or float16 values expected",
                    t.variant_name().unwrap_or("?"),
                    data.len()
                )))
            }
        };
        self.finite(x, &values)?;
        let dense = densify(&shape, &sparsity, &values)
            .map_err(|e| self.err(format!("tensor {x} sparsity: {e}")))?;
        let (_, _, declared) = self.tensor(out)?;
        if declared != shape {
            return Err(self.err(format!(
                "turns {shape:?} into {declared:?}; DENSIFY keeps the shape"
            )));
        }
        self.folded.insert(out, dense);
        Ok(())
    }

    /// `declared` (a shape the file gives for one item) for the batch
    /// being written: its leading dimension times the batch.
    fn batched_shape(&self, declared: &[usize]) -> Vec<usize> {
        let mut shape = declared.to_vec();
        if let Some(d) = shape.first_mut() {
            *d *= self.batch;
        }
        shape
    }

    /// Whether `value`, computed for tensor `index`, carries the batch: it
    /// has the file's shape with the leading dimension times the batch.
    fn is_batched(&self, index: usize, value: &Operand) -> Result<bool> {
        let (_, _, declared) = self.tensor(index)?;
        Ok(self.batch > 1 && value.shape() == self.batched_shape(&declared).as_slice())
    }

    /// Checks that what the operator computes has the shape the file
    /// declares, or (where it carries the batch) that shape with the
    /// leading dimension times the batch: whether the items stay apart is
    /// `models::batch`'s to check over the whole graph.
    fn check_shape(&self, out: usize, value: &Operand) -> Result<()> {
        let (t, _, declared) = self.tensor(out)?;
        if value.shape() != declared.as_slice() && !self.is_batched(out, value)? {
            return Err(self.err(format!(
                "computes {:?} for tensor {out} '{}', which the file declares as {declared:?}",
                value.shape(),
                t.name().unwrap_or_default()
            )));
        }
        Ok(())
    }

    /// Input `k` of the operator (required).
    fn arg(&self, call: &Call<'_, 'a>, k: usize) -> Result<usize> {
        match call.inputs.get(k) {
            Some(&raw) if raw >= 0 => self.tensor_index(raw),
            _ => Err(self.err(format!("has {} inputs, needs input {k}", call.inputs.len()))),
        }
    }

    /// Input `k` as an operand.
    fn input(&mut self, call: &Call<'_, 'a>, k: usize) -> Result<Operand> {
        let i = self.arg(call, k)?;
        self.operand(i)
    }

    /// Input `k` if present (optional inputs are absent or -1).
    fn optional_input(&mut self, call: &Call<'_, 'a>, k: usize) -> Result<Option<Operand>> {
        match call.inputs.get(k) {
            Some(&raw) if raw >= 0 => {
                let i = self.tensor_index(raw)?;
                Ok(Some(self.operand(i)?))
            }
            _ => Ok(None),
        }
    }

    /// The single output tensor's index.
    fn out(&self, call: &Call<'_, 'a>) -> Result<usize> {
        match call.outputs[..] {
            [out] => Ok(out),
            _ => Err(self.err(format!("has {} outputs, expected 1", call.outputs.len()))),
        }
    }

    /// The single output's declared shape.
    fn out_shape(&self, call: &Call<'_, 'a>) -> Result<Vec<usize>> {
        Ok(self.tensor(self.out(call)?)?.2)
    }

    fn input_nhwc(&mut self, call: &Call<'_, 'a>, k: usize) -> Result<(Operand, [usize; 4])> {
        let o = self.input(call, k)?;
        let s: [usize; 4] = o
            .shape()
            .try_into()
            .map_err(|_| self.err(format!("input {:?} is not 4-D (NHWC)", o.shape())))?;
        Ok((o, s))
    }

    /// A (possibly negative) axis of a rank-`rank` tensor.
    fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if (0..r).contains(&a) {
            Ok(a as usize)
        } else {
            Err(self.err(format!("axis {axis} is out of range for rank {rank}")))
        }
    }

    fn pair(&self, h: i32, w: i32, what: &str) -> Result<[usize; 2]> {
        match (usize::try_from(h), usize::try_from(w)) {
            (Ok(h), Ok(w)) if h > 0 && w > 0 => Ok([h, w]),
            _ => Err(self.err(format!("{what} {h}x{w} is not positive"))),
        }
    }

    fn padding(
        &self,
        padding: fb::Padding,
        input: [usize; 2],
        kernel: [usize; 2],
        strides: [usize; 2],
        dilations: [usize; 2],
    ) -> Result<[usize; 4]> {
        match padding {
            fb::Padding::VALID => Ok([0; 4]),
            fb::Padding::SAME => {
                let (t, b) = same_padding(input[0], kernel[0], strides[0], dilations[0]);
                let (l, r) = same_padding(input[1], kernel[1], strides[1], dilations[1]);
                Ok([t, b, l, r])
            }
            p => Err(self.err(format!("unknown padding {}", p.0))),
        }
    }

    /// The fused activation most TFLite ops carry in their options.
    fn activation(&self, y: Operand, act: fb::ActivationFunctionType) -> Result<Operand> {
        let b = self.b;
        self.ctx(match act {
            fb::ActivationFunctionType::NONE => Ok(y),
            fb::ActivationFunctionType::RELU => b.relu(&y),
            fb::ActivationFunctionType::RELU6 => b.clamp(&y, 0.0, 6.0),
            fb::ActivationFunctionType::RELU_N1_TO_1 => b.clamp(&y, -1.0, 1.0),
            fb::ActivationFunctionType::TANH => b.tanh(&y),
            a => Err(Error::invalid(format!(
                "fused activation {} is not supported",
                a.variant_name().unwrap_or("unknown")
            ))),
        })
    }

    /// A scalar float32 constant of rank `rank` (all dimensions 1), to
    /// broadcast against a tensor.
    fn scalar(&self, value: f32, rank: usize) -> Result<Operand> {
        self.ctx(self.b.constant_f32(&vec![1; rank], &[value]))
    }
}
