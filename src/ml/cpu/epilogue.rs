//! What a kernel does to its output before anyone reads it: the activations
//! fused into the node at build, then rounding to float16 precision where the
//! operand is float16. Kernels apply it to each task's share of the output
//! while that share is still in cache.

use multiversion::multiversion;
use rayon::prelude::*;

use crate::ml::ops::Activation;

#[derive(Clone, Copy)]
pub(crate) struct Epilogue<'a> {
    activations: &'a [Activation],
    f16: bool,
}

impl<'a> Epilogue<'a> {
    pub fn new(activations: &'a [Activation], f16: bool) -> Epilogue<'a> {
        Epilogue { activations, f16 }
    }

    /// The same activations, rounding as the output `f16` says (nodes with
    /// several outputs, like split, carry no activations).
    pub fn rounding_to(self, f16: bool) -> Epilogue<'a> {
        Epilogue { f16, ..self }
    }

    /// Only the rounding.
    pub fn without_activations(self) -> Epilogue<'a> {
        Epilogue {
            activations: &[],
            ..self
        }
    }

    pub fn is_empty(&self) -> bool {
        self.activations.is_empty() && !self.f16
    }

    /// On the calling thread.
    pub fn apply(&self, x: &mut [f32]) {
        if !self.is_empty() {
            apply(self.activations, self.f16, x);
        }
    }

    /// As a pass of its own, on all cores for large outputs.
    pub fn apply_par(&self, x: &mut [f32]) {
        if self.is_empty() {
            return;
        }
        if x.len() <= 1 << 14 {
            self.apply(x);
        } else {
            x.par_chunks_mut(1 << 14).for_each(|c| self.apply(c));
        }
    }
}

#[multiversion(targets = "simd")]
fn apply(activations: &[Activation], f16: bool, x: &mut [f32]) {
    for a in activations {
        match *a {
            // The common ones get loops of their own, which vectorise.
            Activation::Relu => x.iter_mut().for_each(|e| *e = e.max(0.0)),
            Activation::HardSwish => x
                .iter_mut()
                .for_each(|e| *e = *e * (*e + 3.0).clamp(0.0, 6.0) / 6.0),
            Activation::Sigmoid => x.iter_mut().for_each(|e| *e = 1.0 / (1.0 + exp(-*e))),
            Activation::Silu => x.iter_mut().for_each(|e| *e /= 1.0 + exp(-*e)),
            a => x.iter_mut().for_each(|e| *e = a.apply(*e)),
        }
    }
    if f16 {
        x.iter_mut()
            .for_each(|e| *e = half::f16::from_f32(*e).to_f32());
    }
}

/// e^x within a few ulp, as straight-line arithmetic the compiler can
/// vectorise (libm's `expf` is one call per value). Cephes' expf: x = n ln2 + r
/// with |r| <= ln2 / 2, e^r from a degree-6 polynomial, 2^n from the exponent
/// bits. x is clamped to where 2^n stays a normal float (e^-87.3 to e^88.3).
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.3);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    // ln 2 in two parts, so that n ln 2 is exact enough.
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    e_r * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_a_few_ulp_of_libm() {
        let mut worst = 0.0f64;
        for i in -870_000..=883_000 {
            let x = i as f32 * 1e-4;
            let (got, want) = (exp(x) as f64, (x as f64).exp());
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst < 4.0 * f32::EPSILON as f64, "relative error {worst}");
        assert_eq!(exp(-1000.0), exp(-87.3));
        assert!(exp(f32::NAN).is_nan());
        let sigmoid = |v: f32| {
            let mut y = [v];
            apply(&[Activation::Sigmoid], false, &mut y);
            y[0]
        };
        assert!(sigmoid(-200.0) < 1e-37 && sigmoid(200.0) == 1.0 && sigmoid(0.0) == 0.5);
    }
}
