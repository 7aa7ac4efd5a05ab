//! Video frames on the GPU: upload a frame's planes once, turn it into a model
//! input tensor (colour conversion, resize, normalisation in one compute pass),
//! and turn model outputs back into RGBA textures (segmentation composite,
//! image tensors), all without reading anything back unless asked to.
//!
//! Independent of GStreamer: frames arrive as bytes plus a [`FrameLayout`].
//!
//! Every frame kernel is specialised and compiled the way `ml`'s are
//! (`crate::gpu::shader`), by one rule of thumb: **whatever sizes a workgroup
//! array or picks a code path is specialised** (generated `const` lines: the
//! frame reader, tensor layout, effect, blur direction and tiling, output
//! type); **everything else is a value** in the kernel's `struct Params`
//! uniform (sizes, normalisation, colours, thresholds, blur sigma, smoothing
//! weight, YUV matrix), written once per configuration. So a new frame, mask
//! or model size compiles no new pipeline, and every pipeline comes from the
//! device's one cache (`Gpu::compute_pipeline`).

mod composite;
pub mod cpu;
#[cfg(target_os = "linux")]
pub mod dmabuf;
#[cfg(target_os = "linux")]
mod dmabuf_unpack;
mod frame;
mod frame_read;
mod image_out;
mod overlay;
mod pool;
mod readback;
mod tensor_buffer;
mod tensorize;

pub use composite::{
    Background, CompositeOptions, Compositor, EdgeSoftening, Effect, MaskOptions, MAX_BLUR_STRENGTH,
};
#[cfg(target_os = "linux")]
pub use dmabuf::{
    import_frame, DmabufFrame, DmabufImport, DmabufPlane, Imported, DRM_FORMAT_MOD_LINEAR,
};
pub use frame::{upload_frame, upload_frame_then, FrameLayout, GpuFrame, PlaneLayout, VideoFormat};
#[cfg(feature = "gst")]
pub(crate) use frame_read::{frame_bind_group, yuv_buffer, Reader};
pub use frame_read::{ColorSpec, YuvMatrix, YuvRange};
pub use image_out::{create_rgba_texture, ImageRegion, ImageWriter};
pub use overlay::{
    Overlay, OverlayItem, OverlayMask, OverlayPath, OverlayStyle, COCO_SKELETON, MAX_FONT_SIZE,
    MAX_KEYPOINT_RADIUS, MAX_LINE_WIDTH, MIN_FONT_SIZE,
};
pub use pool::{PoolStats, PooledTexture, TextureKey, TexturePool};
pub use readback::download_rgba;
pub use tensor_buffer::TensorBuffer;
pub use tensorize::{
    ChannelOrder, Normalize, OutputDtype, Resize, Sampling, TensorLayout, TensorizeOptions,
    Tensorizer,
};

/// Workgroups of 8x8 covering `width` x `height`.
pub(crate) fn groups_2d(width: u32, height: u32) -> (u32, u32) {
    (width.div_ceil(8), height.div_ceil(8))
}

#[cfg(test)]
mod kernel_tests;
