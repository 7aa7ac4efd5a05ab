//! DMA-BUF import (`wgnn::video::dmabuf`) on Mesa 25 lavapipe, which has
//! `VK_EXT_external_memory_dma_buf` (bookworm's Mesa 22.3 has not): frames in
//! memfds imported as buffers, unpacked on the GPU, and compared with the
//! upload path; bad input.
//!
//! **Relies on lavapipe's leniency**: a memfd is not a DMA-BUF, but lavapipe
//! imports a DMA-BUF handle by mapping the fd, so a memfd works there (a
//! hardware driver would refuse it). CI has no /dev/dri and no udmabuf to
//! make real ones.
//!
//! This binary, and only it, selects Mesa 25 lavapipe unpacked by
//! `bash .ci/lavapipe25` into target/lavapipe-25 (or the ICD file
//! `$WGNN_LAVAPIPE25_ICD` names); without it every test fails saying so.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod bench;
#[cfg(feature = "gst")]
#[path = "../gst/dmabuf.rs"]
mod elements;
mod import;

/// `elements` (tests/gst/dmabuf.rs, the GStreamer elements fed DMA-BUFs)
/// here on Mesa 25 lavapipe: every frame must be imported.
#[cfg(feature = "gst")]
const DMABUF_IMPORT_EXPECTED: bool = true;
#[cfg(feature = "gst")]
fn select_dmabuf_device() {
    select_lavapipe25();
}

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::OnceLock;

use wgnn::gpu::Gpu;

/// Names the ICD file of Mesa 25 lavapipe (default:
/// target/lavapipe-25/lvp_icd.json, which `bash .ci/lavapipe25` writes).
const ICD_ENV: &str = "WGNN_LAVAPIPE25_ICD";

/// Points the Vulkan loader at Mesa 25 lavapipe, once, before any device of
/// this process is opened.
fn select_lavapipe25() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let _ = env_logger::builder().is_test(true).try_init();
        let icd = std::env::var_os(ICD_ENV)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| common::root().join("target/lavapipe-25/lvp_icd.json"));
        assert!(
            icd.exists(),
            "{} is missing: the DMA-BUF tests need Mesa 25 lavapipe; run `bash .ci/lavapipe25` \
             (it unpacks Debian bookworm-backports' mesa-vulkan-drivers into target/lavapipe-25; \
             `bash .ci/test` runs it) or set {ICD_ENV} to another Mesa 25 lavapipe ICD file",
            icd.display()
        );
        // SAFETY (edition 2021: safe; noted for 2024): set before this
        // process opens any Vulkan instance, on the one thread that will.
        std::env::set_var("VK_DRIVER_FILES", &icd);
        std::env::set_var("VK_ICD_FILENAMES", &icd);
        std::env::set_var("WGPU_BACKEND", "vulkan");
        std::env::remove_var("WGPU_ADAPTER_NAME");
    });
}

/// A device of its own on Mesa 25 lavapipe (tests assert exact counts).
pub fn gpu() -> Gpu {
    select_lavapipe25();
    let gpu = Gpu::new().expect("a device on Mesa 25 lavapipe");
    let info = gpu.info();
    assert!(
        info.driver_info.contains("Mesa 2") && !info.driver_info.contains("Mesa 22."),
        "expected Mesa 25 lavapipe, got {} ({})",
        info.name,
        info.driver_info
    );
    gpu
}

/// A memfd of `size` bytes holding `bytes` at `at`.
pub fn memfd(bytes: &[u8], at: usize, size: usize) -> OwnedFd {
    assert!(at + bytes.len() <= size);
    // SAFETY: a NUL-terminated name, no flags beyond close-on-exec.
    let raw = unsafe { libc::memfd_create(c"wgnn-test-frame".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(
        raw >= 0,
        "memfd_create: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut file = std::fs::File::from(fd);
    file.set_len(size as u64).unwrap();
    let mut content = vec![0u8; size];
    content[at..at + bytes.len()].copy_from_slice(bytes);
    file.write_all(&content).unwrap();
    OwnedFd::from(file)
}
