//! `wgnn::video`: frame upload, tensorize and composite against CPU
//! references, the CPU frame path against the shaders, and a whole selfie
//! pass with its transfer counts.
//!
//! One test binary per area (`tests/<area>/main.rs`), one module per topic:
//! a new test file here is one more `mod` line.

#[path = "../common/mod.rs"]
mod common;

mod composite;
mod cpu;
mod dmabuf_opaque;
mod frames;
mod selfie_pipeline;
mod tensorize;
mod tensorize_region;
mod tensorize_slots;
mod upload_ring;
mod upload_then;
