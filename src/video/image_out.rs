//! Model output image -> displayable texture.

use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::composite::create_texture;
use super::pipelines::{build, groups_2d};

/// An RGBA8 texture shaders can write (STORAGE_BINDING), sample
/// (TEXTURE_BINDING) and that can be copied out (COPY_SRC): the output type
/// of the composite and image writers.
pub fn create_rgba_texture(gpu: &Gpu, width: u32, height: u32) -> Result<wgpu::Texture> {
    create_texture(
        gpu,
        "wgnn rgba output",
        width,
        height,
        wgpu::TextureFormat::Rgba8Unorm,
        wgpu::TextureUsages::STORAGE_BINDING
            | wgpu::TextureUsages::TEXTURE_BINDING
            | wgpu::TextureUsages::COPY_SRC
            | wgpu::TextureUsages::COPY_DST,
    )
}

/// Writes f32 NHWC [1, H, W, 3] image tensors (0..255) into RGBA8 textures.
pub struct ImageWriter {
    gpu: Gpu,
    pipeline: wgpu::ComputePipeline,
}

impl std::fmt::Debug for ImageWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageWriter").finish_non_exhaustive()
    }
}

impl ImageWriter {
    pub fn new(gpu: &Gpu) -> Result<ImageWriter> {
        Ok(ImageWriter {
            gpu: gpu.clone(),
            pipeline: build(gpu, "wgnn image out", include_str!("image_out.wgsl"), &[])?,
        })
    }

    /// Records the pass writing the [1, out.height, out.width, 3] tensor in
    /// `src` into `out` (Rgba8Unorm with STORAGE_BINDING).
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        out: &wgpu::Texture,
    ) -> Result<()> {
        let (w, h) = (out.width(), out.height());
        let needed = 4 * 3 * u64::from(w) * u64::from(h);
        if !src.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::invalid(
                "image out: the tensor buffer lacks STORAGE usage",
            ));
        }
        if src.size() < needed {
            return Err(Error::invalid(format!(
                "image out: a [1, {h}, {w}, 3] f32 tensor needs {needed} bytes, the buffer has {}",
                src.size()
            )));
        }
        if out.format() != wgpu::TextureFormat::Rgba8Unorm
            || !out.usage().contains(wgpu::TextureUsages::STORAGE_BINDING)
        {
            return Err(Error::invalid(format!(
                "image out: the output must be an Rgba8Unorm texture with STORAGE_BINDING, \
                 got {:?} with {:?}",
                out.format(),
                out.usage()
            )));
        }
        let gpu = &self.gpu;
        let view = out.create_view(&Default::default());
        let bind = gpu.scoped("image out bindings", || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("wgnn image out"),
                layout: &self.pipeline.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: src.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::TextureView(&view),
                    },
                ],
            })
        })?;
        let (gx, gy) = groups_2d(w, h);
        gpu.scoped("image out pass", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn image out"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        })
    }

    /// [`ImageWriter::encode`] and submit.
    pub fn run(&self, src: &wgpu::Buffer, out: &wgpu::Texture) -> Result<()> {
        let gpu = &self.gpu;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.encode(&mut encoder, src, out)?;
        gpu.scoped("image out submit", || {
            gpu.queue().submit([encoder.finish()])
        })
        .map(|_| ())
    }
}
