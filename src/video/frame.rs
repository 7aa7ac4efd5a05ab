//! Frames as the CPU hands them over (bytes plus a layout) and as the shaders
//! see them (one texture per plane).

use crate::error::{Error, Result};
use crate::gpu::transfer::{TextureRegion, TextureWrite};
use crate::gpu::{Commands, Gpu};

use super::pool::{PooledTexture, TextureKey, TexturePool};

/// The pixel formats frames can arrive in. Names follow GStreamer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VideoFormat {
    Rgba,
    Bgra,
    /// RGBA whose fourth byte is padding.
    Rgbx,
    Bgrx,
    /// Packed 24-bit RGB.
    Rgb,
    /// Y plane, then one interleaved UV plane at half resolution.
    Nv12,
    /// Y, U and V planes, chroma at half resolution.
    I420,
}

impl VideoFormat {
    pub const ALL: [VideoFormat; 7] = [
        VideoFormat::Rgba,
        VideoFormat::Bgra,
        VideoFormat::Rgbx,
        VideoFormat::Bgrx,
        VideoFormat::Rgb,
        VideoFormat::Nv12,
        VideoFormat::I420,
    ];

    /// Parses a GStreamer format name ("NV12", "RGBx", ...).
    pub fn from_name(name: &str) -> Result<VideoFormat> {
        VideoFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let known: Vec<&str> = VideoFormat::ALL.iter().map(|f| f.name()).collect();
                Error::invalid(format!(
                    "unsupported video format '{name}' (supported: {})",
                    known.join(", ")
                ))
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            VideoFormat::Rgba => "RGBA",
            VideoFormat::Bgra => "BGRA",
            VideoFormat::Rgbx => "RGBx",
            VideoFormat::Bgrx => "BGRx",
            VideoFormat::Rgb => "RGB",
            VideoFormat::Nv12 => "NV12",
            VideoFormat::I420 => "I420",
        }
    }

    pub fn plane_count(self) -> usize {
        match self {
            VideoFormat::Nv12 => 2,
            VideoFormat::I420 => 3,
            _ => 1,
        }
    }

    pub fn is_yuv(self) -> bool {
        matches!(self, VideoFormat::Nv12 | VideoFormat::I420)
    }

    /// Size of plane `plane` in texels of its texture. Chroma planes round up
    /// so that odd sizes keep their last column and row.
    pub fn plane_size(self, plane: usize, width: u32, height: u32) -> (u32, u32) {
        match (self, plane) {
            (VideoFormat::Rgb, _) => (width * 3, height),
            (VideoFormat::Nv12 | VideoFormat::I420, p) if p > 0 => {
                (width.div_ceil(2), height.div_ceil(2))
            }
            _ => (width, height),
        }
    }

    /// The texture format a plane is uploaded into. Packed 24-bit RGB has no
    /// wgpu format, so its bytes go into an R8Uint texture three times as
    /// wide and the shader reassembles pixels.
    pub fn plane_format(self, plane: usize) -> wgpu::TextureFormat {
        use wgpu::TextureFormat as F;
        match (self, plane) {
            (VideoFormat::Rgba | VideoFormat::Rgbx, _) => F::Rgba8Unorm,
            (VideoFormat::Bgra | VideoFormat::Bgrx, _) => F::Bgra8Unorm,
            (VideoFormat::Rgb, _) => F::R8Uint,
            (VideoFormat::Nv12, 1) => F::Rg8Unorm,
            _ => F::R8Unorm,
        }
    }

    fn texel_bytes(self, plane: usize) -> usize {
        self.plane_format(plane)
            .block_copy_size(None)
            .expect("colour formats have a block size") as usize
    }

    /// Bytes of one row of pixels in plane `plane`, without padding.
    pub fn row_bytes(self, plane: usize, width: u32) -> usize {
        self.plane_size(plane, width, 1).0 as usize * self.texel_bytes(plane)
    }
}

impl std::fmt::Display for VideoFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where one plane starts in the frame's bytes and how far apart its rows are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneLayout {
    pub offset: usize,
    pub stride: usize,
}

/// How a frame's bytes are laid out: the same information as GStreamer's
/// `VideoInfo` (per-plane offset and stride).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameLayout {
    pub format: VideoFormat,
    pub width: u32,
    pub height: u32,
    pub planes: Vec<PlaneLayout>,
}

impl FrameLayout {
    /// Planes back to back with rows exactly as long as the pixels need.
    pub fn packed(format: VideoFormat, width: u32, height: u32) -> FrameLayout {
        let strides: Vec<usize> = (0..format.plane_count())
            .map(|p| format.row_bytes(p, width))
            .collect();
        FrameLayout::with_strides(format, width, height, &strides)
    }

