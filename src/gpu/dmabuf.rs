//! The Vulkan side of importing memory other devices or processes made
//! (`crate::video::dmabuf` is the public face and says why each path is
//! there): the fd an import keeps, what the device can import, a fd's
//! memory as a Vulkan buffer (ash calls wgpu-hal has no function for,
//! wrapped with `Buffer::from_raw_managed`) or a plane of it as a Vulkan
//! image (wgpu-hal's `texture_from_dmabuf_fd`), and the wait for a DMA-BUF's
//! writers.
//!
//! The imported objects are cached in the [`Memory`]: buffer pools hand the
//! same fds over frame after frame, and an import is a driver call (a
//! mapping of the memory on lavapipe, a page-table update on hardware).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::Mutex;

use ash::vk;
use wgpu::hal::api::Vulkan;

use super::Gpu;
use crate::error::{Error, Result};

/// What kind of handle a fd is, as Vulkan names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleKind {
    /// A DMA-BUF (`VK_EXT_external_memory_dma_buf`): cameras, decoders,
    /// other GPUs. Its size is the fd's.
    DmaBuf,
    /// Memory another Vulkan device on the same driver exported
    /// (`VK_KHR_external_memory_fd`'s opaque fd), of the exported size.
    OpaqueFd,
}

impl HandleKind {
    fn vk(self) -> vk::ExternalMemoryHandleTypeFlags {
        match self {
            HandleKind::DmaBuf => vk::ExternalMemoryHandleTypeFlags::DMA_BUF_EXT,
            HandleKind::OpaqueFd => vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD,
        }
    }
}

/// How a device can import DMA-BUFs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// Per-plane Vulkan images with DRM format modifiers: no copy at all
    /// (linear buffers fall back to buffer import where an image will not do).
    Texture,
    /// Linear DMA-BUFs as Vulkan buffers, unpacked into plane textures on
    /// the GPU.
    Buffer,
    /// Neither; the reason in one line.
    None(String),
}

impl std::fmt::Display for Support {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Support::Texture => f.write_str("texture import (DRM format modifiers)"),
            Support::Buffer => f.write_str("buffer import (linear DMA-BUFs, unpacked on the GPU)"),
            Support::None(why) => write!(f, "none: {why}"),
        }
    }
}

/// Which import path `gpu` would take for DMA-BUFs.
pub fn support(gpu: &Gpu) -> Support {
    match extensions(gpu) {
        Err(why) => Support::None(why),
        Ok(ext) if !ext.dma_buf => Support::None(format!(
            "{} has no VK_EXT_external_memory_dma_buf",
            gpu.info().name
        )),
        Ok(_) if gpu.has(wgpu::Features::VULKAN_EXTERNAL_MEMORY_DMA_BUF) => Support::Texture,
        Ok(_) => Support::Buffer,
    }
}

struct Extensions {
    dma_buf: bool,
}

/// The import extensions the device was opened with; Err (one line) where
/// there is no Vulkan device or no `VK_KHR_external_memory_fd`.
fn extensions(gpu: &Gpu) -> std::result::Result<Extensions, String> {
    if gpu.info().backend != wgpu::Backend::Vulkan {
        return Err(format!(
            "memory import needs the Vulkan backend, the device runs on {:?}",
            gpu.info().backend
        ));
    }
    // SAFETY: only reads the list of enabled extensions.
    let hal = unsafe { gpu.device().as_hal::<Vulkan>() };
    let Some(hal) = hal else {
        return Err("the device is not a Vulkan device".into());
    };
    let enabled = hal.enabled_device_extensions();
    if !enabled.contains(&ash::khr::external_memory_fd::NAME) {
        return Err(format!(
            "{} has no VK_KHR_external_memory_fd",
            gpu.info().name
        ));
    }
    Ok(Extensions {
        dma_buf: enabled.contains(&ash::ext::external_memory_dma_buf::NAME),
    })
}

/// One plane as a Vulkan image over a DMA-BUF: the cache key of
/// [`Memory::texture`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlaneImage {
    pub format: wgpu::TextureFormat,
    pub width: u32,
    pub height: u32,
    pub offset: u64,
    pub stride: u32,
    pub modifier: u64,
}

/// The GPU objects made from one fd, for one device.
#[derive(Default)]
struct Cache {
    device: Option<usize>,
    /// The whole fd as a buffer, or why it could not be.
    buffer: Option<std::result::Result<wgpu::Buffer, String>>,
    textures: HashMap<PlaneImage, std::result::Result<wgpu::Texture, String>>,
}

