//! The buffer-import path's GPU-side unpack: the planes of a frame in an
//! imported buffer, written into pooled plane textures by one render pass
//! each (dmabuf_unpack.wgsl says how). A render pass and not a compute
//! shader because the plane formats (R8Unorm, Rg8Unorm, R8Uint) cannot be
//! storage textures in core WebGPU, but all are colour targets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::gpu::{live, Gpu, Specialization};

use super::frame::{Plane, VideoFormat, PLANE_USAGE};
use super::pool::{TextureKey, TexturePool};

/// The unpack pipelines of one pool, per device and target format.
#[derive(Default)]
pub(crate) struct Pipelines {
    cache: Mutex<HashMap<(usize, wgpu::TextureFormat), Arc<Pipeline>>>,
}

pub(crate) struct Pipeline {
    layout: wgpu::BindGroupLayout,
    pipeline: live::RenderPipeline,
}

impl Pipelines {
    fn get(&self, gpu: &Gpu, format: wgpu::TextureFormat) -> Result<Arc<Pipeline>> {
        let key = (gpu.id(), format);
        if let Some(p) = self.cache.lock().unwrap().get(&key) {
            return Ok(p.clone());
        }
        let made = Arc::new(Pipeline::new(gpu, format)?);
        let mut cache = self.cache.lock().unwrap();
        // Pipelines of a device that has gone would only pin it.
        cache.retain(|(device, _), _| *device == gpu.id());
        Ok(cache.entry(key).or_insert(made).clone())
    }
}

impl Pipeline {
    fn new(gpu: &Gpu, format: wgpu::TextureFormat) -> Result<Pipeline> {
        use wgpu::TextureFormat as F;
        let texel_bytes = format.block_copy_size(None).unwrap_or(1);
        let uint = format.sample_type(None, None) == Some(wgpu::TextureSampleType::Uint);
        let source = Specialization::new()
            .u32("TEXEL_BYTES", texel_bytes)
            .bool("SWAP_RB", matches!(format, F::Bgra8Unorm))
            .module(&[], include_str!("dmabuf_unpack.wgsl"));
        let module = gpu.scoped("DMA-BUF unpack shader", || {
            gpu.device()
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("wgnn dmabuf unpack"),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
        })?;
        let layout = gpu.scoped("DMA-BUF unpack layout", || {
            gpu.device()
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("wgnn dmabuf unpack"),
                    entries: &[wgpu::BindGroupLayoutEntry {
                        binding: 0,
                        visibility: wgpu::ShaderStages::FRAGMENT,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage { read_only: true },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        count: None,
                    }],
                })
        })?;
        let pipeline_layout = gpu.scoped("DMA-BUF unpack layout", || {
            gpu.device()
                .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("wgnn dmabuf unpack"),
                    bind_group_layouts: &[Some(&layout)],
                    immediate_size: 0,
                })
        })?;
        let pipeline = gpu.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("wgnn dmabuf unpack"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some(if uint { "fs_uint" } else { "fs_unorm" }),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format,
                    blend: None,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        })?;
        Ok(Pipeline { layout, pipeline })
    }
}

/// One plane to unpack: the imported buffer, the plane's byte offset in it
/// and its row stride (checked by the caller: every texel lies inside the
/// buffer, rows at least as wide as the plane).
pub(crate) struct PlaneSource {
    pub buffer: wgpu::Buffer,
    pub offset: u64,
    pub stride: u32,
}

/// Why a plane cannot be unpacked, or the planes' textures: Ok(Err(why))
/// is "unsupported here" (one line), Err a GPU failure.
pub(crate) fn unpack(
    gpu: &Gpu,
    pool: &TexturePool,
    format: VideoFormat,
    width: u32,
    height: u32,
    sources: &[PlaneSource],
) -> Result<std::result::Result<Vec<Plane>, String>> {
    let align = u64::from(gpu.limits().min_storage_buffer_offset_alignment).max(4);
    let max_binding = gpu.limits().max_storage_buffer_binding_size;
    let mut encoder = gpu
        .device()
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("wgnn dmabuf unpack"),
        });
    let mut planes = Vec::with_capacity(sources.len());
    for (p, src) in sources.iter().enumerate() {
        let (w, h) = format.plane_size(p, width, height);
        let tex_format = format.plane_format(p);
        let row = format.row_bytes(p, width) as u64;
        let end = src.offset + u64::from(src.stride) * u64::from(h - 1) + row;
        // Bound from an aligned start just below the plane, so the shader's
        // offsets stay small and the binding within the device's limit.
        let start = src.offset / align * align;
        let size = (end - start).div_ceil(4) * 4;
        if start + size > src.buffer.size() {
            return Ok(Err(format!(
                "plane {p} ends at byte {end}, past the last whole word of the imported memory \
                 ({} bytes)",
                src.buffer.size()
            )));
        }
        if size > max_binding {
            return Ok(Err(format!(
                "plane {p} spans {size} bytes, over the device's largest storage binding \
                 ({max_binding})"
            )));
        }
        let in_binding = src.offset - start;
        let Ok(first_instance) = u32::try_from(in_binding) else {
            return Ok(Err(format!("plane {p}: offset {in_binding} is too large")));
        };
        let Some(first_vertex) = src
            .stride
            .checked_mul(3)
            .filter(|v| v.checked_add(3).is_some())
        else {
            return Ok(Err(format!(
                "plane {p}: stride {} is too large",
                src.stride
            )));
        };
        let pipeline = pool.unpack_pipelines().get(gpu, tex_format)?;
        let texture = pool.acquire(
            gpu,
            "wgnn imported plane",
            TextureKey {
                width: w,
                height: h,
                format: tex_format,
                usage: PLANE_USAGE | wgpu::TextureUsages::RENDER_ATTACHMENT,
            },
        )?;
        let bind_group = gpu.scoped("binding imported memory", || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("wgnn dmabuf unpack"),
                layout: &pipeline.layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &src.buffer,
                        offset: start,
                        size: wgpu::BufferSize::new(size),
                    }),
                }],
            })
        })?;
        let view = texture.create_view(&Default::default());
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("wgnn dmabuf unpack"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        // Every texel is written: nothing to load.
                        load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_pipeline(&pipeline.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.draw(
                first_vertex..first_vertex + 3,
                first_instance..first_instance + 1,
            );
        }
        planes.push(Plane::Pooled(texture));
    }
    gpu.submit("DMA-BUF unpack", [encoder.finish()])?;
    Ok(Ok(planes))
}
