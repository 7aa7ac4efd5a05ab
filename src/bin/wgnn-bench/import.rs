//! `wgnn-bench import`: a frame in a DMA-BUF imported (`wgnn::video::dmabuf`)
//! against the same frame uploaded from system memory, then tensorized:
//! host ms in the import or upload call, wall ms per frame with the
//! tensorize waited for, bytes uploaded per frame, and the two tensors
//! compared bit for bit.
//!
//! The DMA-BUF comes from the first source that works: a DMA heap
//! (`/dev/dma_heap/system`), udmabuf (`/dev/udmabuf` over a sealed memfd),
//! host-visible memory the GPU exports as a DMA-BUF, or a plain memfd
//! (which only lenient drivers such as lavapipe take for a DMA-BUF). The frame's bytes are written into it before timing; a camera
//! or decoder would have written them there.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::Gpu;
use wgnn::video::dmabuf::{
    self, DmabufFrame, DmabufImport, DmabufPlane, Imported, DRM_FORMAT_MOD_LINEAR,
};
use wgnn::video::*;

use crate::cli::{open_gpu, quick_frames_help, verdict, Frames, Json, Quick, QUICK_RUNS};
use crate::pipeline::QUICK_SIZE;

/// A frame in a DMA-BUF imported (no upload) against the same frame
/// uploaded, then tensorized: host ms, bytes uploaded, tensors compared.
/// The DMA-BUF comes from /dev/dma_heap/system, /dev/udmabuf or a memfd
/// (which only lavapipe takes). Exits 1 when the device cannot import
/// it (the line says why) or the tensors differ.
#[derive(clap::Args)]
#[command(mut_arg("quick", |a| a.help(quick_frames_help(QUICK_SIZE))))]
#[command(mut_arg("frames", |a| a.default_value("100")))]
#[command(mut_arg("format", |a| a.default_value("NV12")))]
pub struct Args {
    #[command(flatten)]
    quick: Quick,
    #[command(flatten)]
    frames: Frames,
    #[command(flatten)]
    json: Json,
}

impl Args {
    pub fn run(self) -> ExitCode {
        let format = match self.frames.video_format() {
            Ok(f) => f,
            Err(code) => return code,
        };
        let gpu = match open_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        let (width, height) = self.frames.size(self.quick, QUICK_SIZE);
        let options = Options {
            width,
            height,
            format,
            frames: self.quick.count(self.frames.frames, QUICK_RUNS),
        };
        verdict(measure(&gpu, &options, self.json.json))
    }
}

struct Options {
    width: u32,
    height: u32,
    format: VideoFormat,
    frames: usize,
}

/// Where a frame's DMA-BUF came from, and why the sources before it did
/// not work (printed, so a run on a new machine says what it lacks).
struct Source {
    fd: OwnedFd,
    name: &'static str,
    tried: Vec<String>,
    /// Frees what backs the fd on the device that exported it (after the run).
    release: Option<Release>,
}

type Release = Box<dyn FnOnce()>;

/// A DMA-BUF (or memfd) holding `bytes`: a DMA heap, udmabuf, memory the
/// GPU itself exports as a DMA-BUF, or a memfd.
fn dmabuf_with(gpu: &Gpu, bytes: &[u8]) -> std::io::Result<Source> {
    let size = bytes.len().div_ceil(4096) * 4096;
    let mut tried = Vec::new();
    match dma_heap(size).and_then(|fd| write_mapped(&fd, bytes).map(|()| fd)) {
        Ok(fd) => {
            return Ok(Source {
                fd,
                name: "dma-heap",
                tried,
                release: None,
            })
        }
        Err(e) => tried.push(format!("dma-heap: {e}")),
    }
    let memfd = memfd(size)?;
    std::os::unix::fs::FileExt::write_all_at(&File::from(memfd.try_clone()?), bytes, 0)?;
    match udmabuf(&memfd, size) {
        Ok(fd) => {
            return Ok(Source {
                fd,
                name: "udmabuf",
                tried,
                release: None,
            })
        }
        Err(e) => tried.push(format!("udmabuf: {e}")),
    }
    match vulkan_export(gpu, bytes, size as u64) {
        Ok((fd, release)) => {
            return Ok(Source {
                fd,
                name: "vulkan-export",
                tried,
                release: Some(release),
            })
        }
        Err(e) => tried.push(format!("vulkan-export: {e}")),
    }
    Ok(Source {
        fd: memfd,
        name: "memfd",
        tried,
        release: None,
    })
}

