//! Frames in and out of the elements: a buffer's GPU frame (its
//! [`WgpuFrameMeta`](super::frame_meta::WgpuFrameMeta), an import of its
//! DMA-BUFs, or one counted upload of its system memory) and the way back
//! to system memory (one counted download per plane). Every element moves
//! pixels through these two functions, so the counters they return are the
//! whole story.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use gst::glib;

use crate::error::{Error, Result};
use crate::gpu::transfer::TextureRegion;
use crate::gpu::{Gpu, TransferStats};
use crate::video::dmabuf::{self, DmabufFrame, DmabufImport};
use crate::video::{upload_frame, FrameLayout, GpuFrame, TexturePool};

use super::caps;
use super::drm_format::MODIFIER_LINEAR;
use super::frame_meta::frame_of;
use super::memory_cache;

/// A negotiated input stream, as [`frame_in`] takes its frames: the video
/// info, the DRM modifier of its DMA-BUFs, and whether the element has
/// said (once, at INFO) why its DMA-BUFs are uploaded rather than imported.
pub struct Intake {
    pub info: gst_video::VideoInfo,
    pub modifier: u64,
    cat: gst::DebugCategory,
    fallback_noted: AtomicBool,
}

impl Intake {
    /// The input `input` of an element logging under `cat`.
    pub fn new(cat: gst::DebugCategory, input: caps::Input) -> Intake {
        Intake {
            info: input.info,
            modifier: input.modifier,
            cat,
            fallback_noted: AtomicBool::new(false),
        }
    }

    /// The input `set_caps` settled in `n`.
    pub fn negotiated(cat: gst::DebugCategory, n: &caps::Negotiated) -> Intake {
        Intake::new(
            cat,
            caps::Input {
                info: n.in_info.clone(),
                modifier: n.in_modifier,
            },
        )
    }

    /// Logs `reason` at INFO the first time DMA-BUF frames take the upload
    /// path, not for every frame.
    fn note_fallback(&self, element: &gst::Element, reason: &str) {
        if !self.fallback_noted.swap(true, Ordering::Relaxed) {
            gst::info!(
                self.cat,
                obj = element,
                "DMA-BUF frames are uploaded (one copy each), not imported: {reason}"
            );
        }
    }
}

/// The GPU frame of `buffer`: the frame it carries (no copy), an import of
/// its DMA-BUF memory (no copy), or an upload of its pixels.
pub fn frame_in(
    element: &gst::Element,
    gpu: &Gpu,
    pool: &TexturePool,
    input: &Intake,
    buffer: &gst::BufferRef,
) -> Result<(Arc<GpuFrame>, TransferStats)> {
    let info = &input.info;
    if let Some(frame) = frame_of(buffer) {
        same_device(gpu, &frame)?;
        if frame.width() != info.width() || frame.height() != info.height() {
            return Err(Error::invalid(format!(
                "the buffer's GPU frame is {}x{} but the caps say {}x{}",
                frame.width(),
                frame.height(),
                info.width(),
                info.height()
            )));
        }
        return Ok((frame, TransferStats::default()));
    }
    let layout = caps::frame_layout(info, buffer.meta::<gst_video::VideoMeta>().as_deref())?;
    let source = dmabuf_planes(buffer, &layout)?;
    if !matches!(source, Source::System) {
        // Before anything maps it: reading a mapping past the end of its
        // fd kills the process (SIGBUS), it does not fail.
        check_fd_sizes(buffer)?;
    }
    let reason = match source {
        Source::Dmabuf(planes) => match import(gpu, pool, input, &layout, &planes)? {
            Imported::Frame(frame, moved) => return Ok((Arc::new(frame), moved)),
            Imported::Unsupported(why) => Some(why),
        },
        Source::Unimportable(why) => Some(why),
        Source::System => None,
    };
    if input.modifier != MODIFIER_LINEAR {
        // A tiled or compressed layout read as rows would be garbage.
        return Err(Error::invalid(format!(
            "DRM modifier {:#018x} is not linear and the frame cannot be imported: {}",
            input.modifier,
            reason.as_deref().unwrap_or("it is not in DMA-BUF memory")
        )));
    }
    if let Some(reason) = reason {
        input.note_fallback(element, &reason);
    }
    upload(gpu, pool, &layout, buffer)
}

