//! [`Detector`]: object detection on frames, as a model-proc's decoder says.
//!
//! - **`ssd-anchors`**: MediaPipe's SSD decoding (`SsdAnchorsCalculator`
//!   anchors, `TensorsToDetectionsCalculator` boxes, keypoints and sigmoid
//!   scores) and its weighted non-maximum suppression;
//! - **`yolo`**: the YOLOv5 layout `[1, N, 5 + C]` (score = objectness x
//!   best class) and the YOLOv8/v11 layout `[1, 4 + C, N]` (score = best
//!   class), boxes in input pixels or 0..1, class-aware hard NMS; with
//!   Ultralytics' segment (masks, `masks.rs`), pose (keypoints with scores)
//!   and obb (rotated boxes, rotated NMS) heads (`heads.rs`).
//!
//! On the GPU the frame is tensorized into the model input, the model runs,
//! and one compute shader (`decode.wgsl`) thresholds every box, decodes the
//! ones that pass and compacts them with an atomic counter into a buffer of
//! at most [`MAX_CANDIDATES`] records; only the counter and the records are
//! read back (one read of at most 4 KB, a second only when more passed than
//! fit in it). NMS and the mapping back to frame pixels (the inverse of the
//! stretch, letterbox or crop that filled the input) run on the CPU on that
//! short list. On the CPU the same Rust decoders read the whole outputs.
//! Scores are thresholded exactly alike on both: sigmoid scores by their
//! logit against the logit of the threshold, worked out on the CPU.

mod anchors;
mod decode;
mod gpu;
mod heads;
mod listed;
mod masks;
mod pending;
mod post;
mod spec;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::gpu::{Gpu, TransferStats};
use crate::ml::{DataType, Precision};
use crate::models::{Model, PrecisionChoice};
use crate::video::cpu::CpuFrame;
use crate::video::{ColorSpec, GpuFrame, Resize};

use super::model_proc::{Decoder, ModelProc};
use super::objects::{Detection, Labels};
use super::stages::timed;
use super::{
    wrong_device, Device, HostStages, ImageInference, ImageInput, InferOptions, InferenceOutputs,
    ModelInstance,
};
use gpu::GpuDecoder;
use masks::{GpuMasks, MaskJob, ProtoGrid};
use pending::AwaitedRecords;
pub use pending::PendingDetections;
use post::ToFrame;
pub use post::MAX_CANDIDATES;
use spec::{OutputInfo, Scheme, Spec};

/// Thresholds that override the model-proc's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DetectOptions {
    /// Minimum confidence; `None`: the model-proc's, else 0.5.
    pub threshold: Option<f32>,
    /// IoU above which NMS merges or drops boxes; `None`: the model-proc's,
    /// else 0.45.
    pub iou_threshold: Option<f32>,
    /// What the model computes in ([`Model::build_with`]).
    pub precision: Precision,
}

/// What is built for one model input size: the checked decoder and, on
/// the GPU, its pass.
struct Prepared {
    size: (u32, u32),
    spec: Arc<Spec>,
    gpu: Option<GpuDecoder>,
    /// Segment models on the GPU: the mask pass.
    masks: Option<GpuMasks>,
}

/// Runs a detection model on frames, on the GPU or the CPU (see [`Device`]),
/// and returns the objects in frame pixels, best first.
pub struct Detector {
    inference: ImageInference,
    model: Arc<Model>,
    decoder: Decoder,
    labels: Arc<Labels>,
    threshold: f32,
    iou: f32,
    resize: Resize,
    gpu: Option<Gpu>,
    prepared: Option<Prepared>,
    /// The host time of the last GPU frame, by stage.
    stages: HostStages,
}

impl std::fmt::Debug for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detector")
            .field("model", &self.model.path())
            .field("decoder", &self.decoder.kind())
            .field("threshold", &self.threshold)
            .field("iou", &self.iou)
            .finish_non_exhaustive()
    }
}

impl Detector {
    /// Checks the model-proc's decoder against the model's outputs (errors
    /// say which output and which shape was expected vs found), the labels
    /// against the class count, and the thresholds. A model that takes any
    /// input size is checked on its first frame.
    pub fn new(
        device: &Device,
        model: Arc<Model>,
        proc: &ModelProc,
        labels: Labels,
        options: DetectOptions,
        color: ColorSpec,
    ) -> Result<Detector> {
        let instance = ModelInstance::private(device, model)?;
        Detector::with_instance(&instance, proc, labels, options, color)
    }

