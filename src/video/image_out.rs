//! Model output image -> displayable texture.

use crate::error::{Error, Result};
use crate::gpu::Gpu;

use super::composite::create_texture;
use super::pipelines::{constants_key, groups_2d, PipelineCache};
use super::tensor_buffer::TensorBuffer;
use crate::ml::DataType;

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

/// Writes f32 NHWC [1, H, W, 3] image tensors (0..255) into RGBA8 textures,
/// whole or into a region, resampling bicubically when the region is larger
/// than the tensor (see image_out.wgsl).
pub struct ImageWriter {
    gpu: Gpu,
    pipelines: PipelineCache,
}

impl std::fmt::Debug for ImageWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageWriter").finish_non_exhaustive()
    }
}

/// Where in the output texture an image tensor goes: columns `x0..x0 +
/// width`, rows `0..height`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRegion {
    pub x0: u32,
    pub width: u32,
    pub height: u32,
}

impl ImageWriter {
    pub fn new(gpu: &Gpu) -> Result<ImageWriter> {
        Ok(ImageWriter {
            gpu: gpu.clone(),
            pipelines: PipelineCache::default(),
        })
    }

    /// Records the pass writing `src`, a float32 [1, out.height, out.width,
    /// 3] tensor, into all of `out` (Rgba8Unorm with STORAGE_BINDING).
    pub fn encode<'a>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: impl Into<TensorBuffer<'a>>,
        out: &wgpu::Texture,
    ) -> Result<()> {
        let src = src.into();
        let (w, h) = (out.width(), out.height());
        src.expect(
            "image out: the source",
            DataType::Float32,
            &[1, h as usize, w as usize, 3],
        )?;
        let region = ImageRegion {
            x0: 0,
            width: w,
            height: h,
        };
        self.encode_region(encoder, src, out, region)
    }

    /// Records the pass writing `src`, a float32 [1, H, W, 3] tensor, into
    /// `region` of `out`, resampled bicubically when the sizes differ.
    pub fn encode_region<'a>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: impl Into<TensorBuffer<'a>>,
        out: &wgpu::Texture,
        region: ImageRegion,
    ) -> Result<()> {
        let src = src.into();
        let (w, h) = image_size(&src)?;
        let src = src.buffer();
        let needed = 4 * 3 * u64::from(w) * u64::from(h);
        if w == 0 || h == 0 || region.width == 0 || region.height == 0 {
            return Err(Error::invalid(format!(
                "image out: empty tensor ({w}x{h}) or region ({}x{})",
                region.width, region.height
            )));
        }
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
        if u64::from(region.x0) + u64::from(region.width) > u64::from(out.width())
            || region.height > out.height()
        {
            return Err(Error::invalid(format!(
                "image out: region {region:?} does not fit in the {}x{} output",
                out.width(),
                out.height()
            )));
        }
        let gpu = &self.gpu;
        let constants = [
            ("in_w", f64::from(w)),
            ("in_h", f64::from(h)),
            ("x0", f64::from(region.x0)),
            ("out_w", f64::from(region.width)),
            ("out_h", f64::from(region.height)),
        ];
        let pipeline = self.pipelines.get(
            gpu,
            constants_key(&constants),
            "wgnn image out",
            || include_str!("image_out.wgsl").to_string(),
            &constants,
        )?;
        let view = out.create_view(&Default::default());
        let bind = gpu.scoped("image out bindings", || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("wgnn image out"),
                layout: &pipeline.get_bind_group_layout(0),
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
        let (gx, gy) = groups_2d(region.width, region.height);
        gpu.scoped("image out pass", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn image out"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        })
    }

    /// [`ImageWriter::encode`] and submit.
    pub fn run<'a>(&self, src: impl Into<TensorBuffer<'a>>, out: &wgpu::Texture) -> Result<()> {
        let gpu = &self.gpu;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.encode(&mut encoder, src, out)?;
        gpu.scoped("image out submit", || {
            gpu.queue().submit([encoder.finish()])
        })
        .map(|_| ())
    }
}

/// (width, height) of a float32 [1, H, W, 3] image tensor.
fn image_size(src: &TensorBuffer) -> Result<(u32, u32)> {
    if let (DataType::Float32, &[1, h, w, 3]) = (src.data_type(), src.shape()) {
        if let (Ok(w), Ok(h)) = (u32::try_from(w), u32::try_from(h)) {
            return Ok((w, h));
        }
    }
    Err(Error::invalid(format!(
        "image out: the source tensor is {} {:?}; it must be a float32 [1, H, W, 3] image",
        src.data_type(),
        src.shape()
    )))
}
