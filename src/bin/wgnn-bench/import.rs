//! `wgnn-bench import`: a frame in a DMA-BUF imported (`wgnn::video::dmabuf`)
//! against the same frame uploaded from system memory, then tensorized:
//! host ms in the import or upload call, wall ms per frame with the
//! tensorize waited for, bytes uploaded per frame, and the two tensors
//! compared bit for bit.
//!
//! The DMA-BUF comes from the first source that works: a DMA heap
//! (`/dev/dma_heap/system`), udmabuf (`/dev/udmabuf` over a sealed memfd),
//! or a plain memfd (which only lenient drivers such as lavapipe take for a
//! DMA-BUF). The frame's bytes are written into it before timing; a camera
//! or decoder would have written them there.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::Gpu;
use wgnn::video::dmabuf::{
    self, DmabufFrame, DmabufImport, DmabufPlane, Imported, DRM_FORMAT_MOD_LINEAR,
};
use wgnn::video::*;

pub struct Options {
    pub width: u32,
    pub height: u32,
    pub format: VideoFormat,
    pub frames: usize,
}

/// A DMA-BUF (or memfd) holding `bytes`, and where it came from.
fn dmabuf_with(bytes: &[u8]) -> std::io::Result<(OwnedFd, &'static str)> {
    let size = bytes.len().div_ceil(4096) * 4096;
    if let Ok(fd) = dma_heap(size) {
        write_mapped(&fd, bytes)?;
        return Ok((fd, "dma-heap"));
    }
    let memfd = memfd(size)?;
    std::os::unix::fs::FileExt::write_all_at(&File::from(memfd.try_clone()?), bytes, 0)?;
    if let Ok(fd) = udmabuf(&memfd, size) {
        return Ok((fd, "udmabuf"));
    }
    Ok((memfd, "memfd"))
}

