//! One way for every shader to read a frame whatever its format: a WGSL
//! snippet per plane arrangement defines `frame_size()` and `frame_rgb(p)`
//! (0..255) over bind group 0, and the shader that needs pixels is appended.

use crate::error::Result;
use crate::gpu::Gpu;

use super::frame::{GpuFrame, VideoFormat};

/// The Y'CbCr -> R'G'B' matrix of a YUV frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum YuvMatrix {
    /// SD video and most webcams.
    #[default]
    Bt601,
    /// HD video.
    Bt709,
}

impl YuvMatrix {
    /// Luma weights (Kr, Kb) of the matrix.
    pub fn kr_kb(self) -> (f64, f64) {
        match self {
            YuvMatrix::Bt601 => (0.299, 0.114),
            YuvMatrix::Bt709 => (0.2126, 0.0722),
        }
    }
}

/// Whether Y' spans 16..235 (limited, the broadcast default) or 0..255.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum YuvRange {
    #[default]
    Limited,
    Full,
}

/// How to turn a YUV frame into RGB; ignored for RGB frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ColorSpec {
    pub matrix: YuvMatrix,
    pub range: YuvRange,
}

/// The plane arrangements the reader snippets handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Reader {
    Packed,
    Rgb24,
    Nv12,
    I420,
    /// Internal: an Rgba32Float intermediate.
    FloatRgba,
}

impl Reader {
    pub(crate) fn of(format: VideoFormat) -> Reader {
        match format {
            VideoFormat::Rgba | VideoFormat::Bgra | VideoFormat::Rgbx | VideoFormat::Bgrx => {
                Reader::Packed
            }
            VideoFormat::Rgb => Reader::Rgb24,
            VideoFormat::Nv12 => Reader::Nv12,
            VideoFormat::I420 => Reader::I420,
        }
    }

    fn is_yuv(self) -> bool {
        matches!(self, Reader::Nv12 | Reader::I420)
    }

    /// WGSL defining `frame_size()` and `frame_rgb()`.
    pub(crate) fn source(self) -> String {
        let body = match self {
            Reader::Packed => include_str!("read_packed.wgsl"),
            Reader::Rgb24 => include_str!("read_rgb24.wgsl"),
            Reader::Nv12 => include_str!("read_nv12.wgsl"),
            Reader::I420 => include_str!("read_i420.wgsl"),
            Reader::FloatRgba => include_str!("read_float_rgba.wgsl"),
        };
        if self.is_yuv() {
            format!("{}\n{body}", include_str!("yuv.wgsl"))
        } else {
            body.to_string()
        }
    }

    /// Pipeline constants the snippet declares (only YUV readers have any;
    /// wgpu rejects constants a shader does not declare).
    pub(crate) fn constants(self, color: ColorSpec) -> Vec<(&'static str, f64)> {
        if !self.is_yuv() {
            return Vec::new();
        }
        let (kr, kb) = color.matrix.kr_kb();
        vec![
            ("yuv_kr", kr),
            ("yuv_kb", kb),
            (
                "yuv_full_range",
                f64::from(u8::from(color.range == YuvRange::Full)),
            ),
        ]
    }
}

/// Binds a frame's planes as group 0 of `pipeline`.
pub(crate) fn frame_bind_group(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    frame: &GpuFrame,
) -> Result<wgpu::BindGroup> {
    let views: Vec<wgpu::TextureView> = frame
        .planes()
        .map(|t| t.create_view(&Default::default()))
        .collect();
    textures_bind_group(gpu, pipeline, &views)
}

pub(crate) fn textures_bind_group(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    views: &[wgpu::TextureView],
) -> Result<wgpu::BindGroup> {
    let entries: Vec<wgpu::BindGroupEntry> = views
        .iter()
        .enumerate()
        .map(|(i, v)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: wgpu::BindingResource::TextureView(v),
        })
        .collect();
    gpu.scoped("binding the frame's planes", || {
        gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("wgnn frame planes"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    })
}
