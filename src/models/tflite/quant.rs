//! Quantized TFLite tensors (full-integer models: int8 or uint8 with
//! per-tensor or per-channel scales, int32 biases). wgnn computes them in
//! float, correctness first: inside the graph a quantized tensor holds the
//! real values it stands for. Constants are dequantized at load; a
//! quantized graph input holds integers and is dequantized where it enters;
//! every operator that writes a quantized tensor has its result put back on
//! that tensor's integer grid (quantized and dequantized: the rounding and
//! saturation of LiteRT's integer kernels); a quantized graph output is
//! given as its integers. QUANTIZE and DEQUANTIZE are then identities.
//! Convolutions whose quantization fits compute in int8
//! (`ops/quant_conv.rs`).

use super::fb;
use crate::error::Result;
use crate::ml::{GraphBuilder, Operand};
use crate::models::quantize::{range, to_grid};

/// A tensor's quantization.
#[derive(Clone, Debug)]
pub(super) struct Quant {
    pub(super) scale: Vec<f32>,
    pub(super) zero: Vec<f32>,
    /// The axis a per-channel scale runs along.
    pub(super) axis: usize,
    /// The integer range; `None` for int32 (biases, never requantized).
    pub(super) grid: Option<(f32, f32)>,
}

/// The quantization of `t`, `None` for a float (or plain integer) tensor;
/// an error names what is not supported.
pub(super) fn of(t: &fb::Tensor<'_>) -> std::result::Result<Option<Quant>, String> {
    let Some(q) = t.quantization() else {
        return Ok(None);
    };
    let scale: Vec<f32> = q.scale().map(|s| s.iter().collect()).unwrap_or_default();
    if scale.is_empty() {
        return Ok(None);
    }
    let grid = match t.type_() {
        fb::TensorType::INT8 => Some(range(true)),
        fb::TensorType::UINT8 => Some(range(false)),
        fb::TensorType::INT32 => None,
        fb::TensorType::FLOAT32 | fb::TensorType::FLOAT16 => return Ok(None),
        k => {
            return Err(format!(
                "is quantized as {} (scale {}); wgnn reads int8 and uint8 quantized tensors \
                 and int32 biases",
                k.variant_name().unwrap_or("an unknown type"),
                scale[0]
            ))
        }
    };
    if let Some(bad) = scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(format!(
            "has quantization scale {bad}, not a positive number"
        ));
    }
    let zero: Vec<f32> = match q.zero_point() {
        Some(z) if z.len() == scale.len() => z.iter().map(|v| v as f32).collect(),
        Some(z) if !z.is_empty() => {
            return Err(format!(
                "has {} quantization scales and {} zero points",
                scale.len(),
                z.len()
            ))
        }
        _ => vec![0.0; scale.len()],
    };
    let axis = usize::try_from(q.quantized_dimension()).map_err(|_| {
        format!(
            "quantized dimension {} is negative",
            q.quantized_dimension()
        )
    })?;
    Ok(Some(Quant {
        scale,
        zero,
        axis,
        grid,
    }))
}

impl Quant {
    /// Dequantized values of a constant of `shape` stored as `values`.
    pub(super) fn dequantize(
        &self,
        shape: &[usize],
        values: &[f32],
    ) -> std::result::Result<Vec<f32>, String> {
        let per = self.scale.len();
        let inner: usize = if per > 1 {
            if shape.get(self.axis) != Some(&per) {
                return Err(format!(
                    "{per} quantization scales do not match dimension {} of {shape:?}",
                    self.axis
                ));
            }
            shape[self.axis + 1..].iter().product()
        } else {
            1
        };
        Ok(values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let k = if per > 1 { (i / inner.max(1)) % per } else { 0 };
                (v - self.zero[k]) * self.scale[k]
            })
            .collect())
    }

    /// The quantization of an activation: one scale.
    fn single(&self) -> std::result::Result<(f32, f32, (f32, f32)), String> {
        match (&self.scale[..], self.grid) {
            ([s], Some(grid)) => Ok((*s, self.zero[0], grid)),
            _ => Err(format!(
                "a computed tensor with {} quantization scales is not supported (one is)",
                self.scale.len()
            )),
        }
    }
}

fn scalar(b: &GraphBuilder, rank: usize, v: f32) -> Result<Operand> {
    b.constant_f32(&vec![1; rank], &[v])
}

/// Real values `y` as the integers of `q`.
pub(super) fn to_integers(b: &GraphBuilder, y: &Operand, q: &Quant) -> Result<Operand> {
    let (s, z, (lo, hi)) = q.single().map_err(crate::Error::invalid)?;
    let rank = y.shape().len();
    to_grid(
        b,
        y,
        &scalar(b, rank, s)?,
        &scalar(b, rank, z - lo + 0.5)?,
        lo,
        hi,
    )
}

/// Integers `x` of `q` as the real values they stand for.
pub(super) fn to_real(b: &GraphBuilder, x: &Operand, q: &Quant) -> Result<Operand> {
    let (s, z, _) = q.single().map_err(crate::Error::invalid)?;
    let rank = x.shape().len();
    let x = b.sub(x, &scalar(b, rank, z)?)?;
    b.mul(&x, &scalar(b, rank, s)?)
}

/// Real values `y` put on the integer grid of `q` and back: what the
/// integer kernel that writes a tensor of `q` gives.
pub(super) fn requantize(b: &GraphBuilder, y: &Operand, q: &Quant) -> Result<Operand> {
    to_real(b, &to_integers(b, y, q)?, q)
}

/// The integer range a quantized input's real `[lo, hi]` (the image range)
/// takes, for `TensorInfo`'s conventional range.
pub(super) fn input_range(q: &Quant, real: [f32; 2]) -> Option<[f32; 2]> {
    let (s, z, _) = q.single().ok()?;
    Some(real.map(|v| v / s + z))
}
