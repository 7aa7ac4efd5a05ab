//! `wgnnsuperres`: super-resolution with UpscalerJS's ESRGAN-slim (x2, x3,
//! x4) on the GPU, or any TF.js/TFLite image-to-image model that upscales
//! an NHWC RGB image in 0..255.
//!
//! ```text
//! gst-launch-1.0 videotestsrc num-buffers=30 ! video/x-raw,width=160,height=90 ! \
//!     wgnnupload ! wgnnsuperres scale=2 compare=true ! wgnndownload ! \
//!     videoconvert ! autovideosink
//! ```
//!
//! Input: any format of [`caps::FORMATS`](crate::gst::caps::FORMATS) in
//! system memory or `memory:WgpuTexture`; output: RGBA at `scale` times the
//! input size (twice as wide again with `compare=true`: bicubic on the
//! left, the model on the right), in the input's memory kind unless
//! downstream only takes the other. `device=cpu` runs the model and the
//! frame processing on the CPU, on system memory only.
//!
//! The element is glue (properties, caps, buffers, bus errors) around
//! [`Upscaler`](crate::tasks::Upscaler).

mod imp;

use gst::glib;

glib::wrapper! {
    pub struct WgnnSuperres(ObjectSubclass<imp::WgnnSuperres>)
        @extends crate::gst::model_element::WgnnModelElement, gst_base::BaseTransform,
            gst::Element, gst::Object;
}
