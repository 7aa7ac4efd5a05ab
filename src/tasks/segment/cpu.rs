//! Segmentation on the CPU (`device=cpu`, or no GPU adapter): the frame is
//! tensorized by `video::cpu`, the model runs on wgnn's CPU context, and the
//! mask is composited onto the frame in system memory. Nothing crosses to a
//! GPU.

use std::sync::Arc;

use crate::error::Result;
use crate::ml::{DataType, Graph, Tensor, TensorDescriptor};
use crate::tasks::context::read_f32_into;
use crate::tasks::{BackgroundSpec, ModelInstance};
use crate::video::cpu::{
    Background, CompositeOptions, Compositor, CpuFrame, Effect, RgbaImage, Tensorizer,
};
use crate::video::Resize;

use super::{SegmentEffect, SegmentModel, SegmentOptions};

pub(super) struct CpuSegmenter {
    /// What the model computes in, and why.
    pub precision: crate::models::PrecisionChoice,
    /// The model and the CPU context, perhaps shared with other tasks.
    instance: Arc<ModelInstance>,
    graph: Graph,
    names: (String, String),
    input: Tensor,
    mask: Tensor,
    tensorizer: Tensorizer,
    compositor: Compositor,
    runs_model: bool,
    /// The model input, kept between frames to spare an allocation each.
    input_values: Vec<f32>,
    /// The last mask; zeros while the model does not run (effect none).
    mask_values: Vec<f32>,
}

impl CpuSegmenter {
    pub fn new(
        instance: &Arc<ModelInstance>,
        shape: &SegmentModel,
        options: &SegmentOptions,
    ) -> Result<CpuSegmenter> {
        let ctx = instance.context();
        let (graph, precision) = instance.graph(None, options.precision)?;
        let (in_name, in_desc) = graph.inputs().remove(0);
        let (out_name, out_desc) = graph.outputs().remove(0);
        let input = ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, in_desc.shape.clone()).writable(),
        )?;
        let mask = ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, out_desc.shape.clone()).readable(),
        )?;
        let tensorizer = Tensorizer::new(shape.input.tensorize_options(
            shape.size,
            options.color,
            Resize::Stretch,
        ))?;
        let runs_model = !matches!(options.effect, SegmentEffect::None);
        let effect = match &options.effect {
            SegmentEffect::None => Effect::None,
            SegmentEffect::Mask => Effect::Mask,
            SegmentEffect::Blur { strength } => Effect::Blur {
                strength: *strength,
            },
            SegmentEffect::Replace(BackgroundSpec::Color(c)) => {
                Effect::Replace(Background::Color(*c))
            }
            SegmentEffect::Replace(BackgroundSpec::Image(path)) => {
                let (rgba, w, h) = BackgroundSpec::load_image(path)?;
                Effect::Replace(Background::Image(RgbaImage::new(w, h, rgba)?))
            }
        };
        let compositor = Compositor::new(CompositeOptions {
            mask: shape.mask_options(options),
            effect,
            color: options.color,
        })?;
        let input_values = vec![0.0; tensorizer.output_len()];
        let (mw, mh) = shape.mask;
        Ok(CpuSegmenter {
            precision,
            instance: instance.clone(),
            graph,
            names: (in_name, out_name),
            input,
            mask,
            tensorizer,
            compositor,
            runs_model,
            input_values,
            mask_values: vec![0.0; mw as usize * mh as usize],
        })
    }

    pub fn run(&mut self, frame: &CpuFrame, out: &mut [u8], out_stride: usize) -> Result<()> {
        if self.runs_model {
            let ctx = self.instance.context();
            self.tensorizer.run(frame, &mut self.input_values)?;
            ctx.write_tensor(&self.input, bytemuck::cast_slice(&self.input_values))?;
            let inputs = [(self.names.0.as_str(), &self.input)];
            let outputs = [(self.names.1.as_str(), &self.mask)];
            ctx.dispatch(&self.graph, &inputs, &outputs)?;
            self.instance.count_dispatch(1);
            read_f32_into(ctx, &self.mask, &mut self.mask_values, "mask")?;
        }
        self.compositor
            .run(frame, &self.mask_values, out, out_stride)
    }

    pub fn reset_temporal(&mut self) {
        self.compositor.reset_temporal();
    }
}
