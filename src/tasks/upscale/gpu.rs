//! Super-resolution on the GPU: the frame is tensorized into the rented
//! model input, the model runs, and the image writer turns the rented output
//! into the RGBA frame (beside a bicubic upscale of the input when
//! comparing). Nothing is read back.

use std::sync::Arc;

use crate::error::Result;
use crate::gpu::Gpu;
use crate::ml::{Context, DataType, Graph, Tensor, TensorDescriptor};
use crate::models::Model;
use crate::tasks::context::OwnedContext;
use crate::tasks::timing::{self, marked};
use crate::tasks::{GpuRun, ImageInput, ModelTiming, Stage, StageMarks};
use crate::video::{GpuFrame, ImageWriter, Resize, TensorBuffer, Tensorizer, TexturePool};

use super::{check_output, UpscaleOptions};

/// The frame as plain RGB for the bicubic half: its tensorizer and buffer.
struct Plain {
    tensorizer: Tensorizer,
    buffer: crate::gpu::live::Buffer,
    shape: [usize; 4],
}

/// The parts that depend on the input size: graph, tensors, tensorizers.
struct Sized {
    size: (u32, u32),
    /// What this size's graph computes in, and why.
    precision: crate::models::PrecisionChoice,
    graph: Graph,
    names: (String, String),
    input: Tensor,
    output: Tensor,
    tensorizer: Tensorizer,
    plain: Option<Plain>,
}

pub(super) struct GpuUpscaler {
    gpu: Gpu,
    ctx: OwnedContext,
    model: Arc<Model>,
    input: ImageInput,
    options: UpscaleOptions,
    writer: ImageWriter,
    sized: Option<Sized>,
    outputs: TexturePool,
}

impl GpuUpscaler {
    pub fn new(
        gpu: &Gpu,
        model: Arc<Model>,
        input: ImageInput,
        options: UpscaleOptions,
    ) -> Result<GpuUpscaler> {
        Ok(GpuUpscaler {
            gpu: gpu.clone(),
            ctx: OwnedContext(Context::gpu(gpu)),
            model,
            input,
            options,
            writer: ImageWriter::new(gpu)?,
            sized: None,
            outputs: TexturePool::new(),
        })
    }

    pub fn precision(&self) -> Option<&crate::models::PrecisionChoice> {
        self.sized.as_ref().map(|s| &s.precision)
    }

    /// Makes the per-size parts for a `w` x `h` input, unless they exist.
    fn sized(&mut self, w: u32, h: u32) -> Result<&Sized> {
        if self.sized.as_ref().is_some_and(|s| s.size == (w, h)) {
            return Ok(self.sized.as_ref().expect("checked just now"));
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
        let tensor = |shape: &[usize]| {
            self.ctx
                .create_tensor(TensorDescriptor::new(DataType::Float32, shape).exportable_to_gpu())
        };
        let input = tensor(&in_desc.shape)?;
        let output = tensor(&out_desc.shape)?;
        let tensorizer = Tensorizer::new(
            &self.gpu,
            self.input
                .tensorize_options((w, h), self.options.color, Resize::Stretch),
        )?;
        let plain = if self.options.compare {
            let tensorizer = Tensorizer::new(&self.gpu, self.options.plain_tensorize(w, h))?;
            let gpu = &self.gpu;
            let buffer = gpu.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgnn superres bicubic source"),
                size: tensorizer.output_bytes(),
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })?;
            let shape = tensorizer.output_shape().map(|d| d as usize);
            Some(Plain {
                tensorizer,
                buffer,
                shape,
            })
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
            tensorizer,
            plain,
        }))
    }

    pub fn run(&mut self, frame: &GpuFrame) -> Result<GpuFrame> {
        let (ow, oh) = self.options.output_size(frame.width(), frame.height());
        let out = GpuFrame::rgba_target(&self.gpu, &self.outputs, ow, oh)?;
        let target = out.plane(0).expect("an RGBA frame has one plane");
        self.run_into(frame, target, ModelTiming::Off, None)?;
        Ok(out)
    }

    pub fn run_into(
        &mut self,
        frame: &GpuFrame,
        out: &wgpu::Texture,
        timing: ModelTiming,
        mut marks: Option<&mut dyn StageMarks>,
    ) -> Result<GpuRun> {
        let (w, h) = (frame.width(), frame.height());
        let (gpu, ctx, options) = (self.gpu.clone(), self.ctx.0.clone(), self.options);
        self.sized(w, h)?;
        let (sized, writer) = (self.sized.as_ref().expect("sized just now"), &self.writer);
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let rented = ctx.export_to_gpu(&sized.input)?;
        marked(&mut marks, &mut encoder, Stage::Tensorize, |e| {
            sized.tensorizer.encode(e, frame, &rented)
        })?;
        gpu.submit("tensorize submit", [encoder.finish()])?;
        drop(rented);
        let model_ms = timing::dispatch(
            &ctx,
            &sized.graph,
            &[(sized.names.0.as_str(), &sized.input)],
            &[(sized.names.1.as_str(), &sized.output)],
            timing,
        )?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let rented = ctx.export_to_gpu(&sized.output)?;
        marked(&mut marks, &mut encoder, Stage::Output, |e| -> Result<()> {
            if let Some(p) = &sized.plain {
                let plain = TensorBuffer::new(&p.buffer, DataType::Float32, &p.shape);
                p.tensorizer.encode(e, frame, plain)?;
                writer.encode_region(e, plain, out, options.bicubic_region(w, h))?;
            }
            writer.encode_region(e, &rented, out, options.model_region(w, h))
        })?;
        let submission = gpu.submit("superres submit", [encoder.finish()])?;
        drop(rented);
        Ok(GpuRun {
            submission,
            model_ms,
        })
    }
}
