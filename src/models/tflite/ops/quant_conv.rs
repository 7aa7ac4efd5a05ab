//! Full-integer CONV_2D and DEPTHWISE_CONV_2D computing in int8
//! (`Op::QuantConv2d`, `ml/quant_conv.rs`) instead of in float on
//! dequantized weights, where the quantization fits the op: an input of one
//! scale and zero point (int8, or uint8 held minus 128) and a constant
//! int8 or uint8 filter of one scale or one per output channel along the
//! filter's output axis (0 of CONV_2D's OHWI, 3 of DEPTHWISE_CONV_2D's
//! `[1, H, W, C x M]`). The graph holds a quantized tensor's real values on
//! its grid (`tflite/quant.rs`); the kernel quantizes them as it reads
//! them, which gives back their integers. The int32 bias, dequantized at
//! load, is added in float, and the result is put on the output's grid as
//! every operator's is. Anything else runs in float as before.

use std::sync::Arc;

use super::{Call, Writer};
use crate::error::Result;
use crate::ml::{Conv2dOptions, Operand, QuantConv2dOptions};

impl<'a> Writer<'_, 'a> {
    /// The int8 convolution of `x` (the real values of input 0) by the
    /// filter of input 1 with `conv` (NHWC input; `groups` set for a
    /// depthwise one), or `None` where the quantization does not fit it.
    pub(super) fn quant_conv(
        &mut self,
        call: &Call<'_, 'a>,
        x: &Operand,
        bias: Option<&Operand>,
        conv: &Conv2dOptions,
        depthwise: bool,
    ) -> Result<Option<Operand>> {
        let (xi, wi) = (self.arg(call, 0)?, self.arg(call, 1)?);
        let (Some(xq), Some(wq)) = (self.quant(xi)?, self.quant(wi)?) else {
            return Ok(None);
        };
        let (Some(x_grid), Some(w_grid)) = (xq.grid, wq.grid) else {
            return Ok(None);
        };
        let Some(data) = self.buffer(wi)? else {
            return Ok(None);
        };
        let (_, _, shape) = self.tensor(wi)?;
        let &[a, kh, kw, b] = shape.as_slice() else {
            return Ok(None);
        };
        // [O, H, W, I], or [1, H, W, O] depthwise.
        let (oc, icg, out_axis) = if depthwise { (b, 1, 3) } else { (a, b, 0) };
        let per = wq.scale.len();
        let fits = xq.scale.len() == 1
            && (per == 1 || (per == oc && wq.axis == out_axis))
            && data.len() == shape.iter().product::<usize>();
        if !fits {
            return Ok(None);
        }
        // uint8 values are held minus 128 (ml/quant_conv.rs).
        let w_signed = w_grid.0 < 0.0;
        let shift = if w_signed { 0 } else { 128 };
        let held = |i: usize| {
            let v = if w_signed {
                i32::from(data[i] as i8)
            } else {
                i32::from(data[i])
            };
            (v - shift) as i8
        };
        let mut filter = vec![0i8; oc * icg * kh * kw];
        for o in 0..oc {
            for i in 0..icg {
                for y in 0..kh {
                    for x in 0..kw {
                        let from = if depthwise {
                            (y * kw + x) * oc + o
                        } else {
                            ((o * kh + y) * kw + x) * icg + i
                        };
                        filter[((o * icg + i) * kh + y) * kw + x] = held(from);
                    }
                }
            }
        }
        let each = |v: &[f32]| -> Vec<f32> { (0..oc).map(|m| v[m % v.len()]).collect() };
        let options = QuantConv2dOptions {
            conv: conv.clone(),
            input_scale: xq.scale[0],
            input_zero: xq.zero[0] as i32,
            input_signed: x_grid.0 < 0.0,
            filter_shape: [oc, icg, kh, kw],
            filter: Arc::new(filter),
            filter_zero: each(&wq.zero).iter().map(|&z| z as i32 - shift).collect(),
            filter_scale: each(&wq.scale),
        };
        self.ctx(self.b.quant_conv2d(x, bias, options)).map(Some)
    }
}
