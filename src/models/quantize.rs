//! What the ONNX and TFLite importers share for int8 models: quantizing
//! float values onto the integer grid with the builder's own operations,
//! so both contexts run it unchanged. wgnn computes int8 models in float;
//! a quantized tensor is a float operand (see `onnx::ops::quant`,
//! `tflite::quant`).

use crate::error::Result;
use crate::ml::{DataType, GraphBuilder, Operand};

/// `round(x / scale) + zero`, clamped to `[lo, hi]`: integer values in a
/// float32 operand. `scale` and `shift` (`zero - lo + 0.5`) broadcast
/// against `x`. Halves round up, where ONNX and TFLite round them to even
/// (a value exactly between two steps is rare in a float sum).
pub(crate) fn to_grid(
    b: &GraphBuilder,
    x: &Operand,
    scale: &Operand,
    shift: &Operand,
    lo: f32,
    hi: f32,
) -> Result<Operand> {
    let x = if x.data_type() == DataType::Float32 {
        x.clone()
    } else {
        b.cast(x, DataType::Float32)?
    };
    let t = b.add(&b.div(&x, scale)?, shift)?;
    // Clamping before rounding is the same with integer bounds, and keeps
    // the value non-negative, where truncation through int32 is the floor.
    let t = b.clamp(&t, 0.5, hi - lo + 0.5)?;
    let whole = b.cast(&b.cast(&t, DataType::Int32)?, DataType::Float32)?;
    if lo == 0.0 {
        return Ok(whole);
    }
    let lo = b.constant_f32(&vec![1; whole.shape().len()], &[lo])?;
    b.add(&whole, &lo)
}

/// The integer range of a quantized type: (lo, hi).
pub(crate) fn range(signed: bool) -> (f32, f32) {
    if signed {
        (-128.0, 127.0)
    } else {
        (0.0, 255.0)
    }
}