    /// Planes back to back with the given row strides (one per plane; strides
    /// are checked by [`FrameLayout::validate`], not here).
    pub fn with_strides(
        format: VideoFormat,
        width: u32,
        height: u32,
        strides: &[usize],
    ) -> FrameLayout {
        let mut offset = 0;
        let planes = strides
            .iter()
            .enumerate()
            .map(|(p, &stride)| {
                let plane = PlaneLayout { offset, stride };
                offset += stride * format.plane_size(p, width, height).1 as usize;
                plane
            })
            .collect();
        FrameLayout {
            format,
            width,
            height,
            planes,
        }
    }

    /// Bytes the frame occupies: up to the end of the plane that ends last.
    pub fn len(&self) -> usize {
        self.planes
            .iter()
            .enumerate()
            .map(|(p, l)| {
                l.offset + l.stride * self.format.plane_size(p, self.width, self.height).1 as usize
            })
            .max()
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks that `len` bytes hold every plane.
    pub fn check_bytes(&self, len: usize) -> Result<()> {
        let f = self.format;
        for (p, plane) in self.planes.iter().enumerate() {
            let rows = f.plane_size(p, self.width, self.height).1 as usize;
            let end = plane.offset + plane.stride * rows;
            if len < end {
                return Err(Error::invalid(format!(
                    "{f} {}x{} frame: plane {p} needs bytes up to {end} ({rows} rows of stride \
                     {} from offset {}), the data has {len}",
                    self.width, self.height, plane.stride, plane.offset,
                )));
            }
        }
        Ok(())
    }

    /// Checks the layout against the format and the device's limits.
    pub fn validate(&self, gpu: &Gpu) -> Result<()> {
        let f = self.format;
        if self.width == 0 || self.height == 0 {
            return Err(Error::invalid(format!(
                "zero-size frame ({}x{}): width and height must be at least 1",
                self.width, self.height
            )));
        }
        if self.planes.len() != f.plane_count() {
            return Err(Error::invalid(format!(
                "{f} frames have {} plane(s), the layout lists {}",
                f.plane_count(),
                self.planes.len()
            )));
        }
        let max = gpu.limits().max_texture_dimension_2d;
        for p in 0..f.plane_count() {
            let (w, h) = f.plane_size(p, self.width, self.height);
            if w > max || h > max {
                let packing = if f == VideoFormat::Rgb {
                    " (packed RGB is stored 3 bytes to a texel, so its texture is 3x the width)"
                } else {
                    ""
                };
                return Err(Error::invalid(format!(
                    "{f} frame {}x{} needs a {w}x{h} texture for plane {p}, over the device limit \
                     max_texture_dimension_2d = {max}{packing}",
                    self.width, self.height
                )));
            }
            let row = f.row_bytes(p, self.width);
            let stride = self.planes[p].stride;
            if stride < row {
                return Err(Error::invalid(format!(
                    "{f} plane {p}: stride {stride} is shorter than a row of {} pixels ({row} bytes)",
                    self.width
                )));
            }
            if u32::try_from(stride).is_err() {
                return Err(Error::invalid(format!(
                    "{f} plane {p}: stride {stride} does not fit in 32 bits"
                )));
            }
        }
        Ok(())
    }
}

/// What an uploaded plane texture allows; COPY_SRC lets a frame be
/// inspected or copied onward (tests, debugging).
pub(crate) const PLANE_USAGE: wgpu::TextureUsages = wgpu::TextureUsages::TEXTURE_BINDING
    .union(wgpu::TextureUsages::COPY_DST)
    .union(wgpu::TextureUsages::COPY_SRC);

/// A frame whose planes live in GPU textures.
#[derive(Debug)]
pub struct GpuFrame {
    format: VideoFormat,
    width: u32,
    height: u32,
    planes: Vec<Plane>,
    /// The device the textures belong to ([`Gpu::id`]): a frame is only
    /// usable there.
    device: usize,
}

/// A plane's texture: one of the pool's (uploaded, unpacked or written by
/// a shader) or an image over imported memory, with what keeps that memory.
pub(crate) enum Plane {
    Pooled(PooledTexture),
    Imported {
        texture: wgpu::Texture,
        _memory: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    },
}

impl std::ops::Deref for Plane {
    type Target = wgpu::Texture;

    fn deref(&self) -> &wgpu::Texture {
        match self {
            Plane::Pooled(t) => t,
            Plane::Imported { texture, .. } => texture,
        }
    }
}

impl std::fmt::Debug for Plane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Plane::Pooled(t) => t.fmt(f),
            Plane::Imported { texture, .. } => f
                .debug_struct("Imported")
                .field("size", &texture.size())
                .field("format", &texture.format())
                .finish(),
        }
    }
}

