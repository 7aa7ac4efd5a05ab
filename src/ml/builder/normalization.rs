//! Builder methods for the three normalizations and `logSoftmax`.
//!
//! They are compositions of other ops rather than kernels of their own: the
//! statistics are `reduceMean`s (the reduction kernel, tested and tuned once
//! for all reductions), the variance is `mean((x - mean)^2)` (not
//! `E[x^2] - E[x]^2`, which cancels badly on data with an offset), and one
//! element-wise kernel, `Op::BatchNormalization`, applies
//! `(x - mean) / sqrt(variance + epsilon)`; scale and bias are `mul` and
//! `add` nodes. So every back end gets them from the same few kernels, and
//! the variance is computed the way onnxruntime computes it.

use super::{GraphBuilder, Operand};
use crate::error::{Error, Result};
use crate::ml::ops::{InputLayout, Op};
use crate::ml::shape;

fn invalid<T>(msg: String) -> Result<T> {
    Err(Error::invalid(msg))
}

impl GraphBuilder {
    /// `(x - mean) / sqrt(variance + epsilon)`, mean and variance broadcast.
    fn normalize(
        &self,
        input: &Operand,
        mean: &Operand,
        variance: &Operand,
        epsilon: f32,
    ) -> Result<Operand> {
        let out = shape::batch_normalization_core(&input.desc, &mean.desc, &variance.desc)?;
        self.single(
            Op::BatchNormalization { epsilon },
            &[input, mean, variance],
            out,
        )
    }

    /// Checks an optional operand of a normalization: the input's type and
    /// exactly `shape`.
    fn norm_operand(
        op: &str,
        what: &str,
        input: &Operand,
        o: Option<&Operand>,
        shape: &[usize],
    ) -> Result<()> {
        let Some(o) = o else { return Ok(()) };
        if o.data_type() != input.data_type() || o.shape() != shape {
            return invalid(format!(
                "{op}: {what} must be {} {shape:?}, got {}",
                input.data_type(),
                o.desc
            ));
        }
        Ok(())
    }

    /// Multiplies by `scale` and adds `bias` (each reshaped to `shape`, which
    /// broadcasts to `y`), where given.
    fn scale_and_bias(
        &self,
        mut y: Operand,
        scale: Option<&Operand>,
        bias: Option<&Operand>,
        shape: &[usize],
        order: Option<&[usize]>,
    ) -> Result<Operand> {
        let fit = |o: &Operand| -> Result<Operand> {
            let o = match order {
                Some(p) => self.transpose(o, Some(p))?,
                None => o.clone(),
            };
            if o.shape() == shape {
                Ok(o)
            } else {
                self.reshape(&o, shape)
            }
        };
        if let Some(s) = scale {
            y = self.mul(&y, &fit(s)?)?;
        }
        if let Some(b) = bias {
            y = self.add(&y, &fit(b)?)?;
        }
        Ok(y)
    }

    fn check_epsilon(op: &str, epsilon: f32) -> Result<()> {
        if epsilon.is_finite() && epsilon >= 0.0 {
            Ok(())
        } else {
            invalid(format!(
                "{op}: epsilon {epsilon} must be finite and not negative"
            ))
        }
    }

    /// mean and variance (`mean((x - mean)^2)`) of `input` over `axes`,
    /// dimensions kept.
    fn moments(&self, input: &Operand, axes: &[usize]) -> Result<(Operand, Operand)> {
        let mean = self.reduce_mean(input, Some(axes), true)?;
        let centred = self.sub(input, &mean)?;
        let variance = self.reduce_mean(&self.mul(&centred, &centred)?, Some(axes), true)?;
        Ok((mean, variance))
    }

    /// WebNN `layerNormalization`: normalizes over `axes` (distinct, any
    /// order); `scale` and `bias` are shaped `[input.shape[a] for a in
    /// axes]`. Empty axes normalize each element alone (giving `bias`, or 0).
    pub fn layer_normalization(
        &self,
        input: &Operand,
        scale: Option<&Operand>,
        bias: Option<&Operand>,
        axes: &[usize],
        epsilon: f32,
    ) -> Result<Operand> {
        let op = "layerNormalization";
        let mut ops = vec![input];
        ops.extend(scale);
        ops.extend(bias);
        self.check(op, &ops)?;
        shape::require_float(op, &input.desc)?;
        Self::check_epsilon(op, epsilon)?;
        let rank = input.desc.rank();
        let mut seen = vec![false; rank];
        if axes
            .iter()
            .any(|&a| a >= rank || std::mem::replace(&mut seen[a], true))
        {
            return invalid(format!(
                "{op}: axes {axes:?} must be distinct axes of {}",
                input.desc
            ));
        }
        let along: Vec<usize> = axes.iter().map(|&a| input.shape()[a]).collect();
        Self::norm_operand(op, "scale", input, scale, &along)?;
        Self::norm_operand(op, "bias", input, bias, &along)?;
        let (mean, variance) = self.moments(input, axes)?;
        let y = self.normalize(input, &mean, &variance, epsilon)?;
        // scale and bias follow `axes`' order; to broadcast they need the
        // input's, with size 1 along the other axes.
        let mut order: Vec<usize> = (0..axes.len()).collect();
        order.sort_by_key(|&i| axes[i]);
        let sorted = order.iter().enumerate().all(|(i, &p)| i == p);
        let shape: Vec<usize> = (0..rank)
            .map(|a| if seen[a] { input.shape()[a] } else { 1 })
            .collect();
        self.scale_and_bias(y, scale, bias, &shape, (!sorted).then_some(&order[..]))
    }

