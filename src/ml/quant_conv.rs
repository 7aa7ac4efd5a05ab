//! `Op::QuantConv2d`: a conv2d that computes in int8, as an int8 model's
//! quantized convolutions are meant to run. Its input is a float tensor,
//! quantized as the op reads it (one scale and zero point, int8 or uint8);
//! its filter is int8 (or uint8) held in the options, with a scale and zero
//! point per output channel; products are summed in int32 and the sum is
//! written as a float: `scale_x * scale_w[oc] * acc + bias[oc]`, then the
//! node's activations.
//!
//! Both contexts compute the same integers: the input is quantized as
//! `clamp(round_half_even(x * (1 / scale_x)) + zero_x, lo, hi)` with the
//! reciprocal computed here once (a product is correctly rounded on every
//! device, a GPU's division is not), and uint8 values (input or filter) are
//! held shifted by -128 into int8, their zero points with them, so that
//! four of them pack into the 32-bit words of WGSL's `dot4I8Packed`. The
//! sum over the real taps, `Σ (x - zx)(w - zw)`, is taken as
//! `Σ x w - zw Σ x - zx Σ w + K zx zw` ([`QuantConv2dOptions::corrections`]
//! holds the last two terms per output channel); an input pixel in the
//! padding is `zx`, so it adds nothing. Only the final float product and
//! bias can round differently between the contexts (a fused multiply-add
//! on one side): within 1e-6 of the value's magnitude.

use std::sync::Arc;

use super::ops::Conv2dOptions;

/// A quantized conv2d (`Op::QuantConv2d`); `conv.filter_layout` is unused:
/// the filter is [output channels, input channels per group, kh, kw].
#[derive(Clone, Debug, PartialEq)]
pub struct QuantConv2dOptions {
    pub conv: Conv2dOptions,
    /// The input's quantization: x / scale + zero, rounded, in int8 or (not
    /// `input_signed`) uint8.
    pub input_scale: f32,
    pub input_zero: i32,
    pub input_signed: bool,
    /// [oc, icg, kh, kw].
    pub filter_shape: [usize; 4],
    /// The filter's values, uint8 ones minus 128.
    pub filter: Arc<Vec<i8>>,
    /// Per output channel, shifted as the values are.
    pub filter_zero: Vec<i32>,
    pub filter_scale: Vec<f32>,
}

impl QuantConv2dOptions {
    /// What an input value is held as: its quantized value, uint8 ones
    /// minus 128.
    pub(crate) fn quantize(&self, x: f32) -> i32 {
        let (lo, hi, offset) = self.input_range();
        let q = (x * self.inv_scale()).round_ties_even() + self.input_zero as f32;
        q.clamp(lo as f32, hi as f32) as i32 - offset
    }

    /// The reciprocal of the input scale, which both contexts multiply by.
    pub(crate) fn inv_scale(&self) -> f32 {
        1.0 / self.input_scale
    }

    /// The input type's range and the offset that moves it into int8.
    pub(crate) fn input_range(&self) -> (i32, i32, i32) {
        match self.input_signed {
            true => (-128, 127, 0),
            false => (0, 255, 128),
        }
    }

    /// The input's zero point as held (shifted into int8).
    pub(crate) fn held_input_zero(&self) -> i32 {
        self.input_zero - self.input_range().2
    }

    /// Products per output: icg * kh * kw.
    pub(crate) fn taps(&self) -> usize {
        let [_, icg, kh, kw] = self.filter_shape;
        icg * kh * kw
    }

    /// Per output channel, `scale_x * scale_w`: what the integer sum is
    /// multiplied by.
    pub(crate) fn channel_scales(&self) -> Vec<f32> {
        let sx = self.input_scale;
        self.filter_scale.iter().map(|&sw| sx * sw).collect()
    }

    /// Per output channel, `K zx zw - zx Σ w`: the zero-point terms that do
    /// not depend on the input.
    pub(crate) fn corrections(&self) -> Vec<i32> {
        let taps = self.taps();
        let zx = self.held_input_zero();
        self.filter
            .chunks(taps.max(1))
            .zip(&self.filter_zero)
            .map(|(w, &zw)| {
                let sum: i32 = w.iter().map(|&v| v as i32).sum();
                taps as i32 * zx * zw - zx * sum
            })
            .collect()
    }

    /// Whether a filter zero point is not 0, so that the sum of the input
    /// values is needed (`- zw Σ x`).
    pub(crate) fn needs_input_sum(&self) -> bool {
        self.filter_zero.iter().any(|&z| z != 0)
    }

    /// What the builder checks, as one line.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let [oc, ..] = self.filter_shape;
        if self.filter.len() != self.filter_shape.iter().product::<usize>() {
            return Err(format!(
                "{} filter values for a filter of shape {:?}",
                self.filter.len(),
                self.filter_shape
            ));
        }
        if self.filter_scale.len() != oc || self.filter_zero.len() != oc {
            return Err(format!(
                "{} filter scales and {} zero points for {oc} output channels",
                self.filter_scale.len(),
                self.filter_zero.len()
            ));
        }
        let positive = |s: f32| s.is_finite() && s > 0.0;
        if let Some(bad) = std::iter::once(&self.input_scale)
            .chain(&self.filter_scale)
            .find(|s| !positive(**s))
        {
            return Err(format!("scale {bad} is not a positive number"));
        }
        let (lo, hi, _) = self.input_range();
        if !(lo..=hi).contains(&self.input_zero) {
            return Err(format!(
                "input zero point {} is outside [{lo}, {hi}]",
                self.input_zero
            ));
        }
        if let Some(z) = self.filter_zero.iter().find(|z| !(-128..=127).contains(*z)) {
            return Err(format!("filter zero point {z} is outside the int8 range"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(signed: bool, zero: i32, filter: Vec<i8>, filter_zero: i32) -> QuantConv2dOptions {
        QuantConv2dOptions {
            conv: Conv2dOptions::new(),
            input_scale: 0.5,
            input_zero: zero,
            input_signed: signed,
            filter_shape: [1, filter.len(), 1, 1],
            filter: Arc::new(filter),
            filter_zero: vec![filter_zero],
            filter_scale: vec![0.25],
        }
    }

    #[test]
    fn inputs_round_half_to_even_saturate_and_shift_uint8_into_int8() {
        let o = options(true, -1, vec![1], 0);
        let q: Vec<i32> = [0.25, 0.75, -100.0, 100.0, 1.0]
            .iter()
            .map(|&x| o.quantize(x))
            .collect();
        assert_eq!(q, [-1, 1, -128, 127, 1]);
        let u = options(false, 128, vec![1], 0);
        assert_eq!(u.quantize(0.0), 0);
        assert_eq!(u.quantize(-1000.0), -128);
        assert_eq!(u.held_input_zero(), 0);
    }

    #[test]
    fn the_zero_point_terms_make_the_sum_of_centred_products() {
        let o = options(true, 3, vec![5, -7, 2], -2);
        let x = [10, -4, 9];
        let zx = o.held_input_zero();
        let raw: i32 = x
            .iter()
            .zip(o.filter.iter())
            .map(|(&a, &w)| a * w as i32)
            .sum();
        let xsum: i32 = x.iter().sum();
        let got = raw + o.corrections()[0] - o.filter_zero[0] * xsum;
        let want: i32 = x
            .iter()
            .zip(o.filter.iter())
            .map(|(&a, &w)| (a - zx) * (w as i32 + 2))
            .sum();
        assert_eq!(got, want);
        assert!(o.needs_input_sum());
    }
}
