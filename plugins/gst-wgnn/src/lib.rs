//! The `wgnn` GStreamer plugin (`libgstwgnn.so`). The elements live in the
//! `wgnn` library (module `wgnn::gst`); this crate only exports them as a
//! loadable plugin and as `plugin_register_static()` for applications.

use gst::glib;

gst::plugin_define!(
    wgnn,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    env!("CARGO_PKG_VERSION"),
    "MIT/X11",
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_NAME"),
    "https://github.com/wgnn/wgnn"
);

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    wgnn::gst::register(Some(plugin))
}
