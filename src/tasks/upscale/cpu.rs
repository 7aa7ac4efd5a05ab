//! Super-resolution on the CPU: `video::cpu` tensorizes the frame, the
//! model runs on wgnn's CPU context, and the output image (beside a bicubic
//! upscale of the input when comparing) is written into system memory.

use std::sync::Arc;

use crate::error::Result;
use crate::ml::{Context, DataType, Graph, Tensor, TensorDescriptor};
use crate::models::Model;
use crate::tasks::context::{read_f32_into, OwnedContext};
use crate::tasks::ImageInput;
use crate::video::cpu::{write_image, CpuFrame, Tensorizer};
use crate::video::Resize;

use super::{check_output, UpscaleOptions};

/// The parts that depend on the input size, and the values kept between
/// frames to spare an allocation each.
struct Sized {
    size: (u32, u32),
    /// What this size's graph computes in, and why.
    precision: crate::models::PrecisionChoice,
    graph: Graph,
    names: (String, String),
    input: Tensor,
    output: Tensor,
    tensorizer: Tensorizer,
    input_values: Vec<f32>,
    output_values: Vec<f32>,
    /// The frame as plain 0..255 RGB for the bicubic half, when comparing.
    plain: Option<(Tensorizer, Vec<f32>)>,
}

pub(super) struct CpuUpscaler {
    ctx: OwnedContext,
    model: Arc<Model>,
    input: ImageInput,
    options: UpscaleOptions,
    sized: Option<Sized>,
}

impl CpuUpscaler {
    pub fn new(model: Arc<Model>, input: ImageInput, options: UpscaleOptions) -> CpuUpscaler {
        CpuUpscaler {
            ctx: OwnedContext(Context::cpu()),
            model,
            input,
            options,
            sized: None,
        }
    }

    pub fn precision(&self) -> Option<&crate::models::PrecisionChoice> {
        self.sized.as_ref().map(|s| &s.precision)
    }

    /// Makes the per-size parts for a `w` x `h` input, unless they exist.
    fn sized(&mut self, w: u32, h: u32) -> Result<&mut Sized> {
        if self.sized.as_ref().is_some_and(|s| s.size == (w, h)) {
            return Ok(self.sized.as_mut().expect("checked just now"));
        }
        self.sized = None;
        let (graph, precision) = crate::tasks::build_graph(
            &self.model,
            &self.ctx,
            self.input.build_size((w, h)),
            self.options.precision,
        )?;
        let (in_name, in_desc) = graph.inputs().remove(0);
        let (out_name, out_desc) = graph.outputs().remove(0);
        check_output(&self.model, &out_desc, w, h, self.options.scale)?;
        let input = self.ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, in_desc.shape.clone()).writable(),
        )?;
        let output = self.ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, out_desc.shape.clone()).readable(),
        )?;
        let tensorizer = Tensorizer::new(self.input.tensorize_options(
            (w, h),
            self.options.color,
            Resize::Stretch,
        ))?;
        let plain = if self.options.compare {
            let t = Tensorizer::new(self.options.plain_tensorize(w, h))?;
            let values = vec![0.0; t.output_len()];
            Some((t, values))
        } else {
            None
        };
        Ok(self.sized.insert(Sized {
            size: (w, h),
            precision,
            graph,
            names: (in_name, out_name),
            input,
            output,
            input_values: vec![0.0; tensorizer.output_len()],
            output_values: vec![0.0; out_desc.element_count()],
            tensorizer,
            plain,
        }))
    }

    pub fn run(&mut self, frame: &CpuFrame, out: &mut [u8], out_stride: usize) -> Result<()> {
        let (w, h) = (frame.width(), frame.height());
        let options = self.options;
        let ctx = self.ctx.0.clone();
        let s = self.sized(w, h)?;
        s.tensorizer.run(frame, &mut s.input_values)?;
        ctx.write_tensor(&s.input, bytemuck::cast_slice(&s.input_values))?;
        ctx.dispatch(
            &s.graph,
            &[(s.names.0.as_str(), &s.input)],
            &[(s.names.1.as_str(), &s.output)],
        )?;
        let (sw, sh) = (w * options.scale, h * options.scale);
        read_f32_into(&ctx, &s.output, &mut s.output_values, "output")?;
        write_image(
            &s.output_values,
            (sw, sh),
            out,
            out_stride,
            options.model_region(w, h),
        )?;
        if let Some((t, values)) = &mut s.plain {
            t.run(frame, values)?;
            write_image(
                values,
                (w, h),
                out,
                out_stride,
                options.bicubic_region(w, h),
            )?;
        }
        // Row padding carries no pixels; zero it rather than leak old memory.
        let row = 4 * options.output_size(w, h).0 as usize;
        for line in out.chunks_mut(out_stride) {
            if let Some(pad) = line.get_mut(row..) {
                pad.fill(0);
            }
        }
        Ok(())
    }
}