/// Host-visible memory of the device itself, exported as a DMA-BUF
/// (`VK_EXT_external_memory_dma_buf`), holding `bytes`: a real DMA-BUF on
/// drivers that export them, where no DMA heap or udmabuf is at hand.
fn vulkan_export(gpu: &Gpu, bytes: &[u8], size: u64) -> Result<(OwnedFd, Release), String> {
    use ash::vk;
    let handle = vk::ExternalMemoryHandleTypeFlags::DMA_BUF_EXT;
    // SAFETY: raw handles of the live device, for one allocation that the
    // returned function frees while `gpu` (which the caller holds) lives.
    let hal =
        unsafe { gpu.device().as_hal::<wgpu::hal::api::Vulkan>() }.ok_or("not a Vulkan device")?;
    if !hal
        .enabled_device_extensions()
        .contains(&ash::ext::external_memory_dma_buf::NAME)
    {
        return Err("no VK_EXT_external_memory_dma_buf".into());
    }
    let device = hal.raw_device().clone();
    let instance = hal.shared_instance().raw_instance().clone();
    let physical = hal.raw_physical_device();
    drop(hal);
    let mut external = vk::ExternalBufferProperties::default();
    // SAFETY: a query on the device's physical device.
    unsafe {
        instance.get_physical_device_external_buffer_properties(
            physical,
            &vk::PhysicalDeviceExternalBufferInfo::default()
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC)
                .handle_type(handle),
            &mut external,
        )
    };
    let features = external.external_memory_properties.external_memory_features;
    if !features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
        return Err("the driver does not export buffers as DMA-BUFs".into());
    }
    let dedicated = features.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY);
    // SAFETY: as above.
    let props = unsafe { instance.get_physical_device_memory_properties(physical) };
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let mut ext_info = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC)
        .push_next(&mut ext_info);
    // SAFETY: valid create info.
    let buffer = unsafe { device.create_buffer(&info, None) }.map_err(|e| e.to_string())?;
    // SAFETY: our buffer.
    let req = unsafe { device.get_buffer_memory_requirements(buffer) };
    let index = (0..props.memory_type_count).find(|&i| {
        req.memory_type_bits & (1 << i) != 0
            && props.memory_types[i as usize].property_flags.contains(host)
    });
    let Some(index) = index else {
        // SAFETY: our unused buffer.
        unsafe { device.destroy_buffer(buffer, None) };
        return Err("no host-visible memory type for an exportable buffer".into());
    };
    let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(handle);
    let mut dedicated_info = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
    let mut alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(req.size)
        .memory_type_index(index)
        .push_next(&mut export);
    if dedicated {
        alloc = alloc.push_next(&mut dedicated_info);
    }
    let free = {
        let device = device.clone();
        move |memory: vk::DeviceMemory| {
            // SAFETY: our buffer and memory, no longer used by us (the
            // importer holds the DMA-BUF's own reference).
            unsafe {
                device.destroy_buffer(buffer, None);
                if memory != vk::DeviceMemory::null() {
                    device.free_memory(memory, None);
                }
            }
        }
    };
    // SAFETY: valid allocate info.
    let memory = match unsafe { device.allocate_memory(&alloc, None) } {
        Ok(m) => m,
        Err(e) => {
            free(vk::DeviceMemory::null());
            return Err(format!("exportable allocation failed ({e})"));
        }
    };
    // SAFETY: host-visible memory of at least `bytes.len()` bytes, bound
    // to our buffer, mapped and unmapped here.
    let written = unsafe {
        device
            .bind_buffer_memory(buffer, memory, 0)
            .and_then(|()| {
                device.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
            })
            .map(|ptr| {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr as *mut u8, bytes.len());
                device.unmap_memory(memory);
            })
    };
    if let Err(e) = written {
        free(memory);
        return Err(format!("cannot write the exportable memory ({e})"));
    }
    let fd_ext = ash::khr::external_memory_fd::Device::new(&instance, &device);
    // SAFETY: exportable memory of this device.
    let raw = unsafe {
        fd_ext.get_memory_fd(
            &vk::MemoryGetFdInfoKHR::default()
                .memory(memory)
                .handle_type(handle),
        )
    };
    match raw {
        // SAFETY: vkGetMemoryFdKHR hands the caller a new fd.
        Ok(raw) => Ok((
            unsafe { OwnedFd::from_raw_fd(raw) },
            Box::new(move || free(memory)),
        )),
        Err(e) => {
            free(memory);
            Err(format!("export failed ({e})"))
        }
    }
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

fn measure(gpu: &Gpu, o: &Options, json_out: bool) -> wgnn::Result<bool> {
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
    let src =
        dmabuf_with(gpu, &bytes).map_err(|e| wgnn::Error::Invalid(format!("no DMA-BUF: {e}")))?;
    let source = src.name;
    let tried = src.tried.join("; ");
    let memory = DmabufImport::new(src.fd.as_fd())?;
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
                let v = json!({"source": source, "tried": tried,
                    "support": support.to_string(), "imported": false, "reason": why});
                println!("{v}");
            } else {
                println!("source: {source} (before it: {tried}); import path: {support}");
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
        let v = json!({"source": source, "tried": tried,
            "support": support.to_string(), "imported": true,
            "format": o.format.name(), "width": o.width, "height": o.height,
            "frames": o.frames, "identical": identical, "results": rows});
        println!("{v}");
    } else {
        println!(
            "{} {}x{}, DMA-BUF from {source}; import path: {support}",
            o.format, o.width, o.height
        );
        if !tried.is_empty() {
            println!("(sources tried before it: {tried})");
        }
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
    drop(frame);
    drop(memory);
    gpu.wait_idle()?;
    if let Some(release) = src.release {
        release();
    }
    Ok(identical)
}
