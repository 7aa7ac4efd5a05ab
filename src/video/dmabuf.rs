//! Frames that already live in DMA-BUFs (cameras, hardware decoders),
//! imported into the GPU instead of being mapped and uploaded.
//!
//! # What a caller does (the GStreamer elements, per buffer)
//!
//! 1. Once per fd (per `GstMemory`; buffer pools recycle the same ones):
//!    [`DmabufImport::new`]`(fd)` keeps a dup of the fd and its size. Keep
//!    the value with the memory (its qdata) so that the GPU objects made
//!    from it are reused frame after frame and freed when the memory is.
//! 2. Per frame: build a [`DmabufFrame`] (format, size, DRM modifier and,
//!    per plane, the import its bytes are in, the offset of the plane from
//!    the start of *that fd* and the row stride: `GstVideoMeta` gives the
//!    offsets from the buffer start, so add the memory's own offset in its
//!    fd and subtract the memories before it) and call [`import_frame`].
//!    [`Imported::Frame`] is a [`GpuFrame`] every frame reader takes, with
//!    the import counted in [`TransferStats`](crate::gpu::TransferStats)
//!    `frames_imported` / `bytes_imported` and nothing uploaded;
//!    [`Imported::Unsupported`] says in one line why this device cannot
//!    (log it once at INFO and map + upload instead); `Err` is bad input (a
//!    fd smaller than the layout, a stride narrower than a row) or a GPU
//!    failure.
//!
//! [`support`] says up front which path a device would take.
//!
//! # The two import paths
//!
//! - **Texture import** (`Features::VULKAN_EXTERNAL_MEMORY_DMA_BUF`: the
//!   adapter has `VK_EXT_external_memory_dma_buf` and
//!   `VK_EXT_image_drm_format_modifier`): every plane becomes a Vulkan image
//!   over the DMA-BUF's memory at the plane's offset, stride and modifier
//!   (wgpu-hal's `texture_from_dmabuf_fd`), in the plane's own format (R8 for
//!   luma, RG8 for NV12 chroma, ...). The frame's planes *are* the imported
//!   images: nothing is copied at all. Images are cached per layout in the
//!   [`DmabufImport`].
//! - **Buffer import** (the adapter has `VK_EXT_external_memory_dma_buf`
//!   but no DRM modifiers, as lavapipe; linear DMA-BUFs only): the whole fd
//!   becomes one Vulkan buffer (`VkExternalMemoryBufferCreateInfo` +
//!   `VkImportMemoryFdInfoKHR`, memory type from `vkGetMemoryFdPropertiesKHR`)
//!   cached in the [`DmabufImport`], and one render pass per plane unpacks
//!   the rows at their offset and stride into a pooled plane texture, on the
//!   GPU. A GPU-side unpack rather than buffer variants of every frame
//!   reader: tensorize, composite, image output and the elements all read
//!   plane textures, and the unpack (a frame's bytes read and written once
//!   in GPU memory, microseconds for 1080p) keeps one frame type for all of
//!   them. It is not a `copy_buffer_to_texture`: that needs 256-byte row
//!   strides, which few DMA-BUFs have (a 1920-wide NV12 luma row is 1920).
//!
//! Neither path copies a byte on the CPU.
//!
//! # Implicit fences
//!
//! A producer (a decoder, a camera's DMA) may still be writing the buffer
//! when it is handed over; its write fence is attached to the DMA-BUF
//! (implicit sync). Before the GPU reads, [`import_frame`] polls the fd for
//! `POLLIN`, which a DMA-BUF reports once every write fence has signalled,
//! for at most [`FENCE_TIMEOUT_MS`]. Exporting the fence as a sync file
//! (`DMA_BUF_IOCTL_EXPORT_SYNC_FILE`) and making the GPU wait on it would
//! spare that CPU wait, but wgpu has no way to make a submission wait on a
//! foreign semaphore, and by the time a frame reaches an element its writer
//! has almost always finished, so the poll returns at once.
//!
//! # Lifetimes
//!
//! The GPU reads the DMA-BUF after [`import_frame`] returns (the unpack is
//! submitted, not waited for; an imported texture is read whenever the
//! frame is). Keep the producer from reusing the buffer meanwhile: hold the
//! source buffer (the `GstBuffer`) at least as long as the [`GpuFrame`].
//! The GPU objects themselves are kept alive by wgpu while queued work uses
//! them, so dropping a [`DmabufImport`] early is safe.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::dmabuf::{self as gpu_import, HandleKind, Memory, PlaneImage};
use crate::gpu::Gpu;

pub use crate::gpu::dmabuf::Support;