/// One fd of importable memory: a dup the import owns, its size, and what
/// was imported from it.
pub struct Memory {
    fd: OwnedFd,
    size: u64,
    kind: HandleKind,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("fd", &self.fd.as_raw_fd())
            .field("size", &self.size)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// Keeps a dup of `fd` (Err for a closed one). A DMA-BUF's size is read
    /// from the fd (`lseek(SEEK_END)`); an opaque fd's is `size`, the
    /// exported allocation's.
    pub fn new(fd: BorrowedFd<'_>, kind: HandleKind, size: Option<u64>) -> Result<Memory> {
        let raw = fd.as_raw_fd();
        let fd = fd.try_clone_to_owned().map_err(|e| {
            Error::invalid(format!(
                "memory fd {raw}: cannot duplicate it ({e}); is it open?"
            ))
        })?;
        let size = match (kind, size) {
            (HandleKind::OpaqueFd, Some(size)) => size,
            (HandleKind::OpaqueFd, None) => {
                return Err(Error::invalid(
                    "an opaque fd's size is the exported allocation's: give it",
                ))
            }
            (HandleKind::DmaBuf, _) => {
                // SAFETY: lseek on our own dup; it moves only the dup's
                // position, which nothing reads.
                let end = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_END) };
                if end < 0 {
                    return Err(Error::invalid(format!(
                        "DMA-BUF fd {raw}: cannot read its size ({})",
                        std::io::Error::last_os_error()
                    )));
                }
                end as u64
            }
        };
        Ok(Memory {
            fd,
            size,
            kind,
            cache: Mutex::default(),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn kind(&self) -> HandleKind {
        self.kind
    }

    /// The bytes a storage buffer over the whole fd covers: the size rounded
    /// down to 4 (shaders read words; a DMA-BUF is whole pages anyway).
    pub fn buffer_size(&self) -> u64 {
        self.size & !3
    }

    fn cache(&self, gpu: &Gpu) -> std::sync::MutexGuard<'_, Cache> {
        let mut cache = self.cache.lock().unwrap();
        if cache.device != Some(gpu.id()) {
            // Objects of another device are of no use here.
            *cache = Cache {
                device: Some(gpu.id()),
                ..Cache::default()
            };
        }
        cache
    }

    /// The whole fd as a `STORAGE | COPY_SRC` buffer of
    /// [`Memory::buffer_size`] bytes, imported on first use. Err(why) in
    /// one line where the device cannot import it (cached: later calls do
    /// not try again).
    pub fn buffer(&self, gpu: &Gpu) -> std::result::Result<wgpu::Buffer, String> {
        let mut cache = self.cache(gpu);
        cache
            .buffer
            .get_or_insert_with(|| self.import_buffer(gpu))
            .clone()
    }

    /// One plane as an image (texture import, DRM modifiers), imported on
    /// first use of that layout. Err(why) in one line where the device
    /// cannot (cached too).
    pub fn texture(
        &self,
        gpu: &Gpu,
        plane: PlaneImage,
    ) -> std::result::Result<wgpu::Texture, String> {
        let mut cache = self.cache(gpu);
        cache
            .textures
            .entry(plane)
            .or_insert_with(|| self.import_texture(gpu, plane))
            .clone()
    }

    fn import_buffer(&self, gpu: &Gpu) -> std::result::Result<wgpu::Buffer, String> {
        let ext = extensions(gpu)?;
        if self.kind == HandleKind::DmaBuf && !ext.dma_buf {
            return Err(format!(
                "{} has no VK_EXT_external_memory_dma_buf",
                gpu.info().name
            ));
        }
        let size = self.buffer_size();
        if size == 0 {
            return Err(format!("fd {} holds no whole word", self.fd.as_raw_fd()));
        }
        if size > gpu.limits().max_storage_buffer_binding_size {
            return Err(format!(
                "a {size}-byte fd exceeds the device's largest storage binding ({})",
                gpu.limits().max_storage_buffer_binding_size
            ));
        }
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| format!("cannot duplicate fd {}: {e}", self.fd.as_raw_fd()))?;
        let (buffer, memory) = {
            // SAFETY: the raw handles are used only for the objects made
            // here, which wgpu takes over below (or which are destroyed on
            // failure) while the device lives (we hold `gpu`).
            let hal = unsafe { gpu.device().as_hal::<Vulkan>() }
                .ok_or("the device is not a Vulkan device")?;
            let device = hal.raw_device().clone();
            let instance = hal.shared_instance().raw_instance().clone();
            let physical = hal.raw_physical_device();
            drop(hal);
            // SAFETY: valid device, instance and an fd we own; see import_raw.
            unsafe { import_raw(&instance, physical, &device, fd, self.kind, size, self.size) }?
        };
        // SAFETY: `buffer` was made on this device with `memory` bound at
        // offset 0 for `size` bytes; from here wgpu owns both and destroys
        // the buffer and frees the memory when the wgpu buffer goes (after
        // the work using it).
        let hal_buffer =
            unsafe { wgpu::hal::vulkan::Buffer::from_raw_managed(buffer, memory, 0, size) };
        let wgpu_buffer = unsafe {
            gpu.device().create_buffer_from_hal::<Vulkan>(
                hal_buffer,
                &wgpu::BufferDescriptor {
                    label: Some("wgnn imported memory"),
                    size,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                },
            )
        };
        log::debug!(
            "imported fd {} ({:?}, {size} bytes) as a buffer",
            self.fd.as_raw_fd(),
            self.kind
        );
        Ok(wgpu_buffer)
    }

    fn import_texture(
        &self,
        gpu: &Gpu,
        plane: PlaneImage,
    ) -> std::result::Result<wgpu::Texture, String> {
        if self.kind != HandleKind::DmaBuf {
            return Err("only DMA-BUFs are imported as images".into());
        }
        if !gpu.has(wgpu::Features::VULKAN_EXTERNAL_MEMORY_DMA_BUF) {
            return Err(format!(
                "{} cannot import DMA-BUFs as images (no VK_EXT_image_drm_format_modifier)",
                gpu.info().name
            ));
        }
        // wgpu-hal creates the image without asking whether the driver can:
        // asked here, so an unsupported format or modifier is a reason, not
        // undefined behaviour.
        image_supported(gpu, plane)?;
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| format!("cannot duplicate fd {}: {e}", self.fd.as_raw_fd()))?;
        let size = wgpu::Extent3d {
            width: plane.width,
            height: plane.height,
            depth_or_array_layers: 1,
        };
        let usage = wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_SRC;
        let hal_desc = wgpu::hal::TextureDescriptor {
            label: Some("wgnn imported plane"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: plane.format,
            usage: wgpu::TextureUses::RESOURCE | wgpu::TextureUses::COPY_SRC,
            memory_flags: wgpu::hal::MemoryFlags::empty(),
            view_formats: vec![],
        };
        let hal_texture = {
            // SAFETY: the fd is a DMA-BUF at least `offset + stride * rows`
            // bytes long (the caller checked the layout against its size),
            // and the image described matches that plane; Vulkan takes the
            // dup on success and wgpu-hal closes it on failure.
            let hal = unsafe { gpu.device().as_hal::<Vulkan>() }
                .ok_or("the device is not a Vulkan device")?;
            unsafe {
                hal.texture_from_dmabuf_fd(
                    fd,
                    &hal_desc,
                    plane.modifier,
                    u64::from(plane.stride),
                    plane.offset,
                )
            }
            .map_err(|e| {
                format!(
                    "the driver refused a {:?} {}x{} image with modifier {:#x} at offset {} \
                     stride {} ({e})",
                    plane.format,
                    plane.width,
                    plane.height,
                    plane.modifier,
                    plane.offset,
                    plane.stride
                )
            })?
        };
        // SAFETY: made on this device as `desc` says; its contents are the
        // producer's, so wgpu must neither clear it (from_hal textures count
        // as initialised) nor assume a layout: UNINITIALIZED makes the first
        // use transition from VK_IMAGE_LAYOUT_UNDEFINED, which drivers keep
        // the memory of for linear and modifier-described images.
        let texture = unsafe {
            gpu.device().create_texture_from_hal::<Vulkan>(
                hal_texture,
                &wgpu::TextureDescriptor {
                    label: Some("wgnn imported plane"),
                    size,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: plane.format,
                    usage,
                    view_formats: &[],
                },
                wgpu::TextureUses::UNINITIALIZED,
            )
        };
        Ok(texture)
    }
}