/// One counted upload of `buffer`'s pixels laid out as `layout`.
fn upload(
    gpu: &Gpu,
    pool: &TexturePool,
    layout: &FrameLayout,
    buffer: &gst::BufferRef,
) -> Result<(Arc<GpuFrame>, TransferStats)> {
    let map = map_readable(buffer)?;
    let frame = upload_frame(gpu, pool, layout, map.as_slice())?;
    Ok((Arc::new(frame), upload_counts(layout)))
}

/// `buffer` mapped for reading, or the one-line error.
pub fn map_readable(buffer: &gst::BufferRef) -> Result<gst::BufferMap<'_, gst::buffer::Readable>> {
    buffer
        .map_readable()
        .map_err(|_| Error::invalid("cannot map the input buffer for reading"))
}

/// What one upload of a frame laid out as `layout` moves: a transfer per
/// plane of its rows at their stride.
pub fn upload_counts(layout: &FrameLayout) -> TransferStats {
    let bytes: usize = layout
        .planes
        .iter()
        .enumerate()
        .map(|(p, plane)| {
            plane.stride * layout.format.plane_size(p, layout.width, layout.height).1 as usize
        })
        .sum();
    TransferStats {
        uploads: layout.planes.len() as u64,
        upload_bytes: bytes as u64,
        ..Default::default()
    }
}

/// Refuses a GPU frame of another device: an element upstream runs on
/// another GPU (`gpu` differs), and textures cannot cross devices. Copying
/// through the host instead would hide a pipeline that moves every frame
/// twice over PCIe; the fix is one `gpu` for the branch, or a
/// `wgnndownload ! wgnnupload` pair where the change is meant.
pub fn same_device(gpu: &Gpu, frame: &GpuFrame) -> Result<()> {
    if frame.is_on(gpu) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "the frame's textures are on another GPU device than this element's ({}): give the \
         elements of a branch the same gpu, or put wgnndownload ! wgnnupload between them",
        gpu.info().name
    )))
}

/// The layout of `buffer`'s frame where [`frame_in`] would upload it from
/// plain system memory (it carries no GPU frame and no DMA-BUF memory);
/// None where [`frame_in`] takes the buffer's GPU frame, imports it or
/// refuses it. For elements that upload such frames themselves, to record
/// their work while the bytes are copied
/// ([`upload_frame_then`](crate::video::upload_frame_then)); they count
/// the upload with [`upload_counts`].
pub fn system_layout(input: &Intake, buffer: &gst::BufferRef) -> Result<Option<FrameLayout>> {
    if frame_of(buffer).is_some() || input.modifier != MODIFIER_LINEAR {
        return Ok(None);
    }
    let layout = caps::frame_layout(
        &input.info,
        buffer.meta::<gst_video::VideoMeta>().as_deref(),
    )?;
    Ok(match dmabuf_planes(buffer, &layout)? {
        Source::System => {
            layout.check_bytes(buffer.size())?;
            Some(layout)
        }
        Source::Dmabuf(_) | Source::Unimportable(_) => None,
    })
}

/// Where one plane of a DMA-BUF-backed buffer lives.
struct DmabufPlane<'a> {
    /// The buffer's memory holding the plane.
    memory: &'a gst::MemoryRef,
    fd: BorrowedFd<'a>,
    /// The plane's first byte, from the start of the fd.
    offset: u64,
    stride: u32,
}

