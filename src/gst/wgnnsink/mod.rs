//! `wgnnsink`: shows video frames in a window through a wgpu surface. Frames
//! in `memory:WgpuTexture` are drawn from their textures with no readback;
//! system-memory frames are uploaded once (counted). The picture keeps its
//! aspect ratio (black bars), and the GStreamer clock paces it (`sync`, QoS
//! and `last-sample` come from the video sink base class).
//!
//! ```text
//! gst-launch-1.0 videotestsrc ! wgnnupload ! wgnnsink
//! gst-launch-1.0 videotestsrc ! video/x-raw,width=1280,height=720 ! wgnnsink fullscreen=true
//! ```
//!
//! - `fullscreen`: borderless fullscreen; `window-title`; `width`/`height`:
//!   the window's first size (0: the frame's display size).
//! - `offscreen=true`: no window and no display needed; frames are drawn with
//!   the same pipeline into an RGBA texture of `width` x `height` (0: the
//!   frame's size). The `snapshot` action signal returns the last picture as
//!   an RGBA `GstSample`, read back (and counted in `bytes-downloaded`) only
//!   when asked; drawing itself downloads nothing. In a window, `snapshot`
//!   draws the last frame at the window's size and reads that.
//! - Errors go to the bus: no display (without `offscreen`), no GPU adapter,
//!   the window closed by the user, a surface that cannot be recreated.
//!
//! All windows of a process live on one UI thread (see `window`), since
//! winit allows a single event loop per process.

mod imp;
mod present;
mod window;
mod window_target;

use gst::glib;

glib::wrapper! {
    pub struct WgnnSink(ObjectSubclass<imp::WgnnSink>)
        @extends gst_video::VideoSink, gst_base::BaseSink, gst::Element, gst::Object;
}
