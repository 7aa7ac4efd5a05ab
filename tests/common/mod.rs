//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::OnceLock;

/// The GPU every test uses. Tests that need a GPU fail (never skip) when there
/// is none: CI has lavapipe, so a missing adapter is a broken set-up.
pub fn gpu() -> wgnn::gpu::Gpu {
    static GPU: OnceLock<wgnn::gpu::Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let _ = env_logger::builder().is_test(true).try_init();
        wgnn::gpu::Gpu::new().unwrap_or_else(|e| {
            panic!("this test needs a GPU adapter (install mesa-vulkan-drivers for lavapipe): {e}")
        })
    })
    .clone()
}

/// Path of the repository root (where Cargo.toml is).
pub fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A GPU handle of its own, for tests that assert exact transfer counts and
/// must not see other tests' traffic.
pub fn own_gpu() -> wgnn::gpu::Gpu {
    let _ = gpu();
    wgnn::gpu::Gpu::new().expect("GPU adapter")
}