use super::dmabuf_unpack::{self, PlaneSource};
use super::frame::{GpuFrame, Plane, VideoFormat};
use super::pool::TexturePool;

/// `DRM_FORMAT_MOD_LINEAR`: rows one after another, what caps without a
/// modifier mean.
pub const DRM_FORMAT_MOD_LINEAR: u64 = 0;

/// `DRM_FORMAT_MOD_INVALID`: "the modifier is not known"; only linear
/// buffers can be imported without one, so it is not guessed at.
pub const DRM_FORMAT_MOD_INVALID: u64 = 0x00ff_ffff_ffff_ffff;

/// How long [`import_frame`] waits for a DMA-BUF's writers to finish.
pub const FENCE_TIMEOUT_MS: u16 = 1000;

/// One DMA-BUF (or other fd of importable memory) as the GPU will see it:
/// a dup of the fd, its size, and the GPU objects made from it (per device),
/// created on first use and reused by later frames. Cheap to clone; Send +
/// Sync; dropping the last clone (and the frames made from it) frees the
/// GPU objects once no queued work uses them, and closes the dup.
#[derive(Clone, Debug)]
pub struct DmabufImport {
    memory: Arc<Memory>,
}

impl DmabufImport {
    /// Keeps a dup of the DMA-BUF `fd` (the caller's stays theirs) and reads
    /// its size (`lseek(SEEK_END)`). No GPU work: that happens on the first
    /// [`import_frame`]. Err for a closed fd or one whose size cannot be read.
    pub fn new(fd: BorrowedFd<'_>) -> Result<DmabufImport> {
        Ok(DmabufImport {
            memory: Arc::new(Memory::new(fd, HandleKind::DmaBuf, None)?),
        })
    }

    /// Memory another Vulkan device on the same driver exported as an
    /// opaque fd (`VK_KHR_external_memory_fd`), `size` bytes as allocated
    /// there: imported as a buffer (linear frames only). For sharing frames
    /// between two wgpu devices in one process, and for testing the import
    /// path on drivers without DMA-BUF support.
    pub fn opaque_fd(fd: BorrowedFd<'_>, size: u64) -> Result<DmabufImport> {
        Ok(DmabufImport {
            memory: Arc::new(Memory::new(fd, HandleKind::OpaqueFd, Some(size))?),
        })
    }

    /// The memory's size in bytes.
    pub fn size(&self) -> u64 {
        self.memory.size()
    }

    /// The dup this import holds.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.memory.fd()
    }
}

/// One plane of a frame in a DMA-BUF: the import holding its bytes, where
/// its first row starts in that fd, and how far apart its rows are.
#[derive(Clone, Copy, Debug)]
pub struct DmabufPlane<'a> {
    pub memory: &'a DmabufImport,
    pub offset: u64,
    pub stride: u32,
}

/// A whole frame: the layout as GStreamer's `VideoMeta`/`VideoInfo` give it,
/// the DRM modifier ([`DRM_FORMAT_MOD_LINEAR`] where the caps say nothing)
/// and one entry per plane in format order (planes may share an import, as
/// NV12 in one buffer does).
#[derive(Clone, Debug)]
pub struct DmabufFrame<'a> {
    pub format: VideoFormat,
    pub width: u32,
    pub height: u32,
    pub modifier: u64,
    pub planes: Vec<DmabufPlane<'a>>,
}

/// What [`import_frame`] made of a frame.
#[derive(Debug)]
pub enum Imported {
    /// The frame on the GPU, read where it lies.
    Frame(GpuFrame),
    /// This device cannot import it; one line saying why (for an INFO log
    /// before falling back to map + upload).
    Unsupported(String),
}

/// Which import path `gpu` would take.
pub fn support(gpu: &Gpu) -> Support {
    gpu_import::support(gpu)
}

