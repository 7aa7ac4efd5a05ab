//! wgnn: neural networks on live video, on the GPU through wgpu, inside GStreamer.
//!
//! Modules depend on each other in one direction only (see docs/ARCHITECTURE.md):
//! `gpu` -> `ml`, `video` -> `models` -> `tasks` -> `gst` -> binaries.

pub mod error;
pub mod gpu;
#[cfg(feature = "gst")]
pub mod gst;
pub mod ml;
pub mod models;
pub mod tasks;
pub mod video;

pub use error::{Error, Result};

/// The directory of wgnn's bundled assets (models, sample media):
/// `$WGNN_ASSETS_DIR` when set (installed copies), else the source tree's
/// `assets/`.
pub fn assets_dir() -> std::path::PathBuf {
    std::env::var_os("WGNN_ASSETS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets"))
}