/// The Vulkan format of a plane texture format (the five `VideoFormat`
/// planes use).
fn vk_format(format: wgpu::TextureFormat) -> Option<vk::Format> {
    use wgpu::TextureFormat as F;
    Some(match format {
        F::R8Unorm => vk::Format::R8_UNORM,
        F::R8Uint => vk::Format::R8_UINT,
        F::Rg8Unorm => vk::Format::R8G8_UNORM,
        F::Rgba8Unorm => vk::Format::R8G8B8A8_UNORM,
        F::Bgra8Unorm => vk::Format::B8G8R8A8_UNORM,
        _ => return None,
    })
}

/// Whether the driver can sample and copy from a single-plane image of
/// `plane`'s format, modifier and size over an imported DMA-BUF: the
/// modifier is among the format's (`VkDrmFormatModifierPropertiesListEXT`)
/// with one memory plane and the features wgpu's usage needs, and the image
/// with that modifier is importable at that size
/// (`vkGetPhysicalDeviceImageFormatProperties2`).
fn image_supported(gpu: &Gpu, plane: PlaneImage) -> std::result::Result<(), String> {
    let format = vk_format(plane.format)
        .ok_or_else(|| format!("no Vulkan format for {:?}", plane.format))?;
    // SAFETY: queries only, on the device's own physical device.
    let hal =
        unsafe { gpu.device().as_hal::<Vulkan>() }.ok_or("the device is not a Vulkan device")?;
    let instance = hal.shared_instance().raw_instance().clone();
    let physical = hal.raw_physical_device();
    drop(hal);
    let mut list = vk::DrmFormatModifierPropertiesListEXT::default();
    let mut props = vk::FormatProperties2::default().push_next(&mut list);
    // SAFETY: a valid physical device and output chain (count query).
    unsafe { instance.get_physical_device_format_properties2(physical, format, &mut props) };
    let count = list.drm_format_modifier_count as usize;
    let mut modifiers = vec![vk::DrmFormatModifierPropertiesEXT::default(); count];
    let mut list = vk::DrmFormatModifierPropertiesListEXT::default()
        .drm_format_modifier_properties(&mut modifiers);
    let mut props = vk::FormatProperties2::default().push_next(&mut list);
    // SAFETY: as above, with room for `count` entries.
    unsafe { instance.get_physical_device_format_properties2(physical, format, &mut props) };
    let needed = vk::FormatFeatureFlags::SAMPLED_IMAGE | vk::FormatFeatureFlags::TRANSFER_SRC;
    let what = format!("{:?} with DRM modifier {:#x}", plane.format, plane.modifier);
    let listed = modifiers
        .iter()
        .find(|m| m.drm_format_modifier == plane.modifier)
        .ok_or_else(|| format!("{} does not offer {what}", gpu.info().name))?;
    if listed.drm_format_modifier_plane_count != 1 {
        return Err(format!(
            "{what} has {} memory planes; one per image is imported",
            listed.drm_format_modifier_plane_count
        ));
    }
    if !listed.drm_format_modifier_tiling_features.contains(needed) {
        return Err(format!("{what} cannot be sampled and copied from"));
    }
    let mut external = vk::PhysicalDeviceExternalImageFormatInfo::default()
        .handle_type(vk::ExternalMemoryHandleTypeFlags::DMA_BUF_EXT);
    let mut modifier = vk::PhysicalDeviceImageDrmFormatModifierInfoEXT::default()
        .drm_format_modifier(plane.modifier)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    let info = vk::PhysicalDeviceImageFormatInfo2::default()
        .format(format)
        .ty(vk::ImageType::TYPE_2D)
        .tiling(vk::ImageTiling::DRM_FORMAT_MODIFIER_EXT)
        .usage(vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_SRC)
        .push_next(&mut external)
        .push_next(&mut modifier);
    let mut external_props = vk::ExternalImageFormatProperties::default();
    let mut image_props = vk::ImageFormatProperties2::default().push_next(&mut external_props);
    // SAFETY: valid input and output chains.
    unsafe {
        instance.get_physical_device_image_format_properties2(physical, &info, &mut image_props)
    }
    .map_err(|e| format!("{what} images cannot be imported ({e})"))?;
    let max = image_props.image_format_properties.max_extent;
    let features = external_props
        .external_memory_properties
        .external_memory_features;
    if !features.contains(vk::ExternalMemoryFeatureFlags::IMPORTABLE) {
        return Err(format!("{what} images cannot be imported from DMA-BUFs"));
    }
    if plane.width > max.width || plane.height > max.height {
        return Err(format!(
            "{what} images are at most {}x{}, the plane is {}x{}",
            max.width, max.height, plane.width, plane.height
        ));
    }
    Ok(())
}