    /// [`Detector::new`] running `instance`'s model, on its device, its
    /// frames batched with those of the instance's other tasks.
    pub fn with_instance(
        instance: &Arc<ModelInstance>,
        proc: &ModelProc,
        labels: Labels,
        options: DetectOptions,
        color: ColorSpec,
    ) -> Result<Detector> {
        let device = instance.device();
        let model = instance.model().clone();
        let decoder = match &proc.decoder {
            Some(
                d @ (Decoder::SsdAnchors(_) | Decoder::Yolo(_) | Decoder::BoxesScoresLabels(_)),
            ) => d.clone(),
            Some(other) => {
                return Err(Error::invalid(format!(
                    "{}: decoder {} does not detect objects; detection needs ssd-anchors or yolo",
                    proc.path.display(),
                    other.kind()
                )))
            }
            None => {
                return Err(Error::invalid(format!(
                    "model-proc {}: no decoder; detection needs one (ssd-anchors or yolo)",
                    proc.path.display()
                )))
            }
        };
        let threshold = options.threshold.or(proc.threshold).unwrap_or(0.5);
        let iou = options.iou_threshold.or(proc.iou_threshold).unwrap_or(0.45);
        for (name, v) in [("threshold", threshold), ("iou-threshold", iou)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::invalid(format!(
                    "detect: {name} is {v}; it must be between 0 and 1"
                )));
            }
        }
        let infer = InferOptions {
            precision: options.precision,
            ..proc.infer_options(color)
        };
        let inference = ImageInference::with_instance(instance, infer)?;
        let mut detector = Detector {
            inference,
            model,
            decoder,
            labels: Arc::new(labels),
            threshold,
            iou,
            resize: infer.resize,
            gpu: device.gpu().cloned(),
            prepared: None,
            stages: HostStages::default(),
        };
        if let Some(size) = detector.inference.input().size {
            detector.prepare(size)?;
        }
        Ok(detector)
    }

    pub fn is_cpu(&self) -> bool {
        self.inference.is_cpu()
    }

    /// The model inference, for its instance and its timing.
    pub fn inference_mut(&mut self) -> &mut ImageInference {
        &mut self.inference
    }

    /// Where the last [`Detector::detect_gpu`] spent its host time.
    pub fn last_stages(&self) -> HostStages {
        self.stages
    }

    /// What the model computes in for the last frame size, and why; `None`
    /// before the first frame.
    pub fn precision(&self) -> Option<&PrecisionChoice> {
        self.inference.precision()
    }

    pub fn input(&self) -> &ImageInput {
        self.inference.input()
    }

    /// The decoder (and its GPU pass) for a model input of `size`.
    fn prepare(&mut self, size: (u32, u32)) -> Result<()> {
        if self.prepared.as_ref().is_some_and(|p| p.size == size) {
            return Ok(());
        }
        self.prepared = None;
        let model = &self.model;
        let shapes = model.output_shapes(self.inference.input().build_size(size))?;
        if shapes.len() != model.outputs().len() {
            return Err(Error::invalid(format!(
                "{}: the model lists {} outputs but its graph gives {}",
                model.path().display(),
                model.outputs().len(),
                shapes.len()
            )));
        }
        let outputs: Vec<OutputInfo> = model
            .outputs()
            .iter()
            .zip(shapes)
            .map(|(o, shape)| OutputInfo {
                name: o.name.clone(),
                shape,
                data_type: o.data_type,
            })
            .collect();
        let spec = Spec::new(model.path(), &self.decoder, &outputs, size, self.threshold)?;
        self.labels
            .check(spec.classes)
            .map_err(|e| match &self.decoder {
                // A YOLO layout read the wrong way round makes another class
                // count: say how the output was read.
                Decoder::Yolo(y) => Error::invalid(format!(
                    "{e} (decoder yolo: output '{}' {:?} read as {}: {} boxes of {} classes)",
                    spec.boxes.name,
                    spec.boxes.shape,
                    y.layout.name(),
                    spec.n,
                    spec.classes
                )),
                _ => e,
            })?;
        let gpu = match &self.gpu {
            Some(gpu) => Some(GpuDecoder::new(gpu, &spec)?),
            None => None,
        };
        let masks = match (&self.gpu, &spec.protos) {
            (Some(gpu), Some((protos, _))) => Some(GpuMasks::new(gpu, protos.data_type)?),
            _ => None,
        };
        self.prepared = Some(Prepared {
            size,
            spec: Arc::new(spec),
            gpu,
            masks,
        });
        Ok(())
    }

    /// GPU: tensorize + model + the decode/threshold/compact shader; only
    /// the compact list is read back. The stats are what this call moved
    /// (the read-backs, and the first time the decoder's set-up uploads).
    /// [`Detector::submit_gpu`], waited for at once.
    pub fn detect_gpu(&mut self, frame: &GpuFrame) -> Result<(Vec<Detection>, TransferStats)> {
        let (found, moved, stages) = self.submit_gpu(frame)?.finish()?;
        self.stages = stages;
        Ok((found, moved))
    }

    /// [`Detector::detect_gpu`] without waiting for the GPU: the frame's
    /// work is submitted and the read-back of its list started; the
    /// detections come from [`PendingDetections::finish`], so that the
    /// caller may submit further frames meanwhile. A segment model's masks
    /// read the model's outputs, which the next frame overwrites: its
    /// frame is finished here.
    pub fn submit_gpu(&mut self, frame: &GpuFrame) -> Result<PendingDetections> {
        if self.is_cpu() {
            return Err(wrong_device("detector", "submit_gpu", true));
        }
        let frame_size = (frame.width(), frame.height());
        let size = self.inference.input().size_for(frame_size);
        self.prepare(size)?;
        let Some(p) = self.prepared.as_mut() else {
            unreachable!("prepared just now");
        };
        let Some(decoder) = p.gpu.as_mut() else {
            unreachable!("a GPU detector prepares a GPU decoder");
        };
        let spec = &p.spec;
        // The decode pass and the copy of its records for reading back go
        // in the model's submission (the batch's, where it batches).
        let mut result = Duration::ZERO;
        let mut recorded = None;
        let outputs = self
            .inference
            .run_gpu_then(frame, &mut |outputs, encoder| {
                let r = timed(&mut result, || {
                    record_decode(decoder, spec, outputs, encoder)
                })?;
                recorded = Some(r);
                Ok(())
            })?;
        let mut stages = self.inference.last_batch().stages;
        stages.result += result;
        let (Some(recorded), Some(submission)) = (recorded, self.inference.last_batch().submission)
        else {
            return Err(Error::invalid(
                "detect: the model ran without its decode pass",
            ));
        };
        let records = recorded.start(submission);
        let ctx = outputs.context();
        let awaited = AwaitedRecords {
            records,
            spec: spec.clone(),
            model: self.model.clone(),
            labels: self.labels.clone(),
            iou: self.iou,
            to_frame: ToFrame::new(self.resize, size, frame_size),
        };
        let (Some((protos, _)), Some(pass)) = (&spec.protos, &p.masks) else {
            return Ok(PendingDetections::awaiting(awaited, stages));
        };
        let to_frame = awaited.to_frame;
        let (found, mut stats) = awaited.found(&mut stages)?;
        let jobs = mask_jobs(&found);
        let protos = ctx.export_to_gpu(output(&outputs, &protos.name)?)?;
        let (masks, moved) = timed(&mut stages.result, || {
            pass.run((&protos).into(), proto_grid(spec), &to_frame, &jobs)
        })?;
        stats += moved;
        Ok(PendingDetections::done(
            with_masks(found, masks),
            stats,
            stages,
        ))
    }

    /// CPU: tensorize + model on the CPU context, then the same decoders on
    /// the whole outputs.
    pub fn detect_cpu(&mut self, frame: &CpuFrame) -> Result<Vec<Detection>> {
        if !self.is_cpu() {
            return Err(wrong_device("detector", "detect_cpu", false));
        }
        let frame_size = (frame.width(), frame.height());
        let size = self.inference.input().size_for(frame_size);
        self.prepare(size)?;
        let outputs = self.inference.run_cpu(frame)?;
        let Some(p) = self.prepared.as_ref() else {
            unreachable!("prepared just now");
        };
        let spec = &p.spec;
        let boxes = read_values(&outputs, &spec.boxes.name)?;
        let candidates = if let Scheme::Listed { labels, .. } = &spec.scheme {
            let scores = read_values(&outputs, &spec.scores.name)?;
            let labels = output(&outputs, &labels.name)?;
            let labels = outputs.context().read_tensor_blocking(labels)?;
            spec.decode_listed(&boxes, &scores, &bytemuck::pod_collect_to_vec(&labels))
        } else if spec.scores.name == spec.boxes.name {
            spec.decode(&boxes, &boxes)
        } else {
            spec.decode(&boxes, &read_values(&outputs, &spec.scores.name)?)
        };
        spec.check_scores(self.model.path(), &candidates)?;
        let to_frame = ToFrame::new(self.resize, size, frame_size);
        let found = post::detections(spec, candidates, self.iou, &to_frame, &self.labels);
        let Some((protos, _)) = &spec.protos else {
            return Ok(found.into_iter().map(|(d, _)| d).collect());
        };
        let protos = read_values(&outputs, &protos.name)?;
        let masks = masks::masks_cpu(&protos, proto_grid(spec), &to_frame, &mask_jobs(&found));
        Ok(with_masks(found, masks))
    }
}