/// What a buffer's memory allows.
enum Source<'a> {
    /// Every plane lies within one DMA-BUF memory.
    Dmabuf(Vec<DmabufPlane<'a>>),
    /// DMA-BUF memory that cannot be imported as it is laid out (why).
    Unimportable(String),
    /// Plain memory: the upload path, nothing to say.
    System,
}

/// Finds the DMA-BUF memory and the fd offset of each plane of `buffer`
/// (planes may share one memory, as NV12 from one allocation does, or have
/// one each). Errors when the buffer is smaller than `layout` needs: that is
/// bad input, whichever path would read it.
fn dmabuf_planes<'a>(buffer: &'a gst::BufferRef, layout: &FrameLayout) -> Result<Source<'a>> {
    let memories = buffer.n_memory();
    let dmabufs = buffer
        .iter_memories()
        .filter(|m| m.is_memory_type::<gst_allocators::DmaBufMemory>())
        .count();
    if dmabufs == 0 {
        return Ok(Source::System);
    }
    let f = layout.format;
    let mut planes = Vec::with_capacity(layout.planes.len());
    for (p, plane) in layout.planes.iter().enumerate() {
        let rows = f.plane_size(p, layout.width, layout.height).1 as usize;
        let row = f.row_bytes(p, layout.width);
        if plane.stride < row {
            return Err(Error::invalid(format!(
                "{f} plane {p}: stride {} is shorter than a row of {} pixels ({row} bytes)",
                plane.stride, layout.width
            )));
        }
        // The last row needs only its pixels, not its padding.
        let end = plane.offset + plane.stride * (rows - 1) + row;
        if buffer.size() < end {
            return Err(Error::invalid(format!(
                "{f} {}x{} frame: plane {p} needs bytes up to {end} ({rows} rows of stride {} \
                 from offset {}), the buffer's {memories} DMA-BUF memor{} hold {}",
                layout.width,
                layout.height,
                plane.stride,
                plane.offset,
                if memories == 1 { "y" } else { "ies" },
                buffer.size()
            )));
        }
        if dmabufs != memories {
            return Ok(Source::Unimportable(format!(
                "the buffer mixes {dmabufs} DMA-BUF memories with {} of other kinds",
                memories - dmabufs
            )));
        }
        let Some((idx, skip)) = buffer.find_memory(plane.offset..end) else {
            return Ok(Source::Unimportable(format!(
                "plane {p} (bytes {}..{end}) is not found in the buffer's memories",
                plane.offset
            )));
        };
        if idx.len() != 1 {
            return Ok(Source::Unimportable(format!(
                "plane {p} spans {} memories; an import needs it in one",
                idx.len()
            )));
        }
        let memory = buffer.peek_memory(idx.start);
        let dmabuf = memory
            .downcast_memory_ref::<gst_allocators::DmaBufMemory>()
            .expect("every memory was counted as DMA-BUF");
        let raw = dmabuf.fd();
        if raw < 0 {
            return Err(Error::invalid(format!(
                "plane {p}: the DMA-BUF memory has no file descriptor"
            )));
        }
        // SAFETY: the fd belongs to the memory, which the buffer we borrow
        // for 'a keeps open.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let stride = u32::try_from(plane.stride).map_err(|_| {
            Error::invalid(format!(
                "{f} plane {p}: stride {} does not fit in 32 bits",
                plane.stride
            ))
        })?;
        planes.push(DmabufPlane {
            memory,
            fd,
            offset: (memory.offset() + skip) as u64,
            stride,
        });
    }
    Ok(Source::Dmabuf(planes))
}

/// The [`DmabufImport`] of a DMA-BUF memory whose fd is `fd`: made once (a
/// dup of the fd and its size, no GPU work until a frame is imported) and
/// kept on the memory, so a pool recycling its buffers reuses it and it is
/// freed with the memory.
fn import_of(memory: &gst::MemoryRef, fd: BorrowedFd<'_>) -> Result<Arc<DmabufImport>> {
    memory_cache::get_or_make(memory, |_| true, || DmabufImport::new(fd).map(Arc::new))
}

