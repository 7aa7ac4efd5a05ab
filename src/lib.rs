//! wgnn: neural networks on live video, on the GPU through wgpu, inside GStreamer.
//!
//! Modules depend on each other in one direction only (see docs/ARCHITECTURE.md):
//! `gpu` -> `ml`, `video` -> `models` -> `tasks` -> `gst` -> binaries.

pub mod assets;
pub mod error;
pub mod files;
pub mod gpu;
#[cfg(feature = "gst")]
pub mod gst;
pub mod manual;
pub mod ml;
pub mod models;
pub mod tasks;
pub mod video;

pub use error::{Error, Result};

/// The directory of wgnn's bundled assets (models, sample media): see
/// [`assets`] for the search order (`$WGNN_ASSETS_DIR`, beside the installed
/// plugin or program, the source tree, `$XDG_DATA_DIRS`).
pub fn assets_dir() -> std::path::PathBuf {
    assets::dir()
}
