//! Drawing a frame into a render target (a window's surface texture or the
//! offscreen texture): one render pass that clears to black and draws the
//! frame, aspect preserved, into the largest centred rectangle that fits.
//! Nothing is read back: the pixels go from the frame's textures to the
//! target on the GPU.

use std::collections::HashMap;

use crate::error::Result;
use crate::gpu::Gpu;
use crate::video::{frame_bind_group, yuv_buffer, ColorSpec, GpuFrame, Reader};

/// A rectangle of the target, in pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Rect {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

/// Where a picture of display aspect `aspect` (width / height) goes in a
/// `width` x `height` target: as large as fits, centred, on whole pixels so
/// that no edge row or column is half covered.
pub(super) fn letterbox(aspect: f64, width: u32, height: u32) -> Rect {
    let (tw, th) = (f64::from(width), f64::from(height));
    let (w, h) = if tw / th > aspect {
        ((th * aspect).round().clamp(1.0, tw), th)
    } else {
        (tw, (tw / aspect).round().clamp(1.0, th))
    };
    let x = ((tw - w) / 2.0).floor();
    let y = ((th - h) / 2.0).floor();
    Rect {
        x: x as f32,
        y: y as f32,
        w: w as f32,
        h: h as f32,
    }
}

/// The present shader for frames read through `reader`: the video
/// module's reader snippets, so the sink reads frames exactly as the
/// processing shaders do. The reader is its only switch; a YUV frame's
/// matrix and range are values (`YuvParams`, bound next to the planes).
pub(super) fn present_source(reader: Reader) -> String {
    format!("{}\n{}", reader.source(), include_str!("present.wgsl"))
}

type Key = (Reader, wgpu::TextureFormat);

/// Render pipelines, compiled once per (frame reader, target format):
/// compiling is far slower than drawing. (A render pipeline, so not one of
/// the device's cached compute pipelines.)
#[derive(Default)]
pub(super) struct Presenter {
    pipelines: HashMap<Key, crate::gpu::live::RenderPipeline>,
    /// The YUV readers' params per colour spec, made on first use.
    yuv: HashMap<ColorSpec, crate::gpu::live::Buffer>,
}

impl Presenter {
    fn pipeline(
        &mut self,
        gpu: &Gpu,
        reader: Reader,
        target: wgpu::TextureFormat,
    ) -> Result<crate::gpu::live::RenderPipeline> {
        let key = (reader, target);
        if let Some(p) = self.pipelines.get(&key) {
            return Ok(p.clone());
        }
        let source = present_source(reader);
        let module = gpu.scoped("wgnnsink: building the present pipeline", || {
            gpu.device()
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("wgnnsink present"),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
        })?;
        let pipeline = gpu.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("wgnnsink present"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: target,
                    blend: None,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        })?;
        self.pipelines.insert(key, pipeline.clone());
        Ok(pipeline)
    }

    fn yuv(&mut self, gpu: &Gpu, color: ColorSpec) -> Result<crate::gpu::live::Buffer> {
        if let Some(b) = self.yuv.get(&color) {
            return Ok(b.clone());
        }
        let b = yuv_buffer(gpu, color)?;
        self.yuv.insert(color, b.clone());
        Ok(b)
    }

    /// Draws `frame` (display aspect `aspect`) into `target`, a view of a
    /// `width` x `height` texture of format `target_format`, and submits.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn draw(
        &mut self,
        gpu: &Gpu,
        frame: &GpuFrame,
        color: ColorSpec,
        aspect: f64,
        target: &wgpu::TextureView,
        target_format: wgpu::TextureFormat,
        (width, height): (u32, u32),
    ) -> Result<()> {
        let pipeline = self.pipeline(gpu, Reader::of(frame.format()), target_format)?;
        let yuv = if frame.format().is_yuv() {
            Some(self.yuv(gpu, color)?)
        } else {
            None
        };
        let bind_group = frame_bind_group(
            gpu,
            &pipeline.get_bind_group_layout(0),
            frame,
            yuv.as_deref(),
        )?;
        let rect = letterbox(aspect, width, height);
        gpu.scoped("wgnnsink: drawing the frame", || {
            let mut encoder =
                gpu.device()
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("wgnnsink present"),
                    });
            {
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("wgnnsink present"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: target,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations {
                            load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                            store: wgpu::StoreOp::Store,
                        },
                    })],
                    ..Default::default()
                });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.set_viewport(rect.x, rect.y, rect.w, rect.h, 0.0, 1.0);
                pass.draw(0..3, 0..1);
            }
            gpu.submit_unscoped([encoder.finish()]);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_shader_validates_and_translates_to_spirv_for_every_reader() {
        for reader in Reader::ALL {
            let src = present_source(reader);
            assert!(!src.contains("override"), "{reader:?}");
            crate::gpu::shader::testing::validate(&format!("present {reader:?}"), &src);
        }
    }

    #[test]
    fn letterbox_fits_and_centres() {
        let full = letterbox(4.0 / 3.0, 640, 480);
        assert_eq!(
            full,
            Rect {
                x: 0.0,
                y: 0.0,
                w: 640.0,
                h: 480.0
            }
        );
        // A 4:3 picture in a square: bars above and below.
        let r = letterbox(4.0 / 3.0, 64, 64);
        assert_eq!((r.x, r.y, r.w, r.h), (0.0, 8.0, 64.0, 48.0));
        // A 4:3 picture in a 16:9 target: bars left and right.
        let r = letterbox(4.0 / 3.0, 1920, 1080);
        assert_eq!((r.x, r.y, r.w, r.h), (240.0, 0.0, 1440.0, 1080.0));
        // Never thinner than a pixel.
        let r = letterbox(1000.0, 10, 10);
        assert_eq!((r.w, r.h), (10.0, 1.0));
    }
}
