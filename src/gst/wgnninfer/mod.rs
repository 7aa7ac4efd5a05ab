//! `wgnninfer`: runs any model `wgnn::models` loads on each frame, passes the
//! frame through untouched and attaches the outputs as a
//! [`WgnnTensorMeta`](crate::gst::tensor_meta::WgnnTensorMeta): tensors that
//! stay on the GPU for downstream code to read or rent.
//!
//! ```text
//! gst-launch-1.0 videotestsrc num-buffers=30 ! video/x-raw,width=160,height=120 ! \
//!     wgnnupload ! wgnninfer model=assets/models/selfie/selfie_segmentation.tflite ! fakesink
//! ```
//!
//! The frame becomes the model's first input as
//! [`ImageInput`](crate::tasks::ImageInput) says: resized to the input's
//! declared size (`resize`), scaled to `input-range` (default: the model
//! family's convention), RGB or BGR, NHWC or NCHW as the input's shape says.
//! A model that takes any size gets the frame's. `device=cpu` runs on system
//! memory only, and the outputs are tensors of a CPU context.
//!
//! The element is glue (properties, caps, buffers, bus errors) around
//! [`ImageInference`](crate::tasks::ImageInference).

mod imp;
mod input_range;

use gst::glib;

/// How the frame is fitted to the model input.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnInferResize")]
pub enum InferResize {
    #[default]
    #[enum_value(name = "Stretch to the input size", nick = "stretch")]
    Stretch,
    #[enum_value(
        name = "Fit inside, keep the aspect ratio, pad with black",
        nick = "letterbox"
    )]
    Letterbox,
    #[enum_value(name = "Cover, keep the aspect ratio, cut the overhang", nick = "crop")]
    Crop,
}

glib::wrapper! {
    pub struct WgnnInfer(ObjectSubclass<imp::WgnnInfer>)
        @extends crate::gst::model_element::WgnnModelElement, gst_base::BaseTransform,
            gst::Element, gst::Object;
}