/// Creates a buffer of `size` bytes over the fd's memory: a Vulkan buffer
/// for external memory of `kind`, the import (a memory type both the buffer
/// and the fd allow; dedicated, which some drivers require for imports) and
/// the bind. Consumes `fd` (Vulkan owns it once the import succeeds; it is
/// closed otherwise) and cleans up after itself on failure.
///
/// # Safety
/// `instance`, `physical` and `device` are one live Vulkan device's.
unsafe fn import_raw(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    device: &ash::Device,
    fd: OwnedFd,
    kind: HandleKind,
    size: u64,
    fd_size: u64,
) -> std::result::Result<(vk::Buffer, vk::DeviceMemory), String> {
    let handle = kind.vk();
    let fd_types = match kind {
        HandleKind::DmaBuf => {
            let ext = ash::khr::external_memory_fd::Device::new(instance, device);
            let mut props = vk::MemoryFdPropertiesKHR::default();
            // SAFETY: a valid fd of the handle type named.
            unsafe { ext.get_memory_fd_properties(handle, fd.as_raw_fd(), &mut props) }
                .map_err(|e| format!("the driver cannot import fd {} ({e})", fd.as_raw_fd()))?;
            props.memory_type_bits
        }
        // vkGetMemoryFdPropertiesKHR is not defined for opaque fds: any
        // type the buffer allows (the exporter's device is the same driver).
        HandleKind::OpaqueFd => u32::MAX,
    };
    let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(
            vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::TRANSFER_SRC
                | vk::BufferUsageFlags::TRANSFER_DST,
        )
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut external);
    // SAFETY: a valid create info on a live device.
    let buffer = unsafe { device.create_buffer(&info, None) }
        .map_err(|e| format!("cannot create a buffer for imported memory ({e})"))?;
    let destroy = |why: String| {
        // SAFETY: the buffer is ours and unused.
        unsafe { device.destroy_buffer(buffer, None) };
        why
    };
    // SAFETY: a buffer of this device.
    let req = unsafe { device.get_buffer_memory_requirements(buffer) };
    // An opaque fd is imported at the size it was exported with; a DMA-BUF
    // at what the buffer needs, which must fit in the fd (drivers that map
    // the fd, as lavapipe, would fault past its end).
    let allocation = match kind {
        HandleKind::OpaqueFd => fd_size,
        HandleKind::DmaBuf => req.size,
    };
    if req.size > fd_size {
        return Err(destroy(format!(
            "a buffer over the fd needs {} bytes, the fd has {fd_size}",
            req.size
        )));
    }
    let types = req.memory_type_bits & fd_types;
    if types == 0 {
        return Err(destroy(format!(
            "no memory type suits both a buffer ({:#x}) and the fd ({fd_types:#x})",
            req.memory_type_bits
        )));
    }
    // SAFETY: a physical device of this instance.
    let props = unsafe { instance.get_physical_device_memory_properties(physical) };
    let count = props.memory_type_count.min(vk::MAX_MEMORY_TYPES as u32);
    let type_index = (0..count)
        .find(|&i| types & (1 << i) != 0)
        .ok_or_else(|| destroy("the fd's memory types are not the device's".into()))?;
    let raw = fd.into_raw_fd();
    let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
    let mut import = vk::ImportMemoryFdInfoKHR::default()
        .handle_type(handle)
        .fd(raw);
    let mut alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(allocation)
        .memory_type_index(type_index)
        .push_next(&mut import);
    // An opaque fd must be imported as it was exported (our exporters do not
    // dedicate); a DMA-BUF import may be dedicated, which some drivers want.
    if kind == HandleKind::DmaBuf {
        alloc = alloc.push_next(&mut dedicated);
    }
    // SAFETY: a valid allocate info; on success Vulkan owns `raw`.
    let memory = match unsafe { device.allocate_memory(&alloc, None) } {
        Ok(memory) => memory,
        Err(e) => {
            // SAFETY: the import failed, so `raw` is still ours to close.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
            return Err(destroy(format!("the driver refused the import ({e})")));
        }
    };
    // SAFETY: buffer and memory are this device's, the memory is dedicated
    // to the buffer and at least as large.
    if let Err(e) = unsafe { device.bind_buffer_memory(buffer, memory, 0) } {
        // SAFETY: both ours and unused.
        unsafe { device.free_memory(memory, None) };
        return Err(destroy(format!("cannot bind the imported memory ({e})")));
    }
    Ok((buffer, memory))
}

/// Waits until the DMA-BUF's writers (its implicit write fences) are done:
/// `poll(POLLIN)` on a DMA-BUF returns once they have signalled. Other fds
/// (a memfd) are readable at once. Err after `timeout_ms`.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout_ms: u16) -> Result<()> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms.into());
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis() as libc::c_int) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::invalid(format!(
                "DMA-BUF fd {}: waiting for its writers failed ({e})",
                pfd.fd
            )));
        }
        if n == 0 {
            return Err(Error::invalid(format!(
                "DMA-BUF fd {}: its writers did not finish within {timeout_ms} ms",
                pfd.fd
            )));
        }
        if pfd.revents & libc::POLLNVAL != 0 {
            return Err(Error::invalid(format!(
                "DMA-BUF fd {}: not an open fd",
                pfd.fd
            )));
        }
        return Ok(());
    }
}
