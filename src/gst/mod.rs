//! GStreamer elements. They live in the library (feature `gst`, on by
//! default) so that the binaries can register them statically; the plugin crate
//! `plugins/gst-wgnn` only wraps [`register`] into `libgstwgnn.so`.

use gst::glib;

/// Registers every wgnn element, on `plugin` when loaded as `libgstwgnn.so`,
/// or process-wide (`None`) for applications that link the library.
pub fn register(_plugin: Option<&gst::Plugin>) -> Result<(), glib::BoolError> {
    Ok(())
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
