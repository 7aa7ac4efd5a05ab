//! TFLite operators mapped onto wgnn (WebNN) operators, one operator at a time,
//! checking each result's shape against the one the file declares.

use std::collections::HashMap;

use super::fb;
use super::{Subgraph, TfliteSource};
use crate::error::{Error, Result};
use crate::ml::{
    Conv2dFilterLayout, Conv2dOptions, ConvTranspose2dFilterLayout, ConvTranspose2dOptions,
    CoordinateTransform, DataType, GraphBuilder, InputLayout, InterpolationMode, Operand,
    Pool2dOptions, Resample2dOptions,
};
use crate::models::same_padding;

/// MediaPipe's transposed convolution with bias, a custom op.
const TRANSPOSE_CONV_BIAS: &str = "Convolution2DTransposeBias";

pub(super) struct Writer<'s, 'a> {
    src: &'s TfliteSource,
    model: fb::Model<'a>,
    graph: Subgraph<'a>,
    b: &'s GraphBuilder,
    values: HashMap<usize, Operand>,
    /// float32 constants made by DEQUANTIZE at load time.
    dequantized: HashMap<usize, Vec<f32>>,
    /// Where errors point: the operator being written.
    location: String,
}

struct Constant {
    shape: Vec<usize>,
    data_type: DataType,
    bytes: Vec<u8>,
}

