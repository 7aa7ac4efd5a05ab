//! `quant_conv2d`: a conv2d computing in int8 (`Op::QuantConv2d`).

use super::{GraphBuilder, Operand};
use crate::error::{Error, Result};
use crate::ml::ops::{Activation, Conv2dFilterLayout, Op};
use crate::ml::quant_conv::QuantConv2dOptions;
use crate::ml::shape;
use crate::ml::types::OperandDescriptor;

impl GraphBuilder {
    /// A conv2d of the float `input` that quantizes it as it reads it and
    /// sums int8 products in int32 (`ml/quant_conv.rs` says how), with an
    /// optional float `bias` of one value per output channel.
    pub fn quant_conv2d(
        &self,
        input: &Operand,
        bias: Option<&Operand>,
        options: QuantConv2dOptions,
    ) -> Result<Operand> {
        let mut ops = vec![input];
        ops.extend(bias);
        self.check("quantConv2d", &ops)?;
        options
            .validate()
            .map_err(|e| Error::invalid(format!("quantConv2d: {e}")))?;
        let filter = OperandDescriptor::new(input.data_type(), options.filter_shape.to_vec());
        let conv = crate::ml::ops::Conv2dOptions {
            filter_layout: Conv2dFilterLayout::Oihw,
            ..options.conv.clone()
        };
        let out = shape::conv2d(&input.desc, &filter, bias.map(|b| &b.desc), &conv)?;
        let options = QuantConv2dOptions { conv, ..options };
        self.single(Op::QuantConv2d(options), &ops, out)
    }

    /// `x` quantized by `scale` and `zero` into [`lo`, `hi`] and
    /// dequantized again, element-wise (an int8 model's QuantizeLinear ->
    /// DequantizeLinear pair): one activation, which fuses into the node
    /// computing `x`.
    pub fn fake_quantize(
        &self,
        x: &Operand,
        scale: f32,
        zero: f32,
        (lo, hi): (f32, f32),
    ) -> Result<Operand> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::invalid(format!(
                "fakeQuantize: scale {scale} is not a positive number"
            )));
        }
        let inv_scale = 1.0 / scale;
        let act = Activation::FakeQuantize {
            inv_scale,
            scale,
            zero,
            lo,
            hi,
        };
        self.unary(act, x)
    }
}
