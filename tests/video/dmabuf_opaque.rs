//! Imported memory on the system's lavapipe (Mesa 22.3: no DMA-BUF
//! extension, but `VK_KHR_external_memory_fd`): a frame in memory another
//! device exported as an opaque fd is imported by the buffer path and read
//! exactly as its upload; DMA-BUFs are Unsupported there, with the reason.
//! (tests/dmabuf has the DMA-BUF path on Mesa 25 lavapipe.)

use std::os::fd::{AsFd, FromRawFd, OwnedFd};

use ash::vk;
use wgnn::gpu::Gpu;
use wgnn::video::dmabuf::{
    self, DmabufFrame, DmabufImport, DmabufPlane, Imported, Support, DRM_FORMAT_MOD_LINEAR,
};
use wgnn::video::{upload_frame, FrameLayout, TexturePool, VideoFormat};

use crate::common;
use crate::common::video::{planes_of, random_frame, rng};

/// Memory of `size` bytes on `exporter`'s device holding `bytes`, exported
/// as an opaque fd, with a function that frees it on the exporter.
fn exported(exporter: &Gpu, bytes: &[u8], size: u64) -> (OwnedFd, impl FnOnce()) {
    // SAFETY: raw handles of a live device, used for one allocation freed
    // by the returned function while `exporter` lives.
    let hal = unsafe { exporter.device().as_hal::<wgpu::hal::api::Vulkan>() }.unwrap();
    let device = hal.raw_device().clone();
    let instance = hal.shared_instance().raw_instance().clone();
    let physical = hal.raw_physical_device();
    drop(hal);
    let props = unsafe { instance.get_physical_device_memory_properties(physical) };
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let index = (0..props.memory_type_count)
        .find(|&i| props.memory_types[i as usize].property_flags.contains(host))
        .expect("a host-visible memory type");
    let mut export = vk::ExportMemoryAllocateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(size)
        .memory_type_index(index)
        .push_next(&mut export);
    let memory = unsafe { device.allocate_memory(&alloc, None) }.expect("exportable memory");
    // The producer writes its frame (as a decoder would on its device).
    unsafe {
        let ptr = device
            .map_memory(memory, 0, size, vk::MemoryMapFlags::empty())
            .unwrap() as *mut u8;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len());
        device.unmap_memory(memory);
    }
    let ext = ash::khr::external_memory_fd::Device::new(&instance, &device);
    let raw = unsafe {
        ext.get_memory_fd(
            &vk::MemoryGetFdInfoKHR::default()
                .memory(memory)
                .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD),
        )
    }
    .expect("Mesa's lavapipe exports opaque fds");
    // SAFETY: vkGetMemoryFdKHR gives the caller a new fd.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    (fd, move || unsafe { device.free_memory(memory, None) })
}

fn frame_in<'a>(layout: &FrameLayout, memory: &'a DmabufImport) -> DmabufFrame<'a> {
    DmabufFrame {
        format: layout.format,
        width: layout.width,
        height: layout.height,
        modifier: DRM_FORMAT_MOD_LINEAR,
        planes: layout
            .planes
            .iter()
            .map(|p| DmabufPlane {
                memory,
                offset: p.offset as u64,
                stride: p.stride as u32,
            })
            .collect(),
    }
}

#[test]
fn opaque_fd_memory_of_another_device_is_read_as_uploaded() {
    let exporter = common::own_gpu();
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(71);
    for format in [VideoFormat::Nv12, VideoFormat::I420, VideoFormat::Rgba] {
        let (layout, bytes) = random_frame(&mut r, format, 29, 19, 5);
        let size = (bytes.len() as u64).div_ceil(4096) * 4096;
        let (fd, free) = exported(&exporter, &bytes, size);
        let memory = DmabufImport::opaque_fd(fd.as_fd(), size).unwrap();
        drop(fd);
        // The exporter lets go of its allocation: the import keeps the
        // memory alive on its own.
        free();
        let before = gpu.transfers();
        let frame = match dmabuf::import_frame(&gpu, &pool, &frame_in(&layout, &memory)).unwrap() {
            Imported::Frame(f) => f,
            Imported::Unsupported(why) => panic!("{format}: {why}"),
        };
        let moved = gpu.transfers().since(&before);
        assert_eq!(
            (moved.upload_bytes, moved.frames_imported),
            (0, 1),
            "{format}"
        );
        drop(memory);
        let uploaded = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        assert_eq!(
            planes_of(&gpu, &frame),
            planes_of(&gpu, &uploaded),
            "{format}"
        );
    }
    gpu.wait_idle().unwrap();
    exporter.wait_idle().unwrap();
}

#[test]
fn dma_bufs_are_unsupported_without_the_extension() {
    let gpu = common::own_gpu();
    let support = dmabuf::support(&gpu);
    let Support::None(why) = &support else {
        panic!("the system lavapipe was expected to lack DMA-BUF import, it has {support}");
    };
    assert!(why.contains("VK_EXT_external_memory_dma_buf"), "{why}");
    // A memfd standing in for a DMA-BUF: Unsupported, with that reason.
    let layout = FrameLayout::packed(VideoFormat::Rgba, 8, 8);
    let raw = unsafe { libc::memfd_create(c"wgnn-test".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(raw >= 0);
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    std::fs::File::from(fd.try_clone().unwrap())
        .set_len(4096)
        .unwrap();
    let memory = DmabufImport::new(fd.as_fd()).unwrap();
    match dmabuf::import_frame(&gpu, &TexturePool::new(), &frame_in(&layout, &memory)).unwrap() {
        Imported::Unsupported(reason) => assert_eq!(&reason, why),
        Imported::Frame(_) => panic!("imported without the extension"),
    }
}
