//! What wgnn does with a model and a video frame, without GStreamer: the
//! product logic the elements, `wgnn-bench` and library users share.
//!
//! - [`ImageInput::of`] decides how a frame becomes a model's input (size,
//!   layout, value range, channel order, data type) for every task;
//! - [`Segmenter`]: tensorize -> model -> composite (background blur,
//!   replacement, the mask, temporal smoothing);
//! - [`Upscaler`]: tensorize -> model -> image out (with a bicubic | model
//!   comparison);
//! - [`ImageInference`]: frame -> model input -> graph -> output tensors;
//! - [`Classifier`]: regions of a frame -> crop in the tensorizer -> model
//!   -> the best classes of each.
//! - [`Detector`]: image inference -> decoder (SSD anchors, YOLO) -> NMS ->
//!   objects in frame pixels.
//! - [`track::Tracker`]: persistent ids for the objects of successive
//!   frames (IoU or ByteTrack), on boxes only.
//!
//! Each task runs on the GPU or the CPU, as the [`Device`] it is made for
//! says: on the GPU it takes [`GpuFrame`](crate::video::GpuFrame)s and keeps
//! everything on the device (the model's tensors are rented to the video
//! shaders, nothing is read back); on the CPU it takes
//! [`CpuFrame`](crate::video::cpu::CpuFrame)s and writes system memory.
//! The GPU paths can mark their stages for callers that time them
//! ([`StageMarks`], [`ModelTiming`]).

pub mod analytics;
mod background;
mod classify;
mod context;
mod detect;
mod image_input;
mod infer;
pub mod instance;
mod mask;
pub mod model_proc;
mod objects;
pub mod publish;
mod segment;
mod stages;
#[cfg(test)]
mod tests;
mod timing;
mod torchvision;
pub mod track;
mod ultralytics;
mod upscale;

pub use background::BackgroundSpec;
pub use classify::{Classifier, ClassifyOptions};
pub use detect::{DetectOptions, Detector, PendingDetections, MAX_CANDIDATES};
pub use image_input::ImageInput;
pub use infer::{ImageInference, InferOptions, InferenceOutputs};
pub use instance::{BatchOptions, BatchRun, InstanceStats, Member, ModelInstance};
pub use mask::{Extras, Mask, MaskJson};
pub use model_proc::ModelProc;
pub use objects::{Classification, Detection, FrameResults, Labels, ObjectResult, Rect};
pub use segment::{GpuStages, SegmentEffect, SegmentOptions, Segmenter};
pub use stages::HostStages;
pub use timing::{GpuRun, ModelTiming, Stage, StageMarks};
pub use upscale::{UpscaleOptions, Upscaler};

use crate::error::Result;
use crate::gpu::Gpu;
use crate::ml::{Context, Graph, Precision};
use crate::models::{Model, PrecisionChoice};

/// `model`'s graph for `context` at `input_hw` in `precision`, and what
/// `precision` settled on (`Auto` probes once per context and size).
pub(crate) fn build_graph(
    model: &Model,
    context: &Context,
    input_hw: Option<(usize, usize)>,
    precision: Precision,
) -> Result<(Graph, PrecisionChoice)> {
    let choice = model.choose_precision(context, input_hw, precision)?;
    let graph = model.build_with(context, input_hw, choice.precision)?;
    Ok((graph, choice))
}

/// Where a task runs its model and its frame processing.
#[derive(Clone, Debug)]
pub enum Device {
    Gpu(Gpu),
    /// wgnn's CPU context and `video::cpu`, on system memory.
    Cpu,
}

impl Device {
    pub fn gpu(&self) -> Option<&Gpu> {
        match self {
            Device::Gpu(gpu) => Some(gpu),
            Device::Cpu => None,
        }
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// "the CPU", or the adapter's description.
    pub fn describe(&self) -> String {
        match self {
            Device::Gpu(gpu) => gpu.describe(),
            Device::Cpu => "CPU".into(),
        }
    }
}

impl From<Option<Gpu>> for Device {
    fn from(gpu: Option<Gpu>) -> Self {
        gpu.map_or(Device::Cpu, Device::Gpu)
    }
}

/// The error of calling a task's GPU entry point on its CPU implementation
/// or the other way round.
fn wrong_device(task: &str, call: &str, made_for_cpu: bool) -> crate::Error {
    let (made, other) = if made_for_cpu {
        ("CPU", "GPU")
    } else {
        ("GPU", "CPU")
    };
    crate::Error::invalid(format!(
        "{task}: {call} takes {other} frames, but this {task} was made for the {made}"
    ))
}
