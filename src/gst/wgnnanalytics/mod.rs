//! `wgnnanalytics`: counts what the regions of interest on each frame do
//! against the lines and zones of a JSON file (`config`): each tracked
//! object's crossings of each line by its box centre, in each direction,
//! and the objects inside each zone. Events (a line crossed, a zone entered
//! or left) are posted as `wgnn-analytics` element messages; the frame's
//! counts and events travel on the buffer for `wgnnpublish`
//! ([`crate::gst::analytics_meta`]); `results-location` appends one JSON
//! line per frame (docs/RESULTS.md). The logic is
//! [`Analytics`](crate::tasks::analytics::Analytics).
//!
//! ```text
//! gst-launch-1.0 filesrc location=in.mp4 ! decodebin ! wgnnupload ! \
//!     wgnndetect model=yolov8n.onnx ! wgnntrack ! \
//!     wgnnanalytics config=door.json results-location=counts.jsonl ! fakesink
//! ```
//!
//! An object is tracked when its ROI carries a `tracking` param (as
//! `wgnntrack` attaches it); an untracked object is counted in zones but
//! cannot cross lines. A line's `forward` direction is towards the side a
//! quarter turn clockwise on screen from its first point to its second:
//! for a line drawn left to right, downwards; for one drawn top to bottom,
//! right to left.
//!
//! Frames pass through untouched, in whatever memory they came in (wgpu
//! textures, DMA-BUF or system memory): the element reads no pixels.

mod imp;

use gst::glib;

glib::wrapper! {
    pub struct WgnnAnalytics(ObjectSubclass<imp::WgnnAnalytics>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}
