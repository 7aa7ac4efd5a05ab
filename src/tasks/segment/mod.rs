//! [`Segmenter`]: a person mask from a segmentation model (MediaPipe selfie
//! segmentation and its kind) applied to the frame: the background blurred
//! or replaced, or the mask shown, with optional temporal smoothing.

mod cpu;
mod gpu;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::TransferStats;
use crate::ml::{DataType, Precision};
use crate::models::{Model, PrecisionChoice};
use crate::video::cpu::CpuFrame;
use crate::video::{ColorSpec, EdgeSoftening, FrameLayout, GpuFrame, MaskOptions, TexturePool};

use super::{
    wrong_device, BackgroundSpec, Device, GpuRun, ImageInput, ModelInstance, ModelTiming,
    StageMarks,
};
pub use gpu::GpuStages;

/// What the segmenter does with the mask.
#[derive(Clone, Debug, PartialEq)]
pub enum SegmentEffect {
    /// The frame passes through as RGBA; the model does not run.
    None,
    /// The mask as grey (white = person).
    Mask,
    /// The background blurred with a Gaussian of sigma `strength` frame
    /// pixels (up to [`MAX_BLUR_STRENGTH`](crate::video::MAX_BLUR_STRENGTH)).
    Blur { strength: f32 },
    /// The background replaced by a colour or an image stretched to the frame.
    Replace(BackgroundSpec),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SegmentOptions {
    pub effect: SegmentEffect,
    /// Hardens the mask's edge; `None` keeps the model's own probabilities.
    pub edge: Option<EdgeSoftening>,
    /// Weight of the previous frames' mask against flicker: 0 (off) to
    /// below 1.
    pub temporal: f32,
    /// How YUV frames convert to RGB.
    pub color: ColorSpec,
    /// What the model computes in ([`Model::build_with`]).
    pub precision: Precision,
}

impl SegmentOptions {
    /// `effect` with the model's own mask, no smoothing, BT.601 limited
    /// range, the model in float32.
    pub fn new(effect: SegmentEffect) -> SegmentOptions {
        SegmentOptions {
            effect,
            edge: None,
            temporal: 0.0,
            color: ColorSpec::default(),
            precision: Precision::F32,
        }
    }
}

/// What the segmenter needs to know of its model.
#[derive(Clone, Debug)]
struct SegmentModel {
    input: ImageInput,
    /// The input's (width, height).
    size: (u32, u32),
    /// Mask (width, height).
    mask: (u32, u32),
}

impl SegmentModel {
    /// A segmentation model takes one float32 RGB image of a declared size
    /// and gives one float32 single-channel mask [1, H, W, 1].
    fn of(model: &Model) -> Result<SegmentModel> {
        let bad = |what: String| {
            Error::invalid(format!(
                "{}: not a segmentation model: {what}",
                model.path().display()
            ))
        };
        let Some(output) = model.outputs().first() else {
            return Err(bad("it needs one image input and one mask output".into()));
        };
        let input = ImageInput::of(model)?;
        let Some(size) = input.size else {
            return Err(bad(format!(
                "input '{}' takes any size; a segmentation model declares its [1, height, \
                 width, 3]",
                input.name
            )));
        };
        let mask = match output.shape.as_slice() {
            [_, Some(h), Some(w), Some(1)] if *h > 0 && *w > 0 => (*w as u32, *h as u32),
            shape => {
                return Err(bad(format!(
                    "output shape {} is not [1, height, width, 1]",
                    super::image_input::shape_text(shape)
                )))
            }
        };
        if input.data_type != DataType::Float32 || output.data_type != DataType::Float32 {
            return Err(bad("input and output must be float32".into()));
        }
        Ok(SegmentModel { input, size, mask })
    }

    fn mask_options(&self, options: &SegmentOptions) -> MaskOptions {
        MaskOptions {
            width: self.mask.0,
            height: self.mask.1,
            edge: options.edge,
            temporal: options.temporal,
        }
    }
}

// Boxed: one per element, and the GPU one is twice the CPU one's size.
enum Imp {
    Gpu(Box<gpu::GpuSegmenter>),
    Cpu(Box<cpu::CpuSegmenter>),
}

/// Segments frames with one model and one set of options, on the GPU or
/// the CPU (see [`Device`]).
pub struct Segmenter {
    imp: Imp,
}

impl Segmenter {
    /// A segmenter with a model instance of its own.
    pub fn new(device: &Device, model: Arc<Model>, options: &SegmentOptions) -> Result<Segmenter> {
        SegmentModel::of(&model)?;
        Segmenter::with_instance(&ModelInstance::private(device, model)?, options)
    }

    /// A segmenter running `instance`'s model, on its device, its frames
    /// batched with those of the instance's other tasks.
    pub fn with_instance(
        instance: &Arc<ModelInstance>,
        options: &SegmentOptions,
    ) -> Result<Segmenter> {
        let shape = SegmentModel::of(instance.model())?;
        let imp = match instance.device() {
            Device::Gpu(gpu) => Imp::Gpu(Box::new(gpu::GpuSegmenter::new(
                gpu, instance, &shape, options,
            )?)),
            Device::Cpu => Imp::Cpu(Box::new(cpu::CpuSegmenter::new(instance, &shape, options)?)),
        };
        Ok(Segmenter { imp })
    }

