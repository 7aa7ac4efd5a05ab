//! [`Classifier`]: a classification model run on regions of a frame (each
//! object a detector found, or the whole frame), giving each region its best
//! classes.
//!
//! On the GPU each region is cropped and fitted to the model input by the
//! tensorize shader (no CPU work on pixels), the model runs, and its scores
//! are copied into one small buffer; one counted read-back per frame brings
//! every region's scores home, where softmax (when the model-proc says the
//! output is logits), top-k and the threshold are a few numbers' work. On
//! the CPU the same steps run on the CPU context and `video::cpu`.

mod scores;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::{Gpu, TransferStats};
use crate::ml::{DataType, Precision};
use crate::models::{Model, PrecisionChoice};
use crate::video::cpu::CpuFrame;
use crate::video::{ColorSpec, GpuFrame, Tensorizer};

use super::model_proc::Decoder;
use super::objects::{Classification, Labels, Rect};
use super::{
    wrong_device, Device, ImageInference, InferOptions, InferenceOutputs, ModelInstance, ModelProc,
};
use scores::{ranked, softmax, ScoresOutput};

/// What a classifier keeps of a region's scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassifyOptions {
    /// Most classes kept per region, best first; at least 1.
    pub top_k: usize,
    /// Classes scoring below this (after softmax, where applied) are dropped.
    pub threshold: f32,
    /// What the model computes in ([`Model::build_with`]).
    pub precision: Precision,
}

impl Default for ClassifyOptions {
    fn default() -> Self {
        ClassifyOptions {
            top_k: 1,
            threshold: 0.0,
            precision: Precision::F32,
        }
    }
}