/// Imports the frame's planes (reusing the imports' cached GPU objects) and
/// returns a [`GpuFrame`] the frame readers accept, counted as one imported
/// frame of the planes' bytes. Waits (at most [`FENCE_TIMEOUT_MS`]) for the
/// DMA-BUFs' writers first. See the module documentation for the paths.
pub fn import_frame(gpu: &Gpu, pool: &TexturePool, frame: &DmabufFrame<'_>) -> Result<Imported> {
    let bytes = validate(frame)?;
    let opaque = frame
        .planes
        .iter()
        .all(|p| p.memory.memory.kind() == HandleKind::OpaqueFd);
    let support = support(gpu);
    if let Support::None(why) = &support {
        // An opaque fd needs only VK_KHR_external_memory_fd, which the
        // buffer import checks itself.
        if !opaque {
            return Ok(Imported::Unsupported(why.clone()));
        }
    }
    if frame.modifier == DRM_FORMAT_MOD_INVALID {
        return Ok(Imported::Unsupported(
            "the DMA-BUF's DRM modifier is not known (DRM_FORMAT_MOD_INVALID)".into(),
        ));
    }
    let mut waited: Vec<i32> = Vec::new();
    for plane in &frame.planes {
        let fd = plane.memory.fd();
        let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
        if !waited.contains(&raw) {
            gpu_import::wait_readable(fd, FENCE_TIMEOUT_MS)?;
            waited.push(raw);
        }
    }
    let mut planes = None;
    if support == Support::Texture {
        match import_images(gpu, frame) {
            Ok(p) => planes = Some(p),
            Err(why) if frame.modifier != DRM_FORMAT_MOD_LINEAR => {
                return Ok(Imported::Unsupported(why))
            }
            // A linear buffer the driver will not take as an image (a
            // stride or offset it cannot describe) may still be a buffer.
            Err(why) => log::debug!("image import failed, importing a buffer: {why}"),
        }
    }
    let planes = match planes {
        Some(p) => p,
        None => {
            if frame.modifier != DRM_FORMAT_MOD_LINEAR {
                return Ok(Imported::Unsupported(format!(
                    "DRM modifier {:#x} is not linear, and {} cannot import images with \
                     modifiers",
                    frame.modifier,
                    gpu.info().name
                )));
            }
            let mut sources = Vec::with_capacity(frame.planes.len());
            for plane in &frame.planes {
                match plane.memory.memory.buffer(gpu) {
                    Ok(buffer) => sources.push(PlaneSource {
                        buffer,
                        offset: plane.offset,
                        stride: plane.stride,
                    }),
                    Err(why) => return Ok(Imported::Unsupported(why)),
                }
            }
            match dmabuf_unpack::unpack(
                gpu,
                pool,
                frame.format,
                frame.width,
                frame.height,
                &sources,
            )? {
                Ok(p) => p,
                Err(why) => return Ok(Imported::Unsupported(why)),
            }
        }
    };
    gpu.count_import(bytes);
    Ok(Imported::Frame(GpuFrame::from_planes(
        gpu,
        frame.format,
        frame.width,
        frame.height,
        planes,
    )))
}

/// Every plane as an image over its DMA-BUF (cached per layout), each
/// holding its import; Err(why) where the device will not.
fn import_images(gpu: &Gpu, frame: &DmabufFrame<'_>) -> std::result::Result<Vec<Plane>, String> {
    let f = frame.format;
    frame
        .planes
        .iter()
        .enumerate()
        .map(|(p, plane)| {
            let (width, height) = f.plane_size(p, frame.width, frame.height);
            let texture = plane.memory.memory.texture(
                gpu,
                PlaneImage {
                    format: f.plane_format(p),
                    width,
                    height,
                    offset: plane.offset,
                    stride: plane.stride,
                    modifier: frame.modifier,
                },
            )?;
            Ok(Plane::Imported {
                texture,
                _memory: plane.memory.memory.clone(),
            })
        })
        .collect()
}

/// Checks the layout against the format and the fds' sizes; returns the
/// planes' bytes (stride x rows, as an upload counts them).
fn validate(frame: &DmabufFrame<'_>) -> Result<u64> {
    let f = frame.format;
    let (w, h) = (frame.width, frame.height);
    if w == 0 || h == 0 {
        return Err(Error::invalid(format!(
            "DMA-BUF frame of zero size ({w}x{h}): width and height must be at least 1"
        )));
    }
    if frame.planes.len() != f.plane_count() {
        return Err(Error::invalid(format!(
            "{f} frames have {} plane(s), the DMA-BUF frame lists {}",
            f.plane_count(),
            frame.planes.len()
        )));
    }
    let mut total = 0u64;
    for (p, plane) in frame.planes.iter().enumerate() {
        let row = f.row_bytes(p, w) as u64;
        let rows = u64::from(f.plane_size(p, w, h).1);
        let stride = u64::from(plane.stride);
        if stride < row {
            return Err(Error::invalid(format!(
                "{f} {w}x{h} DMA-BUF plane {p}: stride {stride} is shorter than a row of {w} \
                 pixels ({row} bytes)"
            )));
        }
        // The last row needs only its pixels, not the padding after them.
        let end = plane
            .offset
            .saturating_add(stride * (rows - 1))
            .saturating_add(row);
        let size = plane.memory.size();
        if end > size {
            return Err(Error::invalid(format!(
                "{f} {w}x{h} DMA-BUF plane {p}: needs bytes up to {end} ({rows} rows of stride \
                 {stride} from offset {}), the fd has {size}",
                plane.offset
            )));
        }
        total += stride * rows;
    }
    Ok(total)
}
