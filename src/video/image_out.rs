//! Model output image -> displayable texture.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::gpu::{Checks, Gpu};

use super::composite::create_texture;
use super::groups_2d;
use super::tensor_buffer::TensorBuffer;
use crate::ml::DataType;

/// The image-out kernel (no switches).
pub(crate) const IMAGE_OUT_SOURCE: &str = include_str!("image_out.wgsl");

/// `Params` of image_out.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ImageOutParams {
    pub in_w: u32,
    pub in_h: u32,
    pub x0: u32,
    pub out_w: u32,
    pub out_h: u32,
    pub whole: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// Regions whose params buffers a writer keeps; past this many (sizes that
/// keep changing) the old ones are let go.
const KEPT_REGIONS: usize = 16;

/// An RGBA8 texture shaders can write (STORAGE_BINDING), sample
/// (TEXTURE_BINDING) and that can be copied out (COPY_SRC): the output type
/// of the composite and image writers.
pub fn create_rgba_texture(
    gpu: &Gpu,
    width: u32,
    height: u32,
) -> Result<crate::gpu::live::Texture> {
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
    pipeline: crate::gpu::live::ComputePipeline,
    /// Params of whole-texture writes, whatever the texture's size.
    whole: crate::gpu::live::Buffer,
    /// Params of each region written so far: made on a region's first
    /// write, then reused every frame. A buffer per region rather than one
    /// rewritten: two regions recorded into one encoder must each keep
    /// their own values.
    regions: Mutex<HashMap<ImageOutParams, crate::gpu::live::Buffer>>,
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
        let whole = ImageOutParams {
            whole: 1,
            ..bytemuck::Zeroable::zeroed()
        };
        Ok(ImageWriter {
            gpu: gpu.clone(),
            pipeline: gpu.compute_pipeline("wgnn image out", IMAGE_OUT_SOURCE, Checks::All)?,
            whole: params_buffer(gpu, &whole)?,
            regions: Mutex::default(),
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
        self.check(src.buffer(), (w, h), out, region)?;
        self.record(encoder, src.buffer(), out, region, &self.whole)
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
        let size = image_size(&src)?;
        let src = src.buffer();
        self.check(src, size, out, region)?;
        let params = ImageOutParams {
            in_w: size.0,
            in_h: size.1,
            x0: region.x0,
            out_w: region.width,
            out_h: region.height,
            whole: 0,
            _pad0: 0,
            _pad1: 0,
        };
        let buffer = {
            let mut regions = self.regions.lock().unwrap();
            match regions.get(&params) {
                Some(b) => b.clone(),
                None => {
                    if regions.len() >= KEPT_REGIONS {
                        regions.clear();
                    }
                    let b = params_buffer(&self.gpu, &params)?;
                    regions.insert(params, b.clone());
                    b
                }
            }
        };
        self.record(encoder, src, out, region, &buffer)
    }

    fn check(
        &self,
        src: &wgpu::Buffer,
        (w, h): (u32, u32),
        out: &wgpu::Texture,
        region: ImageRegion,
    ) -> Result<()> {
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
        Ok(())
    }

    fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        out: &wgpu::Texture,
        region: ImageRegion,
        params: &wgpu::Buffer,
    ) -> Result<()> {
        let gpu = &self.gpu;
        let pipeline = &self.pipeline;
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
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: params.as_entire_binding(),
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
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        })
    }

    /// [`ImageWriter::encode`] and submit.
    pub fn run<'a>(&self, src: impl Into<TensorBuffer<'a>>, out: &wgpu::Texture) -> Result<()> {
        let gpu = &self.gpu;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.encode(&mut encoder, src, out)?;
        gpu.submit("image out submit", [encoder.finish()])
            .map(|_| ())
    }
}

fn params_buffer(gpu: &Gpu, params: &ImageOutParams) -> Result<crate::gpu::live::Buffer> {
    gpu.create_buffer_with_data(
        "wgnn image out params",
        bytemuck::bytes_of(params),
        wgpu::BufferUsages::UNIFORM,
    )
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
