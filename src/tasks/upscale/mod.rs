//! [`Upscaler`]: super-resolution with an image-to-image model that gives an
//! RGB image `scale` times larger in 0..255 (UpscalerJS's ESRGAN-slim x2,
//! x3, x4 and its kind), optionally beside a bicubic upscale of the input.

mod cpu;
mod gpu;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ml::{DataType, OperandDescriptor, Precision};
use crate::models::{Model, PrecisionChoice};
use crate::video::cpu::CpuFrame;
use crate::video::{ColorSpec, GpuFrame, ImageRegion, Normalize, TensorizeOptions};

use super::{wrong_device, Device, GpuRun, ImageInput, ModelTiming, StageMarks};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpscaleOptions {
    /// The model's upscaling factor.
    pub scale: u32,
    /// Side by side: bicubic upscaling on the left, the model on the right
    /// (the output is twice as wide).
    pub compare: bool,
    /// How YUV frames convert to RGB.
    pub color: ColorSpec,
    /// What the model computes in ([`Model::build_with`]), per input size.
    pub precision: Precision,
}

impl UpscaleOptions {
    /// `scale`, the model alone, BT.601 limited range, float32.
    pub fn new(scale: u32) -> UpscaleOptions {
        UpscaleOptions {
            scale,
            compare: false,
            color: ColorSpec::default(),
            precision: Precision::F32,
        }
    }

    /// The output (width, height) for a `w` x `h` input.
    pub fn output_size(&self, w: u32, h: u32) -> (u32, u32) {
        let k = if self.compare { 2 } else { 1 };
        (w * self.scale * k, h * self.scale)
    }

    /// Where the model's picture goes in the output of a `w` x `h` input:
    /// the right half when comparing.
    fn model_region(&self, w: u32, h: u32) -> ImageRegion {
        let (sw, sh) = (w * self.scale, h * self.scale);
        ImageRegion {
            x0: if self.compare { sw } else { 0 },
            width: sw,
            height: sh,
        }
    }

    /// Where the bicubic picture goes when comparing: the left half.
    fn bicubic_region(&self, w: u32, h: u32) -> ImageRegion {
        ImageRegion {
            x0: 0,
            width: w * self.scale,
            height: h * self.scale,
        }
    }

    /// The frame as plain 0..255 RGB at its own size, NHWC float32: the
    /// source of the bicubic half.
    fn plain_tensorize(&self, w: u32, h: u32) -> TensorizeOptions {
        TensorizeOptions {
            normalize: Normalize::RAW,
            color: self.color,
            ..TensorizeOptions::new(w, h)
        }
    }
}

/// Checks the graph built for a `w` x `h` input gives the float32
/// [1, h * scale, w * scale, 3] image the output needs.
fn check_output(model: &Model, out: &OperandDescriptor, w: u32, h: u32, scale: u32) -> Result<()> {
    let (s, sw, sh) = (scale as usize, w as usize, h as usize);
    if out.shape != [1, sh * s, sw * s, 3] || out.data_type != DataType::Float32 {
        return Err(Error::invalid(format!(
            "{}: for a {w}x{h} input the model gives {out}, not the float32 [1, {}, {}, 3] \
             image that scale={s} needs",
            model.path().display(),
            sh * s,
            sw * s
        )));
    }
    Ok(())
}

enum Imp {
    Gpu(Box<gpu::GpuUpscaler>),
    Cpu(Box<cpu::CpuUpscaler>),
}

/// Upscales frames with one model, on the GPU or the CPU (see [`Device`]).
/// A model that takes any size is built once per input size met.
pub struct Upscaler {
    options: UpscaleOptions,
    imp: Imp,
}

impl Upscaler {
    pub fn new(device: &Device, model: Arc<Model>, options: UpscaleOptions) -> Result<Upscaler> {
        let input = Upscaler::check(&model, options.scale)?;
        let imp = match device {
            Device::Gpu(gpu) => {
                Imp::Gpu(Box::new(gpu::GpuUpscaler::new(gpu, model, input, options)?))
            }
            Device::Cpu => Imp::Cpu(Box::new(cpu::CpuUpscaler::new(model, input, options))),
        };
        Ok(Upscaler { options, imp })
    }

    /// Checks that `model` takes one float32 image and gives one image
    /// `scale` times larger, on a small probe size (its own where it declares
    /// one), without compiling anything; returns its input.
    pub fn check(model: &Model, scale: u32) -> Result<ImageInput> {
        let bad = |what: String| {
            Error::invalid(format!(
                "{}: not a super-resolution model for scale={scale}: {what}",
                model.path().display()
            ))
        };
        if model.inputs().len() != 1 || model.outputs().is_empty() {
            return Err(bad("it needs one image input and an image output".into()));
        }
        let input = ImageInput::of(model)?;
        if input.data_type != DataType::Float32 {
            return Err(bad(format!("input '{}' is not float32", input.name)));
        }
        let probe = input.size.map_or((8, 8), |(w, h)| (h as usize, w as usize));
        let shapes = model.output_shapes(Some(probe))?;
        let s = scale as usize;
        if shapes[0] != [1, probe.0 * s, probe.1 * s, 3] {
            return Err(bad(format!(
                "a {}x{} input gives {:?}, not [1, {}, {}, 3]",
                probe.1,
                probe.0,
                shapes[0],
                probe.0 * s,
                probe.1 * s
            )));
        }
        Ok(input)
    }

    pub fn options(&self) -> &UpscaleOptions {
        &self.options
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self.imp, Imp::Cpu(_))
    }

    /// What the model computes in for the last input size, and why; `None`
    /// before the first frame (graphs are built per input size).
    pub fn precision(&self) -> Option<&PrecisionChoice> {
        match &self.imp {
            Imp::Gpu(g) => g.precision(),
            Imp::Cpu(c) => c.precision(),
        }
    }

    /// The output (width, height) for a `w` x `h` input.
    pub fn output_size(&self, w: u32, h: u32) -> (u32, u32) {
        self.options.output_size(w, h)
    }

    /// Upscales `frame` into a new RGBA frame (from a pool the upscaler keeps).
    pub fn run_gpu(&mut self, frame: &GpuFrame) -> Result<GpuFrame> {
        match &mut self.imp {
            Imp::Gpu(g) => g.run(frame),
            Imp::Cpu(_) => Err(wrong_device("upscaler", "run_gpu", true)),
        }
    }

    /// Upscales `frame` into `out` (Rgba8Unorm with STORAGE_BINDING, of
    /// [`Upscaler::output_size`]), calling `marks` around the video stages
    /// and timing the model as `timing` says.
    pub fn run_gpu_into(
        &mut self,
        frame: &GpuFrame,
        out: &wgpu::Texture,
        timing: ModelTiming,
        marks: Option<&mut dyn StageMarks>,
    ) -> Result<GpuRun> {
        match &mut self.imp {
            Imp::Gpu(g) => g.run_into(frame, out, timing, marks),
            Imp::Cpu(_) => Err(wrong_device("upscaler", "run_gpu_into", true)),
        }
    }

    /// Upscales `frame` into the RGBA rows of `out`, `out_stride` bytes
    /// apart, of [`Upscaler::output_size`] (the bytes between rows are
    /// zeroed).
    pub fn run_cpu(&mut self, frame: &CpuFrame, out: &mut [u8], out_stride: usize) -> Result<()> {
        match &mut self.imp {
            Imp::Cpu(c) => c.run(frame, out, out_stride),
            Imp::Gpu(_) => Err(wrong_device("upscaler", "run_cpu", false)),
        }
    }
}
