//! One segmentation pass on the CPU (`device=cpu`, or `device=auto` without
//! a GPU adapter): the frame is tensorized by `video::cpu`, the model runs on
//! wgnn's CPU context, and the mask is composited onto the frame in system
//! memory. Nothing crosses to a GPU.

use crate::error::{Error, Result};
use crate::ml::{Context, DataType, Graph, Tensor, TensorDescriptor};
use crate::models::Model;
use crate::video::cpu::{
    Background, CompositeOptions, Compositor, CpuFrame, Effect, RgbaImage, Tensorizer,
};
use crate::video::{ColorSpec, MaskOptions, TensorizeOptions};

use super::background::BackgroundSpec;
use super::gpu_pass::{ModelShape, PassEffect};

/// Stops the CPU context's worker thread however the pass ends, a failed
/// [`CpuPass::new`] included.
struct OwnedContext(Context);

impl Drop for OwnedContext {
    fn drop(&mut self) {
        self.0.destroy();
    }
}

pub struct CpuPass {
    ctx: OwnedContext,
    graph: Graph,
    names: (String, String),
    input: Tensor,
    mask: Tensor,
    tensorizer: Tensorizer,
    compositor: Compositor,
    runs_model: bool,
    /// The model input, kept between frames to spare an allocation each.
    input_values: Vec<f32>,
    /// The last mask; zeros while the model does not run (effect=none).
    mask_values: Vec<f32>,
}

impl CpuPass {
    pub fn new(
        model: &Model,
        effect: &PassEffect,
        mask: MaskOptions,
        color: ColorSpec,
    ) -> Result<CpuPass> {
        let shape = ModelShape::of(model)?;
        let ctx = OwnedContext(Context::cpu());
        let graph = model.build(&ctx.0, None)?;
        let (in_name, in_desc) = graph.inputs().remove(0);
        let (out_name, out_desc) = graph.outputs().remove(0);
        let input = ctx.0.create_tensor(
            TensorDescriptor::new(DataType::Float32, in_desc.shape.clone()).writable(),
        )?;
        let mask_tensor = ctx.0.create_tensor(
            TensorDescriptor::new(DataType::Float32, out_desc.shape.clone()).readable(),
        )?;
        let mut options = TensorizeOptions::new(shape.input.0, shape.input.1);
        options.normalize = shape.normalize;
        options.color = color;
        let tensorizer = Tensorizer::new(options)?;
        let runs_model = !matches!(effect, PassEffect::None);
        let effect = match effect {
            PassEffect::None => Effect::None,
            PassEffect::Mask => Effect::Mask,
            PassEffect::Blur(strength) => Effect::Blur {
                strength: *strength,
            },
            PassEffect::Replace(BackgroundSpec::Color(c)) => Effect::Replace(Background::Color(*c)),
            PassEffect::Replace(BackgroundSpec::Image(path)) => {
                let (rgba, w, h) = BackgroundSpec::load_image(path)?;
                Effect::Replace(Background::Image(RgbaImage::new(w, h, rgba)?))
            }
        };
        let compositor = Compositor::new(CompositeOptions {
            mask: MaskOptions {
                width: shape.mask.0,
                height: shape.mask.1,
                ..mask
            },
            effect,
            color,
        })?;
        let input_values = vec![0.0; tensorizer.output_len()];
        Ok(CpuPass {
            ctx,
            graph,
            names: (in_name, out_name),
            input,
            mask: mask_tensor,
            tensorizer,
            compositor,
            runs_model,
            input_values,
            mask_values: vec![0.0; shape.mask.0 as usize * shape.mask.1 as usize],
        })
    }

    /// Segments `frame` and writes the composited RGBA frame into `out`, rows
    /// `out_stride` bytes apart.
    pub fn run(&mut self, frame: &CpuFrame, out: &mut [u8], out_stride: usize) -> Result<()> {
        if self.runs_model {
            self.tensorizer.run(frame, &mut self.input_values)?;
            self.ctx
                .0
                .write_tensor(&self.input, bytemuck::cast_slice(&self.input_values))?;
            let inputs = [(self.names.0.as_str(), &self.input)];
            let outputs = [(self.names.1.as_str(), &self.mask)];
            self.ctx.0.dispatch(&self.graph, &inputs, &outputs)?;
            let bytes = self.ctx.0.read_tensor_blocking(&self.mask)?;
            if bytes.len() != 4 * self.mask_values.len() {
                return Err(Error::invalid(format!(
                    "the model's mask has {} bytes, a {}-value f32 mask needs {}",
                    bytes.len(),
                    self.mask_values.len(),
                    4 * self.mask_values.len()
                )));
            }
            // The tensor's bytes carry no f32 alignment: copy rather than cast.
            for (v, b) in self.mask_values.iter_mut().zip(bytes.chunks_exact(4)) {
                *v = f32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        self.compositor
            .run(frame, &self.mask_values, out, out_stride)
    }

    /// Forgets the previous frames' mask (after a seek or a flush).
    pub fn reset_temporal(&mut self) {
        self.compositor.reset_temporal();
    }
}