fn memfd(size: usize) -> std::io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name and valid flags.
    let raw = unsafe {
        libc::memfd_create(
            c"wgnn-bench-frame".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    File::from(fd.try_clone()?).set_len(size as u64)?;
    Ok(fd)
}

/// `DMA_HEAP_IOCTL_ALLOC` on the system heap.
fn dma_heap(size: usize) -> std::io::Result<OwnedFd> {
    #[repr(C)]
    struct Alloc {
        len: u64,
        fd: u32,
        fd_flags: u32,
        heap_flags: u64,
    }
    const DMA_HEAP_IOCTL_ALLOC: libc::c_ulong = 0xc018_4800;
    let heap = File::open("/dev/dma_heap/system")?;
    let mut a = Alloc {
        len: size as u64,
        fd: 0,
        fd_flags: (libc::O_RDWR | libc::O_CLOEXEC) as u32,
        heap_flags: 0,
    };
    // SAFETY: the ioctl's documented argument, alive across the call.
    if unsafe { libc::ioctl(heap.as_raw_fd(), DMA_HEAP_IOCTL_ALLOC, &mut a) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the heap handed us a new fd.
    Ok(unsafe { OwnedFd::from_raw_fd(a.fd as i32) })
}

/// `UDMABUF_CREATE` over `memfd` (sealed against shrinking, as udmabuf
/// requires).
fn udmabuf(memfd: &OwnedFd, size: usize) -> std::io::Result<OwnedFd> {
    #[repr(C)]
    struct Create {
        memfd: u32,
        flags: u32,
        offset: u64,
        size: u64,
    }
    const UDMABUF_CREATE: libc::c_ulong = 0x4018_7542;
    const UDMABUF_FLAGS_CLOEXEC: u32 = 1;
    let dev = File::open("/dev/udmabuf")?;
    // SAFETY: fcntl on our fd.
    if unsafe { libc::fcntl(memfd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let c = Create {
        memfd: memfd.as_raw_fd() as u32,
        flags: UDMABUF_FLAGS_CLOEXEC,
        offset: 0,
        size: size as u64,
    };
    // SAFETY: the ioctl's documented argument; it returns a new fd.
    let raw = unsafe { libc::ioctl(dev.as_raw_fd(), UDMABUF_CREATE, &c) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Writes `bytes` into a DMA-BUF through a mapping, bracketed by
/// `DMA_BUF_IOCTL_SYNC` as the CPU access protocol asks.
fn write_mapped(fd: &OwnedFd, bytes: &[u8]) -> std::io::Result<()> {
    const DMA_BUF_IOCTL_SYNC: libc::c_ulong = 0x4008_6200;
    const SYNC_WRITE: u64 = 2;
    const SYNC_END: u64 = 4;
    let len = bytes.len().div_ceil(4096) * 4096;
    // SAFETY: a shared writable mapping of `len` bytes of a DMA-BUF at
    // least that long, unmapped below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let sync = |flags: u64| {
        // SAFETY: the ioctl's documented argument.
        unsafe { libc::ioctl(fd.as_raw_fd(), DMA_BUF_IOCTL_SYNC, &flags) };
    };
    sync(SYNC_WRITE);
    // SAFETY: `ptr` maps at least `bytes.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr as *mut u8, bytes.len()) };
    sync(SYNC_WRITE | SYNC_END);
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(ptr, len) };
    Ok(())
}

/// Rows padded to 64 bytes, as hardware allocators commonly lay them out.
fn layout(format: VideoFormat, width: u32, height: u32) -> FrameLayout {
    let strides: Vec<usize> = (0..format.plane_count())
        .map(|p| format.row_bytes(p, width).div_ceil(64) * 64)
        .collect();
    FrameLayout::with_strides(format, width, height, &strides)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

pub fn run(gpu: &Gpu, o: &Options, json_out: bool) -> wgnn::Result<bool> {
    let layout = layout(o.format, o.width, o.height);
    layout.validate(gpu)?;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let bytes: Vec<u8> = (0..layout.len())
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect();
    let (fd, source) =
        dmabuf_with(&bytes).map_err(|e| wgnn::Error::Invalid(format!("no DMA-BUF: {e}")))?;
    let memory = DmabufImport::new(fd.as_fd())?;
    let frame = DmabufFrame {
        format: o.format,
        width: o.width,
        height: o.height,
        modifier: DRM_FORMAT_MOD_LINEAR,
        planes: layout
            .planes
            .iter()
            .map(|p| DmabufPlane {
                memory: &memory,
                offset: p.offset as u64,
                stride: p.stride as u32,
            })
            .collect(),
    };
    let support = dmabuf::support(gpu);
    let pool = TexturePool::new();
    let t = Tensorizer::new(gpu, TensorizeOptions::new(256, 256))?;
    let dst = gpu.create_buffer(&wgpu::BufferDescriptor {
        label: Some("wgnn-bench import tensor"),
        size: t.output_bytes().div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })?;
    let shape = t.output_shape().map(|d| d as usize);
    let tensor = || TensorBuffer::new(&dst, t.options().dtype.data_type(), &shape);
    let read =
        || -> wgnn::Result<Vec<u8>> { gpu.download_buffer(&dst, 0, t.output_bytes())?.wait() };

    let first = match dmabuf::import_frame(gpu, &pool, &frame)? {
        Imported::Frame(f) => f,
        Imported::Unsupported(why) => {
            if json_out {
                let v = json!({"source": source, "support": support.to_string(),
                    "imported": false, "reason": why});
                println!("{v}");
            } else {
                println!("source: {source}; import path: {support}");
                println!("not imported: {why}");
            }
            return Ok(false);
        }
    };
    t.run(&first, tensor())?;
    let imported_tensor = read()?;
    t.run(&upload_frame(gpu, &pool, &layout, &bytes)?, tensor())?;
    let identical = read()? == imported_tensor;
    drop(first);

    let mut results = Vec::new();
    for import in [true, false] {
        let (mut call_ms, mut wall_ms) = (Vec::new(), Vec::new());
        let before = gpu.transfers();
        for _ in 0..o.frames {
            let start = Instant::now();
            let f = if import {
                match dmabuf::import_frame(gpu, &pool, &frame)? {
                    Imported::Frame(f) => f,
                    Imported::Unsupported(why) => return Err(wgnn::Error::Invalid(why)),
                }
            } else {
                upload_frame(gpu, &pool, &layout, &bytes)?
            };
            call_ms.push(start.elapsed().as_secs_f64() * 1e3);
            t.run(&f, tensor())?;
            gpu.wait_idle()?;
            wall_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let moved = gpu.transfers().since(&before);
        results.push((
            if import { "import" } else { "upload" },
            median(call_ms),
            median(wall_ms),
            moved,
        ));
    }
    let frames = o.frames.max(1) as u64;
    if json_out {
        let rows: Vec<_> = results
            .iter()
            .map(|(path, call, wall, moved)| {
                json!({"path": path, "call_ms": call, "wall_ms": wall,
                    "upload_bytes_per_frame": moved.upload_bytes / frames,
                    "frames_imported": moved.frames_imported})
            })
            .collect();
        let v = json!({"source": source, "support": support.to_string(), "imported": true,
            "format": o.format.name(), "width": o.width, "height": o.height,
            "frames": o.frames, "identical": identical, "results": rows});
        println!("{v}");
    } else {
        println!(
            "{} {}x{}, DMA-BUF from {source}; import path: {support}",
            o.format, o.width, o.height
        );
        println!(
            "{:<8} {:>10} {:>12} {:>16}",
            "path", "call ms", "wall ms", "uploaded B/frame"
        );
        for (path, call, wall, moved) in &results {
            println!(
                "{path:<8} {call:>10.3} {wall:>12.3} {:>16}",
                moved.upload_bytes / frames
            );
        }
        println!(
            "tensors from the import and the upload: {}",
            if identical { "identical" } else { "DIFFERENT" }
        );
    }
    Ok(identical)
}
