//! A classifier's scores output: which of the model's outputs it is (checked
//! once), how its values read, softmax and the ranking.

use crate::error::{Error, Result};
use crate::ml::{DataType, Tensor};
use crate::models::Model;
use crate::tasks::{ImageInput, InferenceOutputs};

use super::score_type;

/// The model output holding the class scores.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ScoresOutput {
    pub name: String,
    pub classes: usize,
    pub data_type: DataType,
}

impl ScoresOutput {
    /// Output `named` (else the model's first) of `model`, checked to be
    /// [1, C] or [C] scores of float32 or float16.
    pub fn find(model: &Model, input: &ImageInput, named: Option<&str>) -> Result<ScoresOutput> {
        let file = model.path().display();
        let outputs = model.outputs();
        let index = match named {
            None if outputs.is_empty() => {
                return Err(Error::invalid(format!("{file}: the model has no output")))
            }
            None => 0,
            Some(name) => outputs.iter().position(|o| o.name == name).ok_or_else(|| {
                let names: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
                Error::invalid(format!(
                    "{file}: the model-proc's decoder.output '{name}' is not an output of the \
                     model (its outputs: {})",
                    names.join(", ")
                ))
            })?,
        };
        let info = &outputs[index];
        // A model that takes any size is asked at a typical classifier size:
        // its scores do not depend on it.
        let probe = input.build_size(input.size.unwrap_or((224, 224)));
        let shapes = model.output_shapes(probe)?;
        let shape = shapes.get(index).cloned().unwrap_or_default();
        let classes = match shape.as_slice() {
            [1, c] | [c] if *c > 0 => *c,
            _ => {
                return Err(Error::invalid(format!(
                    "{file}: output '{}' has shape {shape:?}; a classifier's scores must be \
                     [1, C] or [C]",
                    info.name
                )))
            }
        };
        if score_type(info.data_type).is_none() {
            return Err(Error::invalid(format!(
                "{file}: output '{}' is {}; a classifier's scores must be float32 or float16",
                info.name, info.data_type
            )));
        }
        Ok(ScoresOutput {
            name: info.name.clone(),
            classes,
            data_type: info.data_type,
        })
    }

    /// The scores tensor among one run's outputs.
    pub fn tensor<'a>(&self, outputs: &'a InferenceOutputs) -> Result<&'a Tensor> {
        outputs.tensor(&self.name).ok_or_else(|| {
            Error::invalid(format!(
                "classify: the model's graph has no output '{}'",
                self.name
            ))
        })
    }

    /// Bytes one region's scores take in a gathering buffer: whole 4-byte
    /// words, as buffer copies need (tensor storage is rounded up alike).
    pub fn stride(&self) -> u64 {
        let size = score_type(self.data_type).unwrap_or(4);
        (self.classes as u64 * size).div_ceil(4) * 4
    }

    /// The C scores at the start of `bytes`, as f32.
    pub fn values(&self, bytes: &[u8]) -> Vec<f32> {
        match self.data_type {
            DataType::Float16 => bytes
                .chunks_exact(2)
                .take(self.classes)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            _ => bytes
                .chunks_exact(4)
                .take(self.classes)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        }
    }
}

/// Softmax in place, shifted by the largest score so that large logits do
/// not overflow. NaN scores (a broken model) stay NaN and rank last.
pub(super) fn softmax(scores: &mut [f32]) {
    let max = scores
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return;
    }
    let mut sum = 0.0;
    for v in scores.iter_mut() {
        *v = (*v - max).exp();
        if !v.is_nan() {
            sum += *v;
        }
    }
    for v in scores.iter_mut() {
        *v /= sum;
    }
}

/// (class id, score) of the best `top_k` scores at or above `threshold`,
/// best first; ties keep the lower id first. NaN never qualifies.
pub(super) fn ranked(scores: &[f32], top_k: usize, threshold: f32) -> Vec<(usize, f32)> {
    let mut kept: Vec<(usize, f32)> = scores
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| *v >= threshold)
        .collect();
    kept.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    kept.truncate(top_k);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_of_known_logits() {
        let mut v = [0.0, (2.0f32).ln(), 1000.0, f32::NAN];
        softmax(&mut v[..2]);
        assert!((v[0] - 1.0 / 3.0).abs() < 1e-6 && (v[1] - 2.0 / 3.0).abs() < 1e-6);
        let mut big = [1000.0, 1000.0];
        softmax(&mut big);
        assert_eq!(big, [0.5, 0.5], "no overflow");
        softmax(&mut v[3..]);
        assert!(v[3].is_nan());
    }

    #[test]
    fn ranking_keeps_the_best_at_or_above_the_threshold() {
        let s = [0.1, 0.7, f32::NAN, 0.7, 0.3];
        assert_eq!(ranked(&s, 2, 0.0), [(1, 0.7), (3, 0.7)]);
        assert_eq!(ranked(&s, 10, 0.3), [(1, 0.7), (3, 0.7), (4, 0.3)]);
        assert_eq!(ranked(&s, 1, 0.8), []);
    }
}