    /// Checks that `model` is a segmentation model this task runs, and that
    /// a background image in `options` can be read, without building
    /// anything: for callers that want to fail early.
    pub fn check(model: &Model, options: &SegmentOptions) -> Result<()> {
        SegmentModel::of(model)?;
        if let SegmentEffect::Replace(BackgroundSpec::Image(path)) = &options.effect {
            BackgroundSpec::load_image(path)?;
        }
        Ok(())
    }

    /// What the model computes in, and why (`options.precision` resolved).
    pub fn precision(&self) -> &PrecisionChoice {
        match &self.imp {
            Imp::Gpu(g) => &g.precision,
            Imp::Cpu(c) => &c.precision,
        }
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self.imp, Imp::Cpu(_))
    }

    /// Whether the GPU path can time the model (the adapter has timestamp
    /// queries); never on the CPU.
    pub fn can_time_model(&self) -> bool {
        match &self.imp {
            Imp::Gpu(g) => g.can_time_model(),
            Imp::Cpu(_) => false,
        }
    }

    /// Segments `frame` into a new RGBA frame of its size (from a pool the
    /// segmenter keeps), and the model's GPU ms when `timing` asks.
    pub fn run_gpu(
        &mut self,
        frame: &GpuFrame,
        timing: ModelTiming,
    ) -> Result<(GpuFrame, Option<f64>)> {
        self.gpu("run_gpu")?.run(frame, timing)
    }

    /// Segments `frame` into `out` (an Rgba8Unorm texture with
    /// STORAGE_BINDING, the frame's size), calling `marks` around the video
    /// stages and timing the model as `timing` says.
    pub fn run_gpu_into(
        &mut self,
        frame: &GpuFrame,
        out: &wgpu::Texture,
        timing: ModelTiming,
        marks: Option<&mut dyn StageMarks>,
    ) -> Result<GpuRun> {
        self.gpu("run_gpu_into")?
            .run_into(frame, out, timing, marks)
    }

    /// [`Segmenter::run_gpu`] of a frame uploaded from `bytes` laid out as
    /// `layout` (into textures of `pool`): the frame's work is recorded
    /// while its bytes are copied and submitted with its upload, as in
    /// [`Segmenter::upload_run_gpu_into`]. For elements given frames in
    /// system memory.
    pub fn upload_run_gpu(
        &mut self,
        pool: &TexturePool,
        layout: &FrameLayout,
        bytes: &[u8],
        timing: ModelTiming,
    ) -> Result<(GpuFrame, Option<f64>)> {
        self.gpu("upload_run_gpu")?
            .upload_run(pool, layout, bytes, timing)
    }

    /// Uploads a frame laid out as `layout` from `bytes` (into textures of
    /// `pool`) and segments it into `out`, as [`Segmenter::run_gpu_into`]
    /// after [`upload_frame`](crate::video::upload_frame) does, but with
    /// the frame's work recorded while its bytes are copied and submitted
    /// with its upload, where the model is not batched with other users'
    /// frames or timed (one host thread's time per frame is then the
    /// upload's, not the upload's and the recording's). Returns the
    /// uploaded frame with the run.
    pub fn upload_run_gpu_into(
        &mut self,
        pool: &TexturePool,
        layout: &FrameLayout,
        bytes: &[u8],
        out: &wgpu::Texture,
        timing: ModelTiming,
        marks: Option<&mut dyn StageMarks>,
    ) -> Result<(GpuFrame, GpuRun)> {
        self.gpu("upload_run_gpu_into")?
            .upload_run_into(pool, layout, bytes, out, timing, marks)
    }

    /// The GPU stages one at a time, for callers that put their own work
    /// between them (wgnn-bench's copy path, which plays three separate
    /// system-memory elements).
    pub fn gpu_stages(&mut self) -> Result<GpuStages<'_>> {
        Ok(self.gpu("gpu_stages")?.stages())
    }

    /// Segments `frame` and writes the RGBA result into `out`, rows
    /// `out_stride` bytes apart (the bytes between rows are zeroed).
    pub fn run_cpu(&mut self, frame: &CpuFrame, out: &mut [u8], out_stride: usize) -> Result<()> {
        match &mut self.imp {
            Imp::Cpu(c) => c.run(frame, out, out_stride),
            Imp::Gpu(_) => Err(wrong_device("segmenter", "run_cpu", false)),
        }
    }

    /// The transfers made while setting up (a background image's upload),
    /// once: callers that count transfers per frame add them to the next.
    pub fn take_setup_transfers(&mut self) -> TransferStats {
        match &mut self.imp {
            Imp::Gpu(g) => g.take_setup_transfers(),
            Imp::Cpu(_) => TransferStats::default(),
        }
    }

    /// Forgets the previous frames' mask (after a seek or a flush).
    pub fn reset_temporal(&mut self) {
        match &mut self.imp {
            Imp::Gpu(g) => g.reset_temporal(),
            Imp::Cpu(c) => c.reset_temporal(),
        }
    }

    fn gpu(&mut self, call: &str) -> Result<&mut gpu::GpuSegmenter> {
        match &mut self.imp {
            Imp::Gpu(g) => Ok(g),
            Imp::Cpu(_) => Err(wrong_device("segmenter", call, true)),
        }
    }
}
