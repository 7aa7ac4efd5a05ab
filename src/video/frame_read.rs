//! One way for every shader to read a frame whatever its format: a WGSL
//! snippet per plane arrangement defines `frame_size()` and `frame_rgb(p)`
//! (0..255) over bind group 0 (the planes at bindings 0.., and for YUV the
//! matrix and range as `YuvParams` at binding 3), and the shader that needs
//! pixels is appended.

use crate::error::{Error, Result};
use crate::gpu::bind_cache::Bound;
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
    /// Internal: a blur pass's Rgba16Float intermediate.
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

    #[cfg(test)]
    pub(crate) const ALL: [Reader; 5] = [
        Reader::Packed,
        Reader::Rgb24,
        Reader::Nv12,
        Reader::I420,
        Reader::FloatRgba,
    ];

    pub(crate) fn is_yuv(self) -> bool {
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
}

/// `YuvParams` of yuv.wgsl: the matrix and range a YUV reader converts
/// with. Values, not specialisations: BT.601 and BT.709, limited and full
/// range, share each reader's pipeline.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct YuvParams {
    pub kr: f32,
    pub kb: f32,
    pub luma_offset: f32,
    pub luma_range: f32,
    pub chroma_range: f32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

impl YuvParams {
    pub(crate) fn of(color: ColorSpec) -> YuvParams {
        let (kr, kb) = color.matrix.kr_kb();
        let (luma_offset, luma_range, chroma_range) = match color.range {
            // Y' in 16..235, Cb/Cr in 16..240.
            YuvRange::Limited => (16.0, 219.0, 224.0),
            YuvRange::Full => (0.0, 255.0, 255.0),
        };
        YuvParams {
            kr: kr as f32,
            kb: kb as f32,
            luma_offset,
            luma_range,
            chroma_range,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        }
    }
}

/// The uniform buffer a YUV reader reads `color` from, made once per
/// configuration (the frame's format is known only per frame, so every
/// frame-reading kernel makes one whatever formats arrive: 32 bytes).
pub(crate) fn yuv_buffer(gpu: &Gpu, color: ColorSpec) -> Result<crate::gpu::live::Buffer> {
    gpu.create_buffer_with_data(
        "wgnn yuv params",
        bytemuck::bytes_of(&YuvParams::of(color)),
        wgpu::BufferUsages::UNIFORM,
    )
}

/// Bind groups of frames a pass keeps (`gpu::bind_cache`): more than the
/// frames a stream has in flight (the pool's recycled textures), as few as
/// that, since each keeps its textures alive.
pub(crate) const FRAME_BINDINGS: usize = 6;

/// What a frame's planes bind group for `pipeline` binds.
pub(crate) fn planes_key(pipeline: &wgpu::ComputePipeline, frame: &GpuFrame) -> Vec<Bound> {
    std::iter::once(Bound::Pipeline(pipeline.clone()))
        .chain(frame.planes().map(|t| Bound::Texture(t.clone())))
        .collect()
}

/// Binds a frame's planes as group 0 of `layout`, with `yuv` (see
/// [`yuv_buffer`]; needed for YUV frames only) at binding 3 where the
/// frame's reader converts YUV.
pub(crate) fn frame_bind_group(
    gpu: &Gpu,
    layout: &wgpu::BindGroupLayout,
    frame: &GpuFrame,
    yuv: Option<&wgpu::Buffer>,
) -> Result<wgpu::BindGroup> {
    let views: Vec<wgpu::TextureView> = frame
        .planes()
        .map(|t| t.create_view(&Default::default()))
        .collect();
    let yuv = if Reader::of(frame.format()).is_yuv() {
        Some(yuv.ok_or_else(|| {
            Error::invalid(format!(
                "reading a {} frame needs its colour matrix and range",
                frame.format().name()
            ))
        })?)
    } else {
        None
    };
    bind_planes(gpu, layout, &views, yuv)
}

/// Binds one Rgba16Float intermediate as group 0 of `layout`, for
/// [`Reader::FloatRgba`].
pub(crate) fn float_rgba_bind_group(
    gpu: &Gpu,
    layout: &wgpu::BindGroupLayout,
    view: &wgpu::TextureView,
) -> Result<wgpu::BindGroup> {
    bind_planes(gpu, layout, std::slice::from_ref(view), None)
}

fn bind_planes(
    gpu: &Gpu,
    layout: &wgpu::BindGroupLayout,
    views: &[wgpu::TextureView],
    yuv: Option<&wgpu::Buffer>,
) -> Result<wgpu::BindGroup> {
    let mut entries: Vec<wgpu::BindGroupEntry> = views
        .iter()
        .enumerate()
        .map(|(i, v)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: wgpu::BindingResource::TextureView(v),
        })
        .collect();
    if let Some(yuv) = yuv {
        entries.push(wgpu::BindGroupEntry {
            binding: 3,
            resource: yuv.as_entire_binding(),
        });
    }
    gpu.scoped("binding the frame's planes", || {
        gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("wgnn frame planes"),
            layout,
            entries: &entries,
        })
    })
}
