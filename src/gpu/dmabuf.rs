//! The Vulkan side of DMA-BUF import (`crate::video::dmabuf` is the public
//! face): the fd kept by an import, the device's import capabilities, and
//! the imported images and buffers.

use std::os::fd::{AsRawFd, OwnedFd};

use super::Gpu;
use crate::error::{Error, Result};
use crate::video::dmabuf::{DmabufFrame, Imported, Support};
use crate::video::TexturePool;

/// One fd's memory as an import holds it.
pub(crate) struct Memory {
    fd: OwnedFd,
    size: u64,
}

impl Memory {
    pub(crate) fn new(fd: OwnedFd) -> Result<Memory> {
        // SAFETY: lseek on a valid fd we own; SEEK_END with offset 0 only
        // reads the size (the file position of our dup is ours alone).
        let end = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_END) };
        if end < 0 {
            return Err(Error::invalid(format!(
                "DMA-BUF fd {}: cannot read its size ({})",
                fd.as_raw_fd(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(Memory {
            fd,
            size: end as u64,
        })
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}

/// Which import path `gpu` would take.
pub(crate) fn support(gpu: &Gpu) -> Support {
    if gpu.info().backend != wgpu::Backend::Vulkan {
        return Support::None(format!(
            "DMA-BUF import needs the Vulkan backend, the device runs on {:?}",
            gpu.info().backend
        ));
    }
    if gpu.has(wgpu::Features::VULKAN_EXTERNAL_MEMORY_DMA_BUF) {
        return Support::Texture;
    }
    Support::None("DMA-BUF import is not implemented yet".into())
}

/// Imports `frame` on `gpu` (validated by the caller).
pub(crate) fn import(gpu: &Gpu, _pool: &TexturePool, _frame: &DmabufFrame<'_>) -> Result<Imported> {
    Ok(Imported::Unsupported(match support(gpu) {
        Support::None(why) => why,
        _ => "DMA-BUF import is not implemented yet".into(),
    }))
}
