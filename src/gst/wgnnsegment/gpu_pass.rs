//! One segmentation pass on the GPU: the frame is tensorized straight into the
//! rented model input, the model runs on GPU-resident tensors, and the
//! compositor reads the rented mask to write the output frame. Nothing is read
//! back.

use crate::error::{Error, Result};
use crate::gpu::transfer::TextureRegion;
use crate::gpu::{Gpu, TransferStats};
use crate::ml::{Context, DataType, Graph, Tensor, TensorDescriptor};
use crate::models::Model;
use crate::video::{
    create_rgba_texture, Background, CompositeOptions, Compositor, Effect, GpuFrame, MaskOptions,
    Normalize, TensorizeOptions, Tensorizer, TexturePool,
};

use super::background::BackgroundSpec;

/// What the pass needs to know of the model: its input size and value range
/// and its mask size.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelShape {
    pub input: (u32, u32),
    pub normalize: Normalize,
    pub mask: (u32, u32),
}

impl ModelShape {
    /// A segmentation model takes one NHWC RGB image of a declared size and
    /// gives one NHWC single-channel mask.
    pub fn of(model: &Model) -> Result<ModelShape> {
        let bad = |what: String| {
            Error::invalid(format!(
                "{}: not a segmentation model wgnnsegment can run: {what}",
                model.path().display()
            ))
        };
        let (Some(input), Some(output)) = (model.inputs().first(), model.outputs().first()) else {
            return Err(bad("it needs one image input and one mask output".into()));
        };
        let dims = |shape: &[Option<usize>], channels: usize, what: &str| match shape {
            [_, Some(h), Some(w), Some(c)] if *c == channels && *h > 0 && *w > 0 => {
                Ok((*w as u32, *h as u32))
            }
            _ => Err(bad(format!(
                "{what} shape {shape:?} is not [1, height, width, {channels}]"
            ))),
        };
        let (iw, ih) = dims(&input.shape, 3, "input")?;
        let (mw, mh) = dims(&output.shape, 1, "output")?;
        if input.data_type != DataType::Float32 || output.data_type != DataType::Float32 {
            return Err(bad("input and output must be float32".into()));
        }
        let [lo, hi] = input.range.unwrap_or([0.0, 1.0]);
        Ok(ModelShape {
            input: (iw, ih),
            normalize: Normalize {
                scale: [(hi - lo) / 255.0; 3],
                offset: [lo; 3],
            },
            mask: (mw, mh),
        })
    }
}

/// The effect the compositor applies, as configured by the properties.
#[derive(Clone, Debug, PartialEq)]
pub enum PassEffect {
    None,
    Mask,
    Blur(f32),
    Replace(BackgroundSpec),
}

pub struct GpuPass {
    gpu: Gpu,
    ctx: Context,
    graph: Graph,
    names: (String, String),
    input: Tensor,
    mask: Tensor,
    tensorizer: Tensorizer,
    compositor: Compositor,
    runs_model: bool,
    outputs: TexturePool,
    /// Transfers made while setting up (a background image), charged to the
    /// next frame so the element's counters see them.
    pending: TransferStats,
}

impl GpuPass {
    pub fn new(
        gpu: &Gpu,
        model: &Model,
        effect: &PassEffect,
        mask: MaskOptions,
        color: crate::video::ColorSpec,
    ) -> Result<GpuPass> {
        let shape = ModelShape::of(model)?;
        let ctx = Context::gpu(gpu);
        let graph = model.build(&ctx, None)?;
        let (in_name, in_desc) = graph.inputs().remove(0);
        let (out_name, out_desc) = graph.outputs().remove(0);
        let input = ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, in_desc.shape.clone()).exportable_to_gpu(),
        )?;
        let mask_tensor = ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, out_desc.shape.clone()).exportable_to_gpu(),
        )?;
        let mut options = TensorizeOptions::new(shape.input.0, shape.input.1);
        options.normalize = shape.normalize;
        options.color = color;
        let tensorizer = Tensorizer::new(gpu, options)?;
        let mut pending = TransferStats::default();
        let effect = match effect {
            PassEffect::None => Effect::None,
            PassEffect::Mask => Effect::Mask,
            PassEffect::Blur(strength) => Effect::Blur {
                strength: *strength,
            },
            PassEffect::Replace(BackgroundSpec::Color(c)) => Effect::Replace(Background::Color(*c)),
            PassEffect::Replace(BackgroundSpec::Image(path)) => {
                let (rgba, w, h) = BackgroundSpec::load_image(path)?;
                let texture = create_rgba_texture(gpu, w, h)?;
                gpu.upload_texture(&texture, TextureRegion::whole(&texture), &rgba, w * 4, h)?;
                pending.uploads += 1;
                pending.upload_bytes += rgba.len() as u64;
                Effect::Replace(Background::Image(texture))
            }
        };
        let runs_model = !matches!(effect, Effect::None);
        let compositor = Compositor::new(
            gpu,
            CompositeOptions {
                mask: MaskOptions {
                    width: shape.mask.0,
                    height: shape.mask.1,
                    ..mask
                },
                effect,
                color,
            },
        )?;
        Ok(GpuPass {
            gpu: gpu.clone(),
            ctx,
            graph,
            names: (in_name, out_name),
            input,
            mask: mask_tensor,
            tensorizer,
            compositor,
            runs_model,
            outputs: TexturePool::new(),
            pending,
        })
    }

    /// Whether [`GpuPass::run`] can time the model.
    pub fn can_profile(&self) -> bool {
        self.gpu
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// Segments `frame` and returns the composited RGBA frame, with the
    /// transfers made since the last call (none once running). With
    /// `profile` (and timestamp queries), the model runs with GPU timestamps
    /// and its GPU milliseconds are returned: that waits for the GPU, so the
    /// element asks for it only now and then.
    pub fn run(
        &mut self,
        frame: &GpuFrame,
        profile: bool,
    ) -> Result<(GpuFrame, TransferStats, Option<f64>)> {
        let mut model_ms = None;
        if self.runs_model {
            {
                let rented = self.ctx.export_to_gpu(&self.input)?;
                self.tensorizer.run(frame, rented.buffer())?;
            }
            let inputs = [(self.names.0.as_str(), &self.input)];
            let outputs = [(self.names.1.as_str(), &self.mask)];
            if profile && self.can_profile() {
                model_ms = Some(self.graph.profile(&self.ctx, &inputs, &outputs)?.total_ms);
            } else {
                self.ctx.dispatch(&self.graph, &inputs, &outputs)?;
            }
        }
        let out = GpuFrame::rgba_target(&self.gpu, &self.outputs, frame.width(), frame.height())?;
        {
            let rented = self.ctx.export_to_gpu(&self.mask)?;
            let target = out.plane(0).expect("an RGBA frame has one plane");
            self.compositor.run(frame, rented.buffer(), target)?;
        }
        Ok((out, std::mem::take(&mut self.pending), model_ms))
    }

    /// Forgets the previous frames' mask (after a seek or a flush).
    pub fn reset_temporal(&mut self) {
        self.compositor.reset_temporal();
    }
}

impl Drop for GpuPass {
    fn drop(&mut self) {
        self.ctx.destroy();
    }
}
