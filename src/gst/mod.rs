//! GStreamer elements. They live in the library (feature `gst`, on by
//! default) so that the binaries can register them statically; the plugin crate
//! `plugins/gst-wgnn` only wraps [`register`] into `libgstwgnn.so`.

pub mod analytics_meta;
pub mod app;
mod arc_meta;
pub mod caps;
pub mod device;
pub mod device_choice;
pub mod drm_format;
mod element;
pub mod elements;
pub mod frame_meta;
mod frame_meter;
pub mod frames;
pub mod inference_interval;
pub mod instance;
mod latency;
mod memory_cache;
mod model_element;
mod pass_through;
pub mod precision_choice;
mod profile;
pub mod property;
pub mod results;
pub mod roi;
pub mod roi_extras;
mod stage_clock;
mod stats;
pub mod tensor_meta;
mod transfer;
mod wgnnanalytics;
mod wgnnclassify;
mod wgnndetect;
mod wgnndownload;
mod wgnninfer;
mod wgnnoverlay;
mod wgnnpublish;
pub mod wgnnsegment;
mod wgnnsink;
mod wgnnsuperres;
mod wgnntrack;
mod wgnnupload;

pub use model_element::MAX_FRAMES_IN_FLIGHT;

use gst::glib;

/// Defines `CAT`, an element's debug category, named after the element so
/// that `GST_DEBUG=wgnnsegment:6` picks one and `GST_DEBUG=wgnn*:5` all of
/// them. Shared code logs under the category of the element that calls it.
macro_rules! element_category {
    ($element:literal, $description:literal) => {
        static CAT: std::sync::LazyLock<gst::DebugCategory> = std::sync::LazyLock::new(|| {
            gst::DebugCategory::new($element, gst::DebugColorFlags::empty(), Some($description))
        });
    };
}
pub(crate) use element_category;

/// Registers every wgnn element ([`elements::ELEMENTS`]), on `plugin` when
/// loaded as `libgstwgnn.so`, or process-wide (`None`) for applications that
/// link the library.
pub fn register(plugin: Option<&gst::Plugin>) -> Result<(), glib::BoolError> {
    // Default models are found beside an installed plugin file, wherever
    // the application that loaded it lives.
    if let Some(file) = plugin.and_then(|p| p.filename()) {
        crate::assets::set_plugin_file(&file);
    }
    elements::register(plugin)
}

/// Initialises GStreamer and registers the elements inside this process, so
/// that a binary needs no `GST_PLUGIN_PATH`. Safe to call more than once.
pub fn register_static() -> Result<(), glib::BoolError> {
    static ONCE: std::sync::OnceLock<Result<(), glib::BoolError>> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        gst::init().map_err(|e| glib::bool_error!("GStreamer init failed: {e}"))?;
        register(None)
    })
    .clone()
}
