//! Convolutions and the fully connected layer: CONV_2D, DEPTHWISE_CONV_2D,
//! TRANSPOSE_CONV, MediaPipe's custom Convolution2DTransposeBias, and
//! FULLY_CONNECTED.

use super::{Call, Writer};
use crate::error::Result;
use crate::ml::{
    Conv2dFilterLayout, Conv2dOptions, ConvTranspose2dFilterLayout, ConvTranspose2dOptions,
    GemmOptions, InputLayout, Operand,
};
use crate::models::tflite::fb;

/// The padding before the output of a transposed convolution, as LiteRT
/// computes it: the forward convolution's padding for an input of the
/// transposed output's size (`ComputePaddingHeightWidth` on the output).
/// The padding after follows from the output size, which the op states.
pub(super) fn transpose_padding_before(
    output: usize,
    kernel: usize,
    stride: usize,
    same: bool,
) -> usize {
    let forward = if same {
        output.div_ceil(stride)
    } else {
        (output + stride).saturating_sub(kernel) / stride
    };
    (forward.saturating_sub(1) * stride + kernel).saturating_sub(output) / 2
}

impl<'a> Writer<'_, 'a> {
    pub(super) fn conv2d(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let o = call
            .op
            .builtin_options_as_conv_2_doptions()
            .ok_or_else(|| self.err("has no Conv2DOptions"))?;
        let (x, [_, h, w, _]) = self.input_nhwc(call, 0)?;
        let filter = self.input(call, 1)?;
        let bias = self.optional_input(call, 2)?;
        let strides = self.pair(o.stride_h(), o.stride_w(), "stride")?;
        let dilations = self.pair(o.dilation_h_factor(), o.dilation_w_factor(), "dilation")?;
        let k = self.kernel_hw(&filter)?;
        let padding = self.padding(o.padding(), [h, w], k, strides, dilations)?;
        let options = Conv2dOptions {
            padding,
            strides,
            dilations,
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Ohwi,
            ..Conv2dOptions::new()
        };
        let y = match self.quant_conv(call, &x, bias.as_ref(), &options, false)? {
            Some(y) => y,
            None => self.ctx(self.b.conv2d(&x, &filter, bias.as_ref(), options))?,
        };
        self.activation(y, o.fused_activation_function())
    }

    pub(super) fn depthwise_conv2d(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let o = call
            .op
            .builtin_options_as_depthwise_conv_2_doptions()
            .ok_or_else(|| self.err("has no DepthwiseConv2DOptions"))?;
        let (x, [_, h, w, c]) = self.input_nhwc(call, 0)?;
        let filter = self.input(call, 1)?;
        let bias = self.optional_input(call, 2)?;
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
        let dilations = self.pair(o.dilation_h_factor(), o.dilation_w_factor(), "dilation")?;
        let padding = self.padding(o.padding(), [h, w], [fs[1], fs[2]], strides, dilations)?;
        // TFLite's [1, H, W, C*M] filter is WebNN's ihwo layout with one
        // group per input channel.
        let options = Conv2dOptions {
            padding,
            strides,
            dilations,
            groups: c,
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Ihwo,
        };
        let y = match self.quant_conv(call, &x, bias.as_ref(), &options, true)? {
            Some(y) => y,
            None => self.ctx(self.b.conv2d(&x, &filter, bias.as_ref(), options))?,
        };
        self.activation(y, o.fused_activation_function())
    }

    /// TRANSPOSE_CONV: inputs [output_shape, weights OHWI, input, bias?].
    pub(super) fn transpose_conv(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let o = call
            .op
            .builtin_options_as_transpose_conv_options()
            .ok_or_else(|| self.err("has no TransposeConvOptions"))?;
        let shape = self.const_ints(self.arg(call, 0)?, "the output shape")?;
        let filter = self.input(call, 1)?;
        let (x, _) = self.input_nhwc(call, 2)?;
        let bias = self.optional_input(call, 3)?;
        let sizes = match shape[..] {
            [_, h, w, _] if h > 0 && w > 0 => [h as usize, w as usize],
            _ => return Err(self.err(format!("output shape {shape:?} is not NHWC > 0"))),
        };
        let strides = self.pair(o.stride_h(), o.stride_w(), "stride")?;
        let k = self.kernel_hw(&filter)?;
        let same = match o.padding() {
            fb::Padding::SAME => true,
            fb::Padding::VALID => false,
            p => return Err(self.err(format!("unknown padding {}", p.0))),
        };
        let before = [0, 1].map(|i| transpose_padding_before(sizes[i], k[i], strides[i], same));
        let options = ConvTranspose2dOptions {
            padding: [before[0], 0, before[1], 0],
            strides,
            output_sizes: Some(sizes),
            input_layout: InputLayout::Nhwc,
            filter_layout: ConvTranspose2dFilterLayout::Ohwi,
            ..ConvTranspose2dOptions::new()
        };
        let y = self.ctx(self.b.conv_transpose2d(&x, &filter, bias.as_ref(), options))?;
        self.activation(y, o.fused_activation_function())
    }

    /// FULLY_CONNECTED: `input [.., K] x weights [N, K]^T + bias [N]`. The
    /// input is flattened to [M, K]; `keep_num_dims` keeps its leading
    /// dimensions in the output, else the output is [M, N].
    pub(super) fn fully_connected(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let o = call.op.builtin_options_as_fully_connected_options();
        if let Some(f) = o.map(|o| o.weights_format()) {
            if f != fb::FullyConnectedOptionsWeightsFormat::DEFAULT {
                return Err(self.err(format!(
                    "weights format {} is not supported (only DEFAULT)",
                    f.variant_name().unwrap_or("?")
                )));
            }
        }
        let keep = o.is_some_and(|o| o.keep_num_dims());
        let x = self.input(call, 0)?;
        let weights = self.input(call, 1)?;
        let bias = self.optional_input(call, 2)?;
        let &[n, k] = weights.shape() else {
            return Err(self.err(format!("weights {:?} are not [N, K]", weights.shape())));
        };
        let count: usize = x.shape().iter().product();
        if count % k != 0 {
            return Err(self.err(format!(
                "input {:?} does not flatten to rows of {k}",
                x.shape()
            )));
        }
        let m = count / k;
        let rows = self.ctx(self.b.reshape(&x, &[m, k]))?;
        let options = GemmOptions {
            b_transpose: true,
            ..GemmOptions::default()
        };
        let mut y = self.ctx(self.b.gemm(&rows, &weights, bias.as_ref(), options))?;
        if keep {
            let mut shape = x.shape().to_vec();
            if let Some(last) = shape.last_mut() {
                *last = n;
            }
            y = self.ctx(self.b.reshape(&y, &shape))?;
        }
        let act = o.map_or(fb::ActivationFunctionType::NONE, |o| {
            o.fused_activation_function()
        });
        self.activation(y, act)
    }

    /// MediaPipe's `Convolution2DTransposeBias`: inputs [input, weights OHWI,
    /// bias]; custom options are the raw bytes of a C struct of three int32s,
    /// {padding (TfLitePadding: 1 SAME, 2 VALID), stride_width, stride_height}.
    pub(super) fn transpose_conv_bias(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let opts = call
            .op
            .custom_options()
            .map(|v| v.bytes().to_vec())
            .unwrap_or_default();
        let word = |k: usize| {
            opts.get(k * 4..k * 4 + 4)
                .and_then(|b| b.try_into().ok())
                .map(i32::from_le_bytes)
        };
        let (Some(padding), Some(stride_w), Some(stride_h)) = (word(0), word(1), word(2)) else {
            return Err(self.err(format!(
                "custom options are {} bytes, expected 12 (padding, stride_w, stride_h)",
                opts.len()
            )));
        };
        let strides = self.pair(stride_h, stride_w, "stride")?;
        let (x, [_, h, w, _]) = self.input_nhwc(call, 0)?;
        let filter = self.input(call, 1)?;
        let bias = self.input(call, 2)?;
        let k = self.kernel_hw(&filter)?;
        let same = match padding {
            1 => true,
            2 => false,
            p => return Err(self.err(format!("unknown padding {p} in the custom options"))),
        };
        let out_size = |i: usize| {
            if same {
                [h, w][i] * strides[i]
            } else {
                ([h, w][i] - 1) * strides[i] + k[i]
            }
        };
        let sizes = [out_size(0), out_size(1)];
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

    /// Kernel height and width of an OHWI filter (dimensions 1 and 2).
    fn kernel_hw(&self, filter: &Operand) -> Result<[usize; 2]> {
        match filter.shape() {
            &[_, h, w, _] => Ok([h, w]),
            s => Err(self.err(format!("filter {s:?} is not 4-D"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::transpose_padding_before;
    use crate::ml::{ConvTranspose2dFilterLayout, ConvTranspose2dOptions, GraphBuilder};
    use crate::ml::{InputLayout, OperandDescriptor};

    /// LiteRT's transposed convolution writes input pixel i's window at
    /// `i * stride - before`; the forward convolution of the output with
    /// the same padding must land back on the input's size.
    #[test]
    fn transpose_padding_matches_the_forward_convolution() {
        // SAME, stride 2, 3x3: 4 -> 8; forward 8 -> 4 pads (3*2+3-8)=1 -> 0 before.
        assert_eq!(transpose_padding_before(8, 3, 2, true), 0);
        // SAME, stride 2, 4x4: forward pads 2 in total, 1 before.
        assert_eq!(transpose_padding_before(8, 4, 2, true), 1);
        // SAME, stride 1, 5x5: 2 before.
        assert_eq!(transpose_padding_before(7, 5, 1, true), 2);
        // VALID pads nothing: 3 -> (3-1)*2+3 = 7.
        assert_eq!(transpose_padding_before(7, 3, 2, false), 0);
        // An odd SAME output: 7 from 4 with stride 2, 3x3: forward pads 2, 1 before.
        assert_eq!(transpose_padding_before(7, 3, 2, true), 1);
        for out in 1..20 {
            for k in 1..6 {
                for s in 1..4 {
                    let before = transpose_padding_before(out, k, s, true);
                    let (t, _) = crate::models::same_padding(out, k, s, 1);
                    assert_eq!(before, t, "out {out} k {k} s {s}");
                }
            }
        }
    }

    #[test]
    fn transpose_conv_output_is_the_stated_size() {
        let b = GraphBuilder::shapes_only();
        let x = b.input("x", OperandDescriptor::f32([1, 4, 5, 3])).unwrap();
        let f = b.constant_f32(&[2, 3, 3, 3], &[0.0; 54]).unwrap();
        let before = transpose_padding_before(9, 3, 2, true);
        let y = b
            .conv_transpose2d(
                &x,
                &f,
                None,
                ConvTranspose2dOptions {
                    padding: [before, 0, before, 0],
                    strides: [2, 2],
                    output_sizes: Some([8, 9]),
                    input_layout: InputLayout::Nhwc,
                    filter_layout: ConvTranspose2dFilterLayout::Ohwi,
                    ..ConvTranspose2dOptions::new()
                },
            )
            .unwrap();
        assert_eq!(y.shape(), [1, 8, 9, 2]);
    }
}
