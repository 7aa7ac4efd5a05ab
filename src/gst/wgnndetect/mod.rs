//! `wgnndetect`: runs a detection model on each frame, passes the frame
//! through untouched and attaches one `GstVideoRegionOfInterestMeta` per
//! object found, with a `detection` param (and `keypoints` where the model
//! has them) in DL Streamer's convention (see [`crate::gst::roi`]).
//!
//! ```text
//! gst-launch-1.0 filesrc location=assets/samples/astronaut.mp4 ! decodebin ! wgnnupload ! \
//!     wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite \
//!         results-location=faces.jsonl ! fakesink
//! ```
//!
//! How the frame fills the model's input and how its outputs become objects
//! (the decoder and its options, labels, thresholds) come from the model's
//! model-proc file: `model-proc`, or by default `<model file stem>.json`
//! beside the model (the bundled MediaPipe face detector carries its own).
//! `labels`, `threshold` and `iou-threshold` override the model-proc's. All of
//! it is read and checked when the element starts, so a bad file fails the
//! state change with one line naming it.
//!
//! On the GPU the frame is never downloaded: the decoder compacts the
//! objects above the threshold into a small list, and only that list is read
//! back (counted in `bytes-downloaded`). `device=cpu` runs on system memory.
//! `results-location` appends one JSON line per frame and `post-messages`
//! posts the same as `wgnn-results` element messages (see
//! [`crate::gst::results`]). `inference-interval=N` runs the model on every
//! Nth frame; the frames between pass with no new objects, marked as
//! skipped so that `wgnntrack` predicts its tracked objects there.
//!
//! The element is glue (properties, caps, buffers, bus errors) around
//! [`Detector`](crate::tasks::Detector).

mod imp;

use gst::glib;

glib::wrapper! {
    pub struct WgnnDetect(ObjectSubclass<imp::WgnnDetect>)
        @extends crate::gst::model_element::WgnnModelElement, gst_base::BaseTransform,
            gst::Element, gst::Object;
}