fn proto_grid(spec: &Spec) -> ProtoGrid {
    ProtoGrid {
        dims: spec.protos.as_ref().map_or([0; 3], |(_, dims)| *dims),
        input: spec.input,
    }
}

fn mask_jobs(found: &[(Detection, decode::Candidate)]) -> Vec<MaskJob> {
    found
        .iter()
        .map(|(d, c)| MaskJob::new(&d.rect, c.corners, c.extras.clone()))
        .collect()
}

fn with_masks(
    found: Vec<(Detection, decode::Candidate)>,
    masks: Vec<masks::Mask>,
) -> Vec<Detection> {
    found
        .into_iter()
        .zip(masks)
        .map(|((mut d, _), m)| {
            d.extras.mask = Some(m);
            d
        })
        .collect()
}

/// Records `decoder`'s pass over `outputs` and the copy of its records
/// into `encoder`; the outputs' rentals are back when it returns.
fn record_decode(
    decoder: &mut GpuDecoder,
    spec: &Spec,
    outputs: &InferenceOutputs,
    encoder: &mut wgpu::CommandEncoder,
) -> Result<gpu::RecordedRecords> {
    let ctx = outputs.context();
    let boxes = ctx.export_to_gpu(output(outputs, &spec.boxes.name)?)?;
    let labels = match &spec.scheme {
        Scheme::Listed { labels, .. } => Some(ctx.export_to_gpu(output(outputs, &labels.name)?)?),
        _ => None,
    };
    let labels = labels.as_ref().map(Into::into);
    if spec.scores.name == spec.boxes.name {
        return decoder.record(spec, (&boxes).into(), (&boxes).into(), labels, encoder);
    }
    let scores = ctx.export_to_gpu(output(outputs, &spec.scores.name)?)?;
    decoder.record(spec, (&boxes).into(), (&scores).into(), labels, encoder)
}

fn output<'a>(outputs: &'a InferenceOutputs, name: &str) -> Result<&'a crate::ml::Tensor> {
    outputs.tensor(name).ok_or_else(|| {
        Error::invalid(format!(
            "detect: the model's graph has no output '{name}' (it has {})",
            outputs
                .tensors()
                .iter()
                .map(|(n, _)| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// An output's values as f32 (float16 widened).
fn read_values(outputs: &InferenceOutputs, name: &str) -> Result<Vec<f32>> {
    let t = output(outputs, name)?;
    let ctx = outputs.context();
    match t.data_type() {
        DataType::Float32 => ctx.read_f32(t),
        DataType::Float16 => {
            let bytes = ctx.read_tensor_blocking(t)?;
            Ok(bytemuck::pod_collect_to_vec::<u8, half::f16>(&bytes)
                .into_iter()
                .map(f32::from)
                .collect())
        }
        other => Err(Error::invalid(format!(
            "detect: output '{name}' is {other}; the decoder reads float32 or float16"
        ))),
    }
}