/// Checks that every DMA-BUF memory of `buffer` lies within its fd: a
/// memory that says it is larger than its fd (a wrong size from the
/// producer) is bad input whichever path reads it, and mapping it would
/// end in a SIGBUS at the first read past the fd's end. Plain memories
/// pass untouched.
pub fn check_fd_sizes(buffer: &gst::BufferRef) -> Result<()> {
    for (i, memory) in buffer.iter_memories().enumerate() {
        let Some(dmabuf) = memory.downcast_memory_ref::<gst_allocators::DmaBufMemory>() else {
            continue;
        };
        let raw = dmabuf.fd();
        if raw < 0 {
            return Err(Error::invalid(format!(
                "DMA-BUF memory {i} has no file descriptor"
            )));
        }
        // SAFETY: the memory owns the fd and outlives this call.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let have = import_of(memory, fd)?.size();
        let end = (memory.offset() + memory.size()) as u64;
        if end > have {
            return Err(Error::invalid(format!(
                "DMA-BUF memory {i} says it holds bytes {}..{end} of its fd, but the fd has {have}",
                memory.offset()
            )));
        }
    }
    Ok(())
}

/// What [`import`] made of a DMA-BUF frame.
enum Imported {
    Frame(GpuFrame, TransferStats),
    Unsupported(String),
}

