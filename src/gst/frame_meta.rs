//! `video/x-raw(memory:WgpuTexture)` buffers: a GstBuffer with no system
//! memory and a [`WgpuFrameMeta`] holding the frame's GPU textures.
//!
//! A meta rather than a custom GstMemory: wgpu textures cannot be mapped to
//! the CPU, so a GstMemory would only ever fail `map()`; a meta says plainly
//! "the pixels are on the GPU", copies with the buffer, and the textures go
//! back to their pool when the last buffer holding them is freed.

use std::sync::Arc;

use crate::gst::arc_meta::arc_meta;
use crate::video::GpuFrame;

/// The caps feature of buffers whose pixels live in wgpu textures.
pub const CAPS_FEATURE_WGPU_TEXTURE: &str = "memory:WgpuTexture";

arc_meta!(
    /// The GPU frame of a `memory:WgpuTexture` buffer.
    WgpuFrameMeta,
    GpuFrame,
    "WgnnWgpuFrameMetaAPI",
    "WgnnWgpuFrameMeta"
);

impl WgpuFrameMeta {
    pub fn frame(&self) -> &Arc<GpuFrame> {
        self.value()
    }
}

/// The GPU frame of a buffer, if it carries one.
pub fn frame_of(buffer: &gst::BufferRef) -> Option<Arc<GpuFrame>> {
    buffer.meta::<WgpuFrameMeta>().map(|m| m.frame().clone())
}

/// A new buffer carrying `frame`, with no system memory.
pub fn buffer_for(frame: Arc<GpuFrame>) -> gst::Buffer {
    let mut buffer = gst::Buffer::new();
    WgpuFrameMeta::add(buffer.get_mut().unwrap(), frame);
    buffer
}
