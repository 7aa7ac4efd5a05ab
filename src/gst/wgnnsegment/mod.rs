//! `wgnnsegment`: selfie segmentation (MediaPipe) with the person mask applied
//! to the frame on the GPU: blur or replace the background, or show the mask.
//! The element is glue (properties, caps, buffers, bus errors) around
//! [`Segmenter`](crate::tasks::Segmenter).
//!
//! ```text
//! gst-launch-1.0 videotestsrc num-buffers=30 ! video/x-raw,width=320,height=240 ! \
//!     wgnnupload ! wgnnsegment effect=blur blur-strength=12 ! wgnndownload ! \
//!     videoconvert ! autovideosink
//! ```
//!
//! Input: any format of [`caps::FORMATS`](crate::gst::caps::FORMATS), in
//! system memory or `memory:WgpuTexture`; output: RGBA at the input size, in
//! the input's memory kind unless downstream only takes the other. With
//! texture memory on both sides a frame costs no transfer at all.
//!
//! `device=cpu` (or `device=auto` without a hardware GPU) runs the model on
//! wgnn's CPU context and the frame processing in [`crate::video::cpu`], on
//! system memory only: texture caps are refused, and nothing is uploaded or
//! downloaded.

mod imp;

use gst::glib;

/// The `background` property's value (kept here for code that named it
/// when it lived in this element).
pub use crate::tasks::BackgroundSpec;

/// What the element does with the mask.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnSegmentEffect")]
pub enum SegmentEffect {
    #[default]
    #[enum_value(name = "Blur the background", nick = "blur")]
    Blur,
    #[enum_value(name = "Replace the background (see `background`)", nick = "replace")]
    Replace,
    #[enum_value(name = "Show the person mask as grey (white = person)", nick = "mask")]
    Mask,
    #[enum_value(name = "Pass the frame through as RGBA, no model", nick = "none")]
    None,
}

glib::wrapper! {
    pub struct WgnnSegment(ObjectSubclass<imp::WgnnSegment>)
        @extends crate::gst::model_element::WgnnModelElement, gst_base::BaseTransform,
            gst::Element, gst::Object;
}
