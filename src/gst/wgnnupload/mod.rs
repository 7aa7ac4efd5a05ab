//! `wgnnupload`: system-memory video frames into wgpu textures
//! (`video/x-raw(memory:WgpuTexture)`), one counted upload per plane.
//!
//! ```text
//! gst-launch-1.0 videotestsrc num-buffers=30 ! wgnnupload ! wgnndownload ! videoconvert ! autovideosink
//! ```

mod imp;

use gst::glib;

glib::wrapper! {
    pub struct WgnnUpload(ObjectSubclass<imp::WgnnUpload>) @extends gst_base::BaseTransform, gst::Element, gst::Object;
}
