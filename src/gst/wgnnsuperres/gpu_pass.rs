//! One super-resolution pass on the GPU: the frame is tensorized into the
//! rented model input, the model runs, and the image writer turns the rented
//! output into the RGBA frame (beside a bicubic upscale of the input with
//! `compare`). Nothing is read back.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::ml::{Context, DataType, Graph, Tensor, TensorDescriptor};
use crate::models::Model;
use crate::video::{
    ColorSpec, GpuFrame, ImageRegion, ImageWriter, Normalize, TensorizeOptions, Tensorizer,
    TexturePool,
};

/// The parts that depend on the input size: graph, tensors, tensorizers.
struct Sized {
    size: (u32, u32),
    graph: Graph,
    names: (String, String),
    input: Tensor,
    output: Tensor,
    tensorizer: Tensorizer,
    /// `compare`: the frame as plain 0..255 RGB for the bicubic half.
    plain: Option<(Tensorizer, wgpu::Buffer)>,
}

pub struct GpuPass {
    gpu: Gpu,
    ctx: Context,
    model: Arc<Model>,
    scale: u32,
    compare: bool,
    color: ColorSpec,
    normalize: Normalize,
    writer: ImageWriter,
    sized: Option<Sized>,
    outputs: TexturePool,
}

impl GpuPass {
    pub fn new(
        gpu: &Gpu,
        model: Arc<Model>,
        scale: u32,
        compare: bool,
        color: ColorSpec,
    ) -> Result<GpuPass> {
        let [lo, hi] = model.inputs()[0].range.unwrap_or([0.0, 255.0]);
        Ok(GpuPass {
            gpu: gpu.clone(),
            ctx: Context::gpu(gpu),
            model,
            scale,
            compare,
            color,
            normalize: Normalize {
                scale: [(hi - lo) / 255.0; 3],
                offset: [lo; 3],
            },
            writer: ImageWriter::new(gpu)?,
            sized: None,
            outputs: TexturePool::new(),
        })
    }

    /// Makes the per-size parts for a `w` x `h` input, unless they exist.
    fn sized(&mut self, w: u32, h: u32) -> Result<()> {
        if self.sized.as_ref().is_some_and(|s| s.size == (w, h)) {
            return Ok(());
        }
        self.sized = None;
        let graph = self
            .model
            .build(&self.ctx, Some((h as usize, w as usize)))?;
        let (in_name, in_desc) = graph.inputs().remove(0);
        let (out_name, out_desc) = graph.outputs().remove(0);
        let (s, sw, sh) = (self.scale as usize, w as usize, h as usize);
        if out_desc.shape != [1, sh * s, sw * s, 3] || out_desc.data_type != DataType::Float32 {
            return Err(Error::invalid(format!(
                "{}: for a {w}x{h} input the model gives {out_desc}, not the float32 \
                 [1, {}, {}, 3] image that scale={s} needs",
                self.model.path().display(),
                sh * s,
                sw * s
            )));
        }
        let input = self.ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, in_desc.shape.clone()).exportable_to_gpu(),
        )?;
        let output = self.ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, out_desc.shape.clone()).exportable_to_gpu(),
        )?;
        let mut options = TensorizeOptions::new(w, h);
        options.color = self.color;
        options.normalize = self.normalize;
        let tensorizer = Tensorizer::new(&self.gpu, options)?;
        let plain = if self.compare {
            options.normalize = Normalize::RAW;
            let t = Tensorizer::new(&self.gpu, options)?;
            let buffer = self.gpu.scoped("superres compare buffer", || {
                self.gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("wgnn superres bicubic source"),
                    size: t.output_bytes(),
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            })?;
            Some((t, buffer))
        } else {
            None
        };
        self.sized = Some(Sized {
            size: (w, h),
            graph,
            names: (in_name, out_name),
            input,
            output,
            tensorizer,
            plain,
        });
        Ok(())
    }

    /// The output size for a `w` x `h` input.
    pub fn output_size(&self, w: u32, h: u32) -> (u32, u32) {
        let k = if self.compare { 2 } else { 1 };
        (w * self.scale * k, h * self.scale)
    }

    /// Upscales `frame` into a new RGBA frame.
    pub fn run(&mut self, frame: &GpuFrame) -> Result<GpuFrame> {
        let (w, h) = (frame.width(), frame.height());
        let (ow, oh) = self.output_size(w, h);
        let (sw, sh) = (w * self.scale, h * self.scale);
        let out = GpuFrame::rgba_target(&self.gpu, &self.outputs, ow, oh)?;
        let gpu = self.gpu.clone();
        let ctx = self.ctx.clone();
        let writer_x0 = if self.compare { sw } else { 0 };
        self.sized(w, h)?;
        let sized = self.sized.as_ref().expect("sized just now");
        {
            let rented = ctx.export_to_gpu(&sized.input)?;
            sized.tensorizer.run(frame, rented.buffer())?;
        }
        ctx.dispatch(
            &sized.graph,
            &[(sized.names.0.as_str(), &sized.input)],
            &[(sized.names.1.as_str(), &sized.output)],
        )?;
        let target = out.plane(0).expect("an RGBA frame has one plane");
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        if let Some((t, buffer)) = &sized.plain {
            t.encode(&mut encoder, frame, buffer)?;
            let region = ImageRegion {
                x0: 0,
                width: sw,
                height: sh,
            };
            self.writer
                .encode_region(&mut encoder, buffer, (w, h), target, region)?;
        }
        let rented = ctx.export_to_gpu(&sized.output)?;
        let region = ImageRegion {
            x0: writer_x0,
            width: sw,
            height: sh,
        };
        self.writer
            .encode_region(&mut encoder, rented.buffer(), (sw, sh), target, region)?;
        gpu.scoped("superres submit", || gpu.queue().submit([encoder.finish()]))?;
        drop(rented);
        Ok(out)
    }
}

impl Drop for GpuPass {
    fn drop(&mut self) {
        self.ctx.destroy();
    }
}