impl GpuFrame {
    pub fn format(&self) -> VideoFormat {
        self.format
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    /// The plane textures in format order (Y, UV for NV12; Y, U, V for I420).
    pub fn planes(&self) -> impl Iterator<Item = &wgpu::Texture> {
        self.planes.iter().map(|p| &**p)
    }

    pub fn plane(&self, index: usize) -> Option<&wgpu::Texture> {
        self.planes.get(index).map(|p| &**p)
    }

    /// Whether the frame's textures belong to `gpu`'s device (a frame
    /// from an element on another GPU does not).
    pub fn is_on(&self, gpu: &Gpu) -> bool {
        self.device == gpu.id()
    }

    /// A frame of `format` from its plane textures (in format order, each
    /// of the size and format `format` gives it).
    pub(crate) fn from_planes(
        gpu: &Gpu,
        format: VideoFormat,
        width: u32,
        height: u32,
        planes: Vec<Plane>,
    ) -> GpuFrame {
        debug_assert_eq!(planes.len(), format.plane_count());
        GpuFrame {
            format,
            width,
            height,
            planes,
            device: gpu.id(),
        }
    }

    /// A pooled RGBA frame for shaders to write (the composite and image
    /// writers' output), which can then travel like any uploaded frame.
    pub fn rgba_target(gpu: &Gpu, pool: &TexturePool, width: u32, height: u32) -> Result<GpuFrame> {
        FrameLayout::packed(VideoFormat::Rgba, width, height).validate(gpu)?;
        let texture = pool.acquire(
            gpu,
            "wgnn rgba frame",
            TextureKey {
                width,
                height,
                format: wgpu::TextureFormat::Rgba8Unorm,
                usage: wgpu::TextureUsages::STORAGE_BINDING
                    | wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_SRC
                    | wgpu::TextureUsages::COPY_DST,
            },
        )?;
        Ok(GpuFrame {
            format: VideoFormat::Rgba,
            width,
            height,
            planes: vec![Plane::Pooled(texture)],
            device: gpu.id(),
        })
    }
}

/// Uploads a frame: one counted texture upload per plane, straight from the
/// caller's bytes into the pool's staging ring (strides are handled by the
/// copy into it, nothing is repacked first), all planes in one submission
/// (see [`Gpu::upload_textures`]).
pub fn upload_frame(
    gpu: &Gpu,
    pool: &TexturePool,
    layout: &FrameLayout,
    bytes: &[u8],
) -> Result<GpuFrame> {
    let frame = pooled_frame(gpu, layout, frame_planes(gpu, pool, layout, bytes)?);
    gpu.upload_textures(pool.upload_ring(), &plane_writes(&frame, layout, bytes))?;
    Ok(frame)
}

/// [`upload_frame`] with the work that reads the frame: `during` records it
/// into `commands` while the frame's bytes are copied, and the upload and
/// the work go in one submission (`what` names it in an error), which is
/// returned with the frame and `during`'s result (see
/// [`Gpu::upload_textures_then`]). `during` must not submit anything itself.
pub fn upload_frame_then<R>(
    gpu: &Gpu,
    pool: &TexturePool,
    layout: &FrameLayout,
    bytes: &[u8],
    what: &str,
    during: impl FnOnce(&GpuFrame, &mut Commands) -> Result<R>,
) -> Result<(GpuFrame, R, wgpu::SubmissionIndex)> {
    // The frame is whole before its bytes are: `during` only records
    // commands reading it, which run after the upload's.
    let frame = pooled_frame(gpu, layout, frame_planes(gpu, pool, layout, bytes)?);
    let writes = plane_writes(&frame, layout, bytes);
    let (r, index) = gpu.upload_textures_then(pool.upload_ring(), &writes, what, |commands| {
        during(&frame, commands)
    })?;
    drop(writes);
    Ok((frame, r, index))
}

/// The textures of `layout`'s planes from `pool`, after checking `bytes`
/// holds every plane.
fn frame_planes(
    gpu: &Gpu,
    pool: &TexturePool,
    layout: &FrameLayout,
    bytes: &[u8],
) -> Result<Vec<PooledTexture>> {
    layout.validate(gpu)?;
    layout.check_bytes(bytes.len())?;
    let f = layout.format;
    (0..f.plane_count())
        .map(|p| {
            let (w, h) = f.plane_size(p, layout.width, layout.height);
            pool.acquire(
                gpu,
                "wgnn video plane",
                TextureKey {
                    width: w,
                    height: h,
                    format: f.plane_format(p),
                    usage: PLANE_USAGE | gpu.upload_usage(f.plane_format(p)),
                },
            )
        })
        .collect()
}

/// One write per plane of `layout`, from `bytes` into `frame`'s textures.
fn plane_writes<'a>(
    frame: &'a GpuFrame,
    layout: &FrameLayout,
    bytes: &'a [u8],
) -> Vec<TextureWrite<'a>> {
    layout
        .planes
        .iter()
        .zip(frame.planes())
        .map(|(plane, texture)| TextureWrite {
            texture,
            region: TextureRegion::whole(texture),
            data: &bytes[plane.offset..],
            bytes_per_row: plane.stride as u32,
            rows: texture.height(),
        })
        .collect()
}

fn pooled_frame(gpu: &Gpu, layout: &FrameLayout, planes: Vec<PooledTexture>) -> GpuFrame {
    GpuFrame {
        format: layout.format,
        width: layout.width,
        height: layout.height,
        planes: planes.into_iter().map(Plane::Pooled).collect(),
        device: gpu.id(),
    }
}
