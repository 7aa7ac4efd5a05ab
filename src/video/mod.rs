//! Video frames on the GPU: upload a frame's planes once, turn it into a model
//! input tensor (colour conversion, resize, normalisation in one compute pass),
//! and turn model outputs back into RGBA textures (segmentation composite,
//! image tensors), all without reading anything back unless asked to.
//!
//! Independent of GStreamer: frames arrive as bytes plus a [`FrameLayout`].

mod composite;
pub mod cpu;
mod frame;
mod frame_read;
mod image_out;
mod pipelines;
mod pool;
mod readback;
mod tensor_buffer;
mod tensorize;

pub use composite::{
    Background, CompositeOptions, Compositor, EdgeSoftening, Effect, MaskOptions, MAX_BLUR_STRENGTH,
};
pub use frame::{upload_frame, FrameLayout, GpuFrame, PlaneLayout, VideoFormat};
#[cfg(feature = "gst")]
pub(crate) use frame_read::Reader;
pub use frame_read::{ColorSpec, YuvMatrix, YuvRange};
pub use image_out::{create_rgba_texture, ImageRegion, ImageWriter};
pub use pool::{PoolStats, PooledTexture, TextureKey, TexturePool};
pub use readback::download_rgba;
pub use tensor_buffer::TensorBuffer;
pub use tensorize::{
    ChannelOrder, Normalize, OutputDtype, Resize, TensorLayout, TensorizeOptions, Tensorizer,
};