    /// WebNN `instanceNormalization`: normalizes each channel of each batch
    /// item over its height and width; `scale` and `bias` are `[channels]`.
    pub fn instance_normalization(
        &self,
        input: &Operand,
        scale: Option<&Operand>,
        bias: Option<&Operand>,
        epsilon: f32,
        layout: InputLayout,
    ) -> Result<Operand> {
        let op = "instanceNormalization";
        let mut ops = vec![input];
        ops.extend(scale);
        ops.extend(bias);
        self.check(op, &ops)?;
        shape::require_float(op, &input.desc)?;
        Self::check_epsilon(op, epsilon)?;
        let Ok(s) = <[usize; 4]>::try_from(input.shape()) else {
            return invalid(format!("{op}: input must be 4-D, got {}", input.desc));
        };
        let [_, c, _, _] = shape::nchw(layout, s);
        Self::norm_operand(op, "scale", input, scale, &[c])?;
        Self::norm_operand(op, "bias", input, bias, &[c])?;
        let spatial = match layout {
            InputLayout::Nchw => [2, 3],
            InputLayout::Nhwc => [1, 2],
        };
        let (mean, variance) = self.moments(input, &spatial)?;
        let y = self.normalize(input, &mean, &variance, epsilon)?;
        let shape = shape::from_nchw(layout, 1, c, 1, 1);
        self.scale_and_bias(y, scale, bias, &shape, None)
    }

    /// WebNN `batchNormalization`: `(x - mean) / sqrt(variance + epsilon)
    /// * scale + bias`, the four operands 1-D along `axis`.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_normalization(
        &self,
        input: &Operand,
        mean: &Operand,
        variance: &Operand,
        scale: Option<&Operand>,
        bias: Option<&Operand>,
        axis: usize,
        epsilon: f32,
    ) -> Result<Operand> {
        let op = "batchNormalization";
        let mut ops = vec![input, mean, variance];
        ops.extend(scale);
        ops.extend(bias);
        self.check(op, &ops)?;
        shape::require_float(op, &input.desc)?;
        Self::check_epsilon(op, epsilon)?;
        let rank = input.desc.rank();
        let Some(&c) = input.shape().get(axis) else {
            return invalid(format!("{op}: axis {axis} out of range for {}", input.desc));
        };
        for (what, o) in [
            ("mean", Some(mean)),
            ("variance", Some(variance)),
            ("scale", scale),
            ("bias", bias),
        ] {
            Self::norm_operand(op, what, input, o, &[c])?;
        }
        // [c, 1, ...]: numpy broadcasting aligns it with `axis`.
        let mut shape = vec![1; rank - axis];
        shape[0] = c;
        let fit = |o: &Operand| -> Result<Operand> {
            if o.shape() == shape {
                Ok(o.clone())
            } else {
                self.reshape(o, &shape)
            }
        };
        let y = self.normalize(input, &fit(mean)?, &fit(variance)?, epsilon)?;
        self.scale_and_bias(y, scale, bias, &shape, None)
    }

    /// `logSoftmax` along `axis`, numerically stable: with d = x - max,
    /// d - log(sum(exp(d))). Composed of reduceMax, sub and reduceLogSumExp.
    pub fn log_softmax(&self, input: &Operand, axis: usize) -> Result<Operand> {
        let op = "logSoftmax";
        self.check(op, &[input])?;
        shape::require_float(op, &input.desc)?;
        if axis >= input.desc.rank() {
            return invalid(format!("{op}: axis {axis} out of range for {}", input.desc));
        }
        let max = self.reduce_max(input, Some(&[axis]), true)?;
        let shifted = self.sub(input, &max)?;
        let log_sum = self.reduce_log_sum_exp(&shifted, Some(&[axis]), true)?;
        self.sub(&shifted, &log_sum)
    }
}
