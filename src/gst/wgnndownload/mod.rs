//! `wgnndownload`: wgpu-texture frames back into system memory, for
//! downstream elements that need bytes. Every byte it reads is counted.
//!
//! ```text
//! gst-launch-1.0 videotestsrc num-buffers=30 ! wgnnupload ! wgnndownload ! videoconvert ! autovideosink
//! ```

mod imp;

use gst::glib;

glib::wrapper! {
    pub struct WgnnDownload(ObjectSubclass<imp::WgnnDownload>) @extends gst_base::BaseTransform, gst::Element, gst::Object;
}
