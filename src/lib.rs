//! wgnn: neural networks on live video, on the GPU through wgpu, inside GStreamer.
//!
//! Modules depend on each other in one direction only (see docs/ARCHITECTURE.md):
//! `gpu` -> `video`, `ml` -> `models` -> `gst` -> binaries.

pub mod error;
pub mod gpu;
#[cfg(feature = "gst")]
pub mod gst;
pub mod ml;
pub mod models;
pub mod video;

pub use error::{Error, Result};
