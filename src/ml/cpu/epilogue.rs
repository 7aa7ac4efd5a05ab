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
            Activation::Sigmoid => x.iter_mut().for_each(|e| *e = 1.0 / (1.0 + (-*e).exp())),
            a => x.iter_mut().for_each(|e| *e = a.apply(*e)),
        }
    }
    if f16 {
        x.iter_mut()
            .for_each(|e| *e = half::f16::from_f32(*e).to_f32());
    }
}