/// Runs a classification model on regions of frames, on the GPU or the CPU
/// (see [`Device`]).
pub struct Classifier {
    inference: ImageInference,
    gpu: Option<Gpu>,
    output: ScoresOutput,
    softmax: bool,
    labels: Labels,
    options: ClassifyOptions,
    /// GPU: every region's scores of one frame, gathered for one read-back;
    /// grows to the most regions a frame has had.
    gathered: Option<crate::gpu::live::Buffer>,
}

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classifier")
            .field("output", &self.output)
            .field("softmax", &self.softmax)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Classifier {
    /// Checks that the model's first input is an image, that its scores
    /// output (the model-proc's `classification` decoder's `output`, else the
    /// first) is [1, C] or [C] of float32 or float16, that `labels` name all
    /// C classes (or there are none), and the options. Errors name the model
    /// file and the output.
    pub fn new(
        device: &Device,
        model: Arc<Model>,
        proc: Option<&ModelProc>,
        labels: Labels,
        options: ClassifyOptions,
        color: ColorSpec,
    ) -> Result<Classifier> {
        let instance = ModelInstance::private(device, model)?;
        Classifier::with_instance(&instance, proc, labels, options, color)
    }

    /// [`Classifier::new`] running `instance`'s model, on its device, its
    /// regions batched with those of the instance's other tasks.
    pub fn with_instance(
        instance: &Arc<ModelInstance>,
        proc: Option<&ModelProc>,
        labels: Labels,
        options: ClassifyOptions,
        color: ColorSpec,
    ) -> Result<Classifier> {
        let device = instance.device();
        let model = instance.model().clone();
        if options.top_k == 0 {
            return Err(Error::invalid(
                "classify: top-k is 0; it must be at least 1",
            ));
        }
        if !options.threshold.is_finite() {
            return Err(Error::invalid(format!(
                "classify: threshold {} is not a number",
                options.threshold
            )));
        }
        let (named, softmax) = match proc.and_then(|p| p.decoder.as_ref()) {
            None => (None, false),
            Some(Decoder::Classification(d)) => (d.output.clone(), d.softmax),
            Some(other) => {
                let path = proc
                    .map(|p| p.path.display().to_string())
                    .unwrap_or_default();
                return Err(Error::invalid(format!(
                    "model-proc {path}: decoder type '{}' does not classify; a classifier takes \
                     a 'classification' decoder or none",
                    other.kind()
                )));
            }
        };
        let infer = proc.map_or(
            InferOptions {
                color,
                ..InferOptions::default()
            },
            |p| p.infer_options(color),
        );
        let infer = InferOptions {
            precision: options.precision,
            ..infer
        };
        let inference = ImageInference::with_instance(instance, infer)?;
        let output = ScoresOutput::find(&model, inference.input(), named.as_deref())?;
        labels.check(output.classes)?;
        Ok(Classifier {
            inference,
            gpu: device.gpu().cloned(),
            output,
            softmax,
            labels,
            options,
            gathered: None,
        })
    }

    pub fn is_cpu(&self) -> bool {
        self.inference.is_cpu()
    }

    /// The model inference, for its instance and its timing.
    pub fn inference_mut(&mut self) -> &mut ImageInference {
        &mut self.inference
    }

    /// What the model computes in for the last region size, and why;
    /// `None` before the first region.
    pub fn precision(&self) -> Option<&PrecisionChoice> {
        self.inference.precision()
    }

    /// Classes the model scores.
    pub fn classes(&self) -> usize {
        self.output.classes
    }

    /// One list per region (frame pixels; an empty slice is not "whole
    /// frame": pass the frame's rect), best first, at most top-k, each at
    /// least the threshold. Returns what moved: each region's parameters up
    /// (a few dozen bytes) and one read-back of every region's scores.
    pub fn classify_gpu(
        &mut self,
        frame: &GpuFrame,
        regions: &[Rect],
    ) -> Result<(Vec<Vec<Classification>>, TransferStats)> {
        let gpu = match (&self.gpu, self.inference.is_cpu()) {
            (Some(gpu), false) => gpu.clone(),
            _ => return Err(wrong_device("classify", "classify_gpu", true)),
        };
        if regions.is_empty() {
            return Ok((Vec::new(), TransferStats::default()));
        }
        let stride = self.output.stride();
        let needed = stride * regions.len() as u64;
        if self.gathered.as_ref().is_none_or(|b| b.size() < needed) {
            self.gathered = Some(gpu.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgnn classify scores"),
                size: needed,
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })?);
        }
        let gathered = self.gathered.as_ref().expect("made just now");
        // All regions in one call: a batched instance takes them into as
        // few dispatches as it can.
        let boxes: Vec<[f32; 4]> = regions.iter().map(|r| [r.x, r.y, r.w, r.h]).collect();
        let sets = self.inference.run_gpu_regions(frame, &boxes)?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let mut lent = Vec::with_capacity(sets.len());
        for (i, outputs) in sets.iter().enumerate() {
            let scores = self.output.tensor(outputs)?;
            let rented = outputs.context().export_to_gpu(scores)?;
            encoder.copy_buffer_to_buffer(rented.buffer(), 0, gathered, i as u64 * stride, stride);
            lent.push(rented);
        }
        // Queued behind the regions' model runs and before any later run,
        // so the output sets can be reused once these copies are queued.
        gpu.submit("classify gather", [encoder.finish()])?;
        drop(lent);
        let bytes = gpu.download_buffer(gathered, 0, needed)?.wait()?;
        let moved = TransferStats {
            uploads: regions.len() as u64,
            upload_bytes: regions.len() as u64 * Tensorizer::region_upload_bytes(),
            downloads: 1,
            download_bytes: needed,
            ..Default::default()
        };
        let lists = bytes
            .chunks_exact(stride as usize)
            .map(|chunk| self.keep(self.output.values(chunk)))
            .collect();
        Ok((lists, moved))
    }

    /// [`Classifier::classify_gpu`] on the CPU.
    pub fn classify_cpu(
        &mut self,
        frame: &CpuFrame,
        regions: &[Rect],
    ) -> Result<Vec<Vec<Classification>>> {
        if !self.inference.is_cpu() {
            return Err(wrong_device("classify", "classify_cpu", false));
        }
        let mut lists = Vec::with_capacity(regions.len());
        for r in regions {
            let outputs = self.inference.run_cpu_region(frame, [r.x, r.y, r.w, r.h])?;
            let bytes = read(&outputs, self.output.tensor(&outputs)?)?;
            lists.push(self.keep(self.output.values(&bytes)));
        }
        Ok(lists)
    }

    /// Softmax where asked, then the best top-k at or above the threshold.
    fn keep(&self, mut scores: Vec<f32>) -> Vec<Classification> {
        if self.softmax {
            softmax(&mut scores);
        }
        ranked(&scores, self.options.top_k, self.options.threshold)
            .into_iter()
            .map(|(id, confidence)| Classification {
                label: self.labels.name(id),
                label_id: id,
                confidence,
            })
            .collect()
    }
}

/// The bytes of `tensor`, one of `outputs`' (waits for the model).
fn read(outputs: &InferenceOutputs, tensor: &crate::ml::Tensor) -> Result<Vec<u8>> {
    outputs.context().read_tensor_blocking(tensor)
}

/// The data types scores may come in.
fn score_type(data_type: DataType) -> Option<u64> {
    match data_type {
        DataType::Float32 => Some(4),
        DataType::Float16 => Some(2),
        _ => None,
    }
}
