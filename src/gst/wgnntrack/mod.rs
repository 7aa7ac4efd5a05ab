//! `wgnntrack`: gives the regions of interest that come from upstream
//! (`wgnndetect`, or any element that attaches
//! `GstVideoRegionOfInterestMeta`) ids that persist from frame to frame.
//! The tracker works on boxes only, so the frame passes through untouched
//! in whatever memory it is in (`memory:WgpuTexture` included): nothing is
//! uploaded or read back.
//!
//! ```text
//! gst-launch-1.0 filesrc location=assets/samples/astronaut.mp4 ! decodebin ! wgnnupload ! \
//!     wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite \
//!         inference-interval=2 ! \
//!     wgnntrack tracker=bytetrack results-location=tracks.jsonl ! wgnnoverlay ! \
//!     wgnndownload ! videoconvert ! autovideosink
//! ```
//!
//! Each top-level ROI (no parent) whose detection continues a track gets
//! the track's id as the meta's own `id` (the ids of other ROIs on the
//! buffer, and their children's `parent_id`, move aside where they would
//! clash) and a `tracking` param: `id`, `age` (frames) and `state`
//! (`tracked`), with DL Streamer's `object_id` param beside it (see
//! [`crate::gst::roi`]). A detection not yet confirmed (`min-hits`) gets no
//! id. On a frame the detector skipped (`inference-interval`), the element
//! attaches one ROI per tracked object where its track is expected, with a
//! `detection` param (the last detection's label and confidence) and
//! `state` `predicted`. `results-location` and `post-messages` write each
//! frame's objects with their `"id"` (see [`crate::gst::results`]).
//!
//! The trackers (`tracker`) are [`crate::tasks::track`]'s: `iou` and
//! `bytetrack`. A seek (flush) forgets the tracks; ids keep counting.

mod imp;
mod metas;

use gst::glib;

use crate::tasks::track::TrackerKind;

/// The `tracker` property.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnTracker")]
pub enum Tracker {
    /// Each track keeps its last box; detections match by overlap.
    #[enum_value(
        name = "IoU: each track keeps its last box; detections match by overlap",
        nick = "iou"
    )]
    Iou,
    /// Kalman motion, and a second pass for weak detections.
    #[default]
    #[enum_value(
        name = "ByteTrack: Kalman motion, and a second pass for weak detections",
        nick = "bytetrack"
    )]
    ByteTrack,
}

impl From<Tracker> for TrackerKind {
    fn from(t: Tracker) -> Self {
        match t {
            Tracker::Iou => TrackerKind::Iou,
            Tracker::ByteTrack => TrackerKind::ByteTrack,
        }
    }
}

glib::wrapper! {
    pub struct WgnnTrack(ObjectSubclass<imp::WgnnTrack>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}