impl<'s, 'a> Writer<'s, 'a> {
    pub(super) fn new(
        src: &'s TfliteSource,
        model: &fb::Model<'a>,
        graph: Subgraph<'a>,
        b: &'s GraphBuilder,
    ) -> Result<Self> {
        Ok(Writer {
            src,
            model: *model,
            graph,
            b,
            values: HashMap::new(),
            dequantized: HashMap::new(),
            location: "subgraph 0".into(),
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

    /// The bytes of a constant tensor, or `None` for a computed one.
    fn constant(&self, index: usize) -> Result<Option<Constant>> {
        let (t, data_type, shape) = self.tensor(index)?;
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
        let Some(data) = buffers.get(b).data().filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let want = shape.iter().product::<usize>() * data_type.byte_size();
        if data.len() != want {
            return Err(self.err(format!(
                "tensor {index} '{}' {shape:?} needs {want} bytes of {data_type}, buffer {b} has {}",
                t.name().unwrap_or_default(),
                data.len()
            )));
        }
        Ok(Some(Constant {
            shape,
            data_type,
            bytes: data.bytes().to_vec(),
        }))
    }

    fn const_f32(&self, index: usize) -> Result<Option<(Vec<usize>, Vec<f32>)>> {
        if let Some(v) = self.dequantized.get(&index) {
            return Ok(Some((self.tensor(index)?.2, v.clone())));
        }
        let Some(c) = self.constant(index)? else {
            return Ok(None);
        };
        let values: Vec<f32> = match c.data_type {
            DataType::Float32 => bytemuck::pod_collect_to_vec(&c.bytes),
            DataType::Float16 => bytemuck::pod_collect_to_vec::<u8, half::f16>(&c.bytes)
                .iter()
                .map(|h| h.to_f32())
                .collect(),
            dt => return Err(self.err(format!("tensor {index} is {dt}, expected float"))),
        };
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(self.err(format!(
                "tensor {index} '{}' holds a non-finite weight ({}) at element {i}",
                self.graph.tensors.get(index).name().unwrap_or_default(),
                values[i]
            )));
        }
        Ok(Some((c.shape, values)))
    }

    fn const_i32(&self, index: usize, what: &str) -> Result<Vec<i32>> {
        match self.constant(index)? {
            Some(c) if c.data_type == DataType::Int32 => Ok(bytemuck::pod_collect_to_vec(&c.bytes)),
            _ => Err(self.err(format!(
                "{what} (tensor {index}) must be a constant int32 tensor"
            ))),
        }
    }

    /// The operand for a tensor: computed earlier, a graph input, or a constant.
    fn operand(&mut self, index: usize) -> Result<Operand> {
        if let Some(o) = self.values.get(&index) {
            return Ok(o.clone());
        }
        let Some((shape, values)) = self.const_f32(index)? else {
            return Err(self.err(format!(
                "tensor {index} is read before any operator writes it"
            )));
        };
        let o = self.ctx(self.b.constant_f32(&shape, &values))?;
        self.values.insert(index, o.clone());
        Ok(o)
    }

    fn input_nhwc(&mut self, index: usize) -> Result<(Operand, [usize; 4])> {
        let o = self.operand(index)?;
        let s: [usize; 4] = o
            .shape()
            .try_into()
            .map_err(|_| self.err(format!("input {:?} is not 4-D (NHWC)", o.shape())))?;
        Ok((o, s))
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
            if let Some((h, w)) = hw {
                if shape.len() != 4 || shape[1] != h || shape[2] != w {
                    return Err(self.err(format!(
                        "input '{name}' is {shape:?}; this TFLite model has a fixed size and \
                         cannot be built for {h}x{w}"
                    )));
                }
            }
            let o = self.ctx(
                self.b
                    .input(&name, crate::ml::OperandDescriptor::new(dt, shape)),
            )?;
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
            let name = self.graph.tensors.get(index).name().unwrap_or_default();
            let o = self.values.get(&index).cloned().ok_or_else(|| {
                self.err(format!(
                    "output '{name}' (tensor {index}) is never computed"
                ))
            })?;
            named.push((name.to_string(), o));
        }
        if named.is_empty() {
            return Err(self.err("the subgraph declares no outputs"));
        }
        Ok(named)
    }

    fn operator(&mut self, i: usize, op: &fb::Operator<'a>) -> Result<()> {
        self.location = format!("operator #{i}");
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
        self.location = format!("operator #{i} ({name})");

        let inputs: Vec<i32> = op.inputs().map(|v| v.iter().collect()).unwrap_or_default();
        let outputs: Vec<i32> = op.outputs().map(|v| v.iter().collect()).unwrap_or_default();
        let [out_raw] = outputs[..] else {
            return Err(self.err(format!("has {} outputs, expected 1", outputs.len())));
        };
        let out = self.tensor_index(out_raw)?;
        let value = match builtin {
            fb::BuiltinOperator::CONV_2D => {
                let o = op
                    .builtin_options_as_conv_2_doptions()
                    .ok_or_else(|| self.err("has no Conv2DOptions"))?;
                let (x, [_, h, w, _]) = self.input_nhwc(self.arg(&inputs, 0)?)?;
                let filter = self.operand(self.arg(&inputs, 1)?)?;
                let bias = self.optional_bias(&inputs)?;
                let strides = self.pair(o.stride_h(), o.stride_w(), "stride")?;
                let dilations =
                    self.pair(o.dilation_h_factor(), o.dilation_w_factor(), "dilation")?;
                let k = self.kernel_hw(&filter, 1)?;
                let padding = self.padding(o.padding(), [h, w], k, strides, dilations)?;
                let options = Conv2dOptions {
                    padding,
                    strides,
                    dilations,
                    input_layout: InputLayout::Nhwc,
                    filter_layout: Conv2dFilterLayout::Ohwi,
                    ..Conv2dOptions::new()
                };
                let y = self.ctx(self.b.conv2d(&x, &filter, bias.as_ref(), options))?;
                self.activation(y, o.fused_activation_function())?
            }
            fb::BuiltinOperator::DEPTHWISE_CONV_2D => {
                let o = op
                    .builtin_options_as_depthwise_conv_2_doptions()
                    .ok_or_else(|| self.err("has no DepthwiseConv2DOptions"))?;
                let (x, [_, h, w, c]) = self.input_nhwc(self.arg(&inputs, 0)?)?;
                let filter = self.operand(self.arg(&inputs, 1)?)?;
                let bias = self.optional_bias(&inputs)?;
                let fs = filter.shape().to_vec();
                if fs.len() != 4 || fs[0] != 1 || fs[3] % c != 0 {
                    return Err(self.err(format!(
                        "filter {fs:?} is not [1, H, W, {c} x depth_multiplier]"
                    )));
                }
                let m = o.depth_multiplier();
                if m > 0 && fs[3] != c * m as usize {
                    return Err(self.err(format!(
                        "filter {fs:?} does not match {c} channels x depth_multiplier {m}"
                    )));
                }
                let strides = self.pair(o.stride_h(), o.stride_w(), "stride")?;
                let dilations =
                    self.pair(o.dilation_h_factor(), o.dilation_w_factor(), "dilation")?;
                let padding =
                    self.padding(o.padding(), [h, w], [fs[1], fs[2]], strides, dilations)?;
                // TFLite's [1, H, W, C*M] filter is WebNN's ihwo layout with
                // one group per input channel.
                let options = Conv2dOptions {
                    padding,
                    strides,
                    dilations,
                    groups: c,
                    input_layout: InputLayout::Nhwc,
                    filter_layout: Conv2dFilterLayout::Ihwo,
                };
                let y = self.ctx(self.b.conv2d(&x, &filter, bias.as_ref(), options))?;
                self.activation(y, o.fused_activation_function())?
            }
            fb::BuiltinOperator::AVERAGE_POOL_2D => {
                let o = op
                    .builtin_options_as_pool_2_doptions()
                    .ok_or_else(|| self.err("has no Pool2DOptions"))?;
                let (x, [_, h, w, _]) = self.input_nhwc(self.arg(&inputs, 0)?)?;
                let strides = self.pair(o.stride_h(), o.stride_w(), "stride")?;
                let window = self.pair(o.filter_height(), o.filter_width(), "filter size")?;
                let padding = self.padding(o.padding(), [h, w], window, strides, [1, 1])?;
                let options = Pool2dOptions {
                    window_dimensions: Some(window),
                    padding,
                    strides,
                    layout: InputLayout::Nhwc,
                    ..Pool2dOptions::new()
                };
                let y = self.ctx(self.b.average_pool2d(&x, options))?;
                self.activation(y, o.fused_activation_function())?
            }
            fb::BuiltinOperator::MEAN => {
                let x = self.operand(self.arg(&inputs, 0)?)?;
                let rank = x.shape().len() as i32;
                let mut axes = Vec::new();
                for a in self.const_i32(self.arg(&inputs, 1)?, "the axes")? {
                    let axis = if a < 0 { a + rank } else { a };
                    if !(0..rank).contains(&axis) {
                        return Err(self.err(format!("axis {a} is out of range for rank {rank}")));
                    }
                    if !axes.contains(&(axis as usize)) {
                        axes.push(axis as usize);
                    }
                }
                axes.sort_unstable();
                let keep = op
                    .builtin_options_as_reducer_options()
                    .is_some_and(|o| o.keep_dims());
                self.ctx(self.b.reduce_mean(&x, Some(&axes), keep))?
            }
            fb::BuiltinOperator::RESIZE_BILINEAR => {
                let (x, _) = self.input_nhwc(self.arg(&inputs, 0)?)?;
                let size = self.const_i32(self.arg(&inputs, 1)?, "the output size")?;
                let sizes = match size[..] {
                    [h, w] if h > 0 && w > 0 => [h as usize, w as usize],
                    _ => return Err(self.err(format!("output size {size:?} is not [h, w] > 0"))),
                };
                let (align, half) = op
                    .builtin_options_as_resize_bilinear_options()
                    .map_or((false, false), |o| {
                        (o.align_corners(), o.half_pixel_centers())
                    });
                let coordinate_transform = match (align, half) {
                    (true, true) => {
                        return Err(self.err("align_corners and half_pixel_centers are both set"))
                    }
                    (true, false) => CoordinateTransform::AlignCorners,
                    (false, true) => CoordinateTransform::HalfPixel,
                    (false, false) => CoordinateTransform::Asymmetric,
                };
                let options = Resample2dOptions {
                    mode: InterpolationMode::Linear,
                    sizes: Some(sizes),
                    axes: [1, 2],
                    coordinate_transform,
                    ..Resample2dOptions::default()
                };
                self.ctx(self.b.resample2d(&x, options))?
            }
            fb::BuiltinOperator::ADD | fb::BuiltinOperator::MUL => {
                let a = self.operand(self.arg(&inputs, 0)?)?;
                let c = self.operand(self.arg(&inputs, 1)?)?;
                let (y, act) = if builtin == fb::BuiltinOperator::ADD {
                    let act = op
                        .builtin_options_as_add_options()
                        .map_or(fb::ActivationFunctionType::NONE, |o| {
                            o.fused_activation_function()
                        });
                    (self.ctx(self.b.add(&a, &c))?, act)
                } else {
                    let act = op
                        .builtin_options_as_mul_options()
                        .map_or(fb::ActivationFunctionType::NONE, |o| {
                            o.fused_activation_function()
                        });
                    (self.ctx(self.b.mul(&a, &c))?, act)
                };
                self.activation(y, act)?
            }
            fb::BuiltinOperator::RELU => {
                let x = self.operand(self.arg(&inputs, 0)?)?;
                self.ctx(self.b.relu(&x))?
            }
            fb::BuiltinOperator::HARD_SWISH => {
                let x = self.operand(self.arg(&inputs, 0)?)?;
                self.ctx(self.b.hard_swish(&x))?
            }
            fb::BuiltinOperator::LOGISTIC => {
                let x = self.operand(self.arg(&inputs, 0)?)?;
                self.ctx(self.b.sigmoid(&x))?
            }
            fb::BuiltinOperator::DEQUANTIZE => {
                let x = self.arg(&inputs, 0)?;
                if let Some((_, values)) = self.const_f32(x)? {
                    // float16 weights become float32 constants once, at load.
                    self.dequantized.insert(out, values);
                    return self.check_shape(out, None);
                }
                let x = self.operand(x)?;
                if x.data_type() != DataType::Float16 {
                    return Err(self.err(format!(
                        "only float16 -> float32 is supported, input is {}",
                        x.data_type()
                    )));
                }
                self.ctx(self.b.cast(&x, DataType::Float32))?
            }
            fb::BuiltinOperator::CUSTOM if name == TRANSPOSE_CONV_BIAS => self
                .transpose_conv_bias(
                    op,
                    self.arg(&inputs, 0)?,
                    self.arg(&inputs, 1)?,
                    self.arg(&inputs, 2)?,
                )?,
            fb::BuiltinOperator::CUSTOM => {
                return Err(self.err(format!("unsupported custom op '{name}'")));
            }
            b => {
                return Err(self.err(format!("unsupported builtin op code {}", b.0)));
            }
        };
        self.check_shape(out, Some(&value))?;
        self.values.insert(out, value);
        Ok(())
    }

    /// Checks that what the operator computes has the shape the file declares.
    fn check_shape(&self, out: usize, value: Option<&Operand>) -> Result<()> {
        let (t, _, declared) = self.tensor(out)?;
        if let Some(v) = value {
            if v.shape() != declared.as_slice() {
                return Err(self.err(format!(
                    "computes {:?} for tensor {out} '{}', which the file declares as {declared:?}",
                    v.shape(),
                    t.name().unwrap_or_default()
                )));
            }
        }
        Ok(())
    }

    fn arg(&self, inputs: &[i32], k: usize) -> Result<usize> {
        let raw = *inputs
            .get(k)
            .ok_or_else(|| self.err(format!("has {} inputs, needs input {k}", inputs.len())))?;
        self.tensor_index(raw)
    }

    fn optional_bias(&mut self, inputs: &[i32]) -> Result<Option<Operand>> {
        match inputs.get(2) {
            Some(&raw) if raw >= 0 => {
                let i = self.tensor_index(raw)?;
                Ok(Some(self.operand(i)?))
            }
            _ => Ok(None),
        }
    }

    fn pair(&self, h: i32, w: i32, what: &str) -> Result<[usize; 2]> {
        match (usize::try_from(h), usize::try_from(w)) {
            (Ok(h), Ok(w)) if h > 0 && w > 0 => Ok([h, w]),
            _ => Err(self.err(format!("{what} {h}x{w} is not positive"))),
        }
    }

    /// Kernel height and width of an OHWI filter (dimensions 1 and 2).
    fn kernel_hw(&self, filter: &Operand, first: usize) -> Result<[usize; 2]> {
        match filter.shape() {
            s if s.len() == 4 => Ok([s[first], s[first + 1]]),
            s => Err(self.err(format!("filter {s:?} is not 4-D"))),
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

    /// MediaPipe's `Convolution2DTransposeBias`: inputs [input, weights OHWI,
    /// bias]; custom options are the raw bytes of a C struct of three int32s,
    /// {padding (TfLitePadding: 1 SAME, 2 VALID), stride_width, stride_height}.
    fn transpose_conv_bias(
        &mut self,
        op: &fb::Operator<'a>,
        input: usize,
        weights: usize,
        bias: usize,
    ) -> Result<Operand> {
        let opts = op
            .custom_options()
            .map(|v| v.bytes().to_vec())
            .unwrap_or_default();
        if opts.len() < 12 {
            return Err(self.err(format!(
                "custom options are {} bytes, expected 12 (padding, stride_w, stride_h)",
                opts.len()
            )));
        }
        let word = |k: usize| i32::from_le_bytes(opts[k * 4..k * 4 + 4].try_into().unwrap());
        let strides = self.pair(word(2), word(1), "stride")?;
        let (x, [_, h, w, _]) = self.input_nhwc(input)?;
        let filter = self.operand(weights)?;
        let bias = self.operand(bias)?;
        let k = self.kernel_hw(&filter, 1)?;
        let out_size = |i: usize, same: bool| {
            if same {
                [h, w][i] * strides[i]
            } else {
                ([h, w][i] - 1) * strides[i] + k[i]
            }
        };
        let same = match word(0) {
            1 => true,
            2 => false,
            p => return Err(self.err(format!("unknown padding {p} in the custom options"))),
        };
        let sizes = [out_size(0, same), out_size(1, same)];
        let mut padding = [0; 4];
        for i in 0..2 {
            let total = (([h, w][i] - 1) * strides[i] + k[i]).saturating_sub(sizes[i]);
            padding[2 * i] = total / 2;
            padding[2 * i + 1] = total - total / 2;
        }
        let options = ConvTranspose2dOptions {
            padding,
            strides,
            output_sizes: Some(sizes),
            input_layout: InputLayout::Nhwc,
            filter_layout: ConvTranspose2dFilterLayout::Ohwi,
            ..ConvTranspose2dOptions::new()
        };
        self.ctx(self.b.conv_transpose2d(&x, &filter, Some(&bias), options))
    }
}