/// Imports `planes` (the buffer's DMA-BUFs, laid out as `layout`) into
/// `gpu` through each memory's cached [`DmabufImport`] (see [`import_of`]),
/// so the GPU objects made from an fd are reused frame after frame.
fn import(
    gpu: &Gpu,
    pool: &TexturePool,
    input: &Intake,
    layout: &FrameLayout,
    planes: &[DmabufPlane<'_>],
) -> Result<Imported> {
    let imports = planes
        .iter()
        .map(|p| import_of(p.memory, p.fd))
        .collect::<Result<Vec<Arc<DmabufImport>>>>()?;
    let frame = DmabufFrame {
        format: layout.format,
        width: layout.width,
        height: layout.height,
        modifier: input.modifier,
        planes: planes
            .iter()
            .zip(&imports)
            .map(|(p, import)| dmabuf::DmabufPlane {
                memory: import,
                offset: p.offset,
                stride: p.stride,
            })
            .collect(),
    };
    Ok(match dmabuf::import_frame(gpu, pool, &frame)? {
        dmabuf::Imported::Frame(f) => {
            let bytes = layout
                .planes
                .iter()
                .enumerate()
                .map(|(p, plane)| {
                    (plane.stride
                        * layout.format.plane_size(p, layout.width, layout.height).1 as usize)
                        as u64
                })
                .sum();
            Imported::Frame(
                f,
                TransferStats {
                    frames_imported: 1,
                    bytes_imported: bytes,
                    ..Default::default()
                },
            )
        }
        dmabuf::Imported::Unsupported(why) => Imported::Unsupported(why),
    })
}

/// `frame` read back into a new system-memory buffer laid out as `info`.
pub fn download(
    gpu: &Gpu,
    frame: &GpuFrame,
    info: &gst_video::VideoInfo,
) -> Result<(gst::Buffer, TransferStats)> {
    if frame.width() != info.width() || frame.height() != info.height() {
        return Err(Error::invalid(format!(
            "frame is {}x{} but the caps say {}x{}",
            frame.width(),
            frame.height(),
            info.width(),
            info.height()
        )));
    }
    if caps::video_format(info)? != frame.format() {
        return Err(Error::invalid(format!(
            "frame is {} but the caps say {}",
            frame.format(),
            info.format().to_str()
        )));
    }
    let mut out = gst::Buffer::with_size(info.size())
        .map_err(|_| Error::invalid(format!("cannot allocate {} bytes", info.size())))?;
    let mut moved = TransferStats::default();
    {
        let out = out.get_mut().unwrap();
        let mut map = out
            .map_writable()
            .map_err(|_| Error::invalid("cannot map the output buffer for writing"))?;
        let data = map.as_mut_slice();
        // Row padding carries no pixels; zero it rather than leak old memory.
        data.fill(0);
        let format = frame.format();
        for (p, texture) in frame.planes().enumerate() {
            let (_, rows) = format.plane_size(p, frame.width(), frame.height());
            let row = format.row_bytes(p, frame.width());
            let bytes = gpu
                .download_texture(texture, TextureRegion::whole(texture))?
                .wait()?;
            moved.downloads += 1;
            moved.download_bytes += bytes.len() as u64;
            let packed = bytes.len() / rows as usize;
            let stride = info.stride()[p] as usize;
            let offset = info.offset()[p];
            let n = row.min(packed);
            for r in 0..rows as usize {
                let dst = offset + r * stride;
                data[dst..dst + n].copy_from_slice(&bytes[r * packed..r * packed + n]);
            }
        }
    }
    Ok((out, moved))
}

/// Keeps `input` alive as long as `out` when its frame was imported
/// (`moved` counts an import): the GPU reads an imported frame where it
/// lies, so the producer must not get the DMA-BUF back (a pool reusing the
/// buffer, a camera queueing it for the next capture) while work reading it
/// may still be queued or the frame passed on. A parent-buffer meta holds
/// a reference on the input for the output's lifetime.
pub fn hold_imported(input: &gst::BufferRef, out: &mut gst::Buffer, moved: &TransferStats) {
    if moved.frames_imported == 0 {
        return;
    }
    // SAFETY: `input` is a valid buffer for the duration of the call;
    // from_glib_none takes a new reference on it.
    let input: gst::Buffer = unsafe { glib::translate::from_glib_none(input.as_ptr()) };
    gst::ParentBufferMeta::add(out.make_mut(), &input);
}

/// Gives a new output buffer its input's timestamps, duration and flags.
pub fn copy_timing(input: &gst::BufferRef, out: &mut gst::Buffer) -> Result<(), gst::FlowError> {
    input
        .copy_into(
            out.make_mut(),
            gst::BufferCopyFlags::FLAGS | gst::BufferCopyFlags::TIMESTAMPS,
            ..,
        )
        .map_err(|_| gst::FlowError::Error)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use gst_allocators::prelude::*;

    use super::*;
    use crate::video::{PlaneLayout, VideoFormat};

    /// A DMA-BUF memory over a new memfd of `size` bytes.
    fn dmabuf(size: usize) -> gst::Memory {
        // SAFETY: memfd_create with a valid C string; the fd is ours.
        let fd = unsafe { libc::memfd_create(c"wgnn-frames-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: a fresh fd nobody else owns.
        let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        file.write_all(&vec![7; size]).unwrap();
        let allocator = gst_allocators::DmaBufAllocator::new();
        // SAFETY: the allocator takes the fd.
        unsafe { allocator.alloc_dmabuf(OwnedFd::from(file), size) }.unwrap()
    }

    fn nv12(width: u32, height: u32, offsets: [usize; 2], stride: usize) -> FrameLayout {
        FrameLayout {
            format: VideoFormat::Nv12,
            width,
            height,
            planes: offsets
                .iter()
                .map(|&offset| PlaneLayout { offset, stride })
                .collect(),
        }
    }

    fn planes(source: Source<'_>) -> Vec<(i32, u64, u32)> {
        match source {
            Source::Dmabuf(p) => p
                .iter()
                .map(|p| (p.fd.as_raw_fd(), p.offset, p.stride))
                .collect(),
            Source::Unimportable(why) => panic!("unimportable: {why}"),
            Source::System => panic!("taken for system memory"),
        }
    }

    fn fd_of(m: &gst::MemoryRef) -> i32 {
        m.downcast_memory_ref::<gst_allocators::DmaBufMemory>()
            .unwrap()
            .fd()
    }

    #[test]
    fn planes_are_found_in_their_memories_at_their_fd_offsets() {
        gst::init().unwrap();
        // NV12 8x4, stride 10: luma 40 bytes, chroma 20.
        let mut one = gst::Buffer::new();
        one.get_mut().unwrap().append_memory(dmabuf(100));
        let fd = fd_of(one.peek_memory(0));
        assert_eq!(
            planes(dmabuf_planes(&one, &nv12(8, 4, [16, 60], 10)).unwrap()),
            [(fd, 16, 10), (fd, 60, 10)]
        );

        // One memory per plane, each a share 24 bytes into its fd: the
        // buffer offsets 0 and 40 are fd offsets 24 and 24.
        let (luma, chroma) = (dmabuf(64), dmabuf(44));
        let mut two = gst::Buffer::new();
        two.get_mut().unwrap().append_memory(luma.share(24..));
        two.get_mut().unwrap().append_memory(chroma.share(24..));
        assert_eq!(
            planes(dmabuf_planes(&two, &nv12(8, 4, [0, 40], 10)).unwrap()),
            [(fd_of(&luma), 24, 10), (fd_of(&chroma), 24, 10)]
        );
    }

    #[test]
    fn what_cannot_be_imported_says_why_and_bad_layouts_are_errors() {
        gst::init().unwrap();
        let system = gst::Buffer::with_size(100).unwrap();
        assert!(matches!(
            dmabuf_planes(&system, &nv12(8, 4, [0, 40], 10)).unwrap(),
            Source::System
        ));

        // A luma plane straddling two memories cannot be one import.
        let mut split = gst::Buffer::new();
        split.get_mut().unwrap().append_memory(dmabuf(30));
        split.get_mut().unwrap().append_memory(dmabuf(30));
        match dmabuf_planes(&split, &nv12(8, 4, [0, 40], 10)).unwrap() {
            Source::Unimportable(why) => assert!(why.contains("spans 2 memories"), "{why}"),
            _ => panic!("a split plane was taken"),
        }

        let mut mixed = gst::Buffer::new();
        mixed.get_mut().unwrap().append_memory(dmabuf(40));
        mixed
            .get_mut()
            .unwrap()
            .append_memory(gst::Memory::with_size(20));
        match dmabuf_planes(&mixed, &nv12(8, 4, [0, 40], 10)).unwrap() {
            Source::Unimportable(why) => assert!(why.contains("mixes"), "{why}"),
            _ => panic!("a mixed buffer was taken"),
        }

        let mut short = gst::Buffer::new();
        short.get_mut().unwrap().append_memory(dmabuf(50));
        let e = dmabuf_planes(&short, &nv12(8, 4, [0, 40], 10))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("plane 1 needs bytes up to 58"), "{e}");

        let e = dmabuf_planes(&short, &nv12(8, 4, [0, 40], 6))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("stride 6 is shorter than a row"), "{e}");
    }

    #[test]
    fn an_import_is_made_once_per_memory_and_freed_with_it() {
        gst::init().unwrap();
        let memory = dmabuf(64);
        // SAFETY: the memory owns the fd and outlives every use below.
        let fd = unsafe { BorrowedFd::borrow_raw(fd_of(&memory)) };
        let make = || DmabufImport::new(fd).map(Arc::new);
        let a = memory_cache::get_or_make(&memory, |_| true, make).unwrap();
        let b = memory_cache::get_or_make(&memory, |_| true, make).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.size(), 64);
        let weak = Arc::downgrade(&a);
        drop((a, b));
        assert!(weak.upgrade().is_some(), "the memory keeps its import");
        drop(memory);
        assert!(
            weak.upgrade().is_none(),
            "freeing the memory frees the import"
        );
    }
}
