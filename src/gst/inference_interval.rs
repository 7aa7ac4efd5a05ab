//! `inference-interval` (as DL Streamer's `gvadetect` has it): a model
//! element runs its model on every Nth frame and lets the others pass as
//! they are. A detector marks the frames it skipped, so that `wgnntrack`
//! predicts the tracked objects on them instead of taking "no detections"
//! for "every object is gone".
//!
//! The mark is a custom meta (`WgnnSkippedMeta`, a structure naming the
//! element), copied with the buffer like any untagged meta.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use gst::glib;
use gst::prelude::*;

pub const PROPERTY: &str = "inference-interval";
pub const DEFAULT: u32 = 1;

/// The custom meta's name.
const SKIPPED: &str = "WgnnSkippedMeta";

/// The property, for the elements that list it.
pub fn property() -> glib::ParamSpec {
    glib::ParamSpecUInt::builder(PROPERTY)
        .nick("Inference interval")
        .blurb(
            "Run the model on every Nth frame only (1: every frame); the frames between pass \
             untouched (a detector marks them, and wgnntrack predicts its objects there)",
        )
        .minimum(1)
        .default_value(DEFAULT)
        .mutable_playing()
        .build()
}

/// Which frames of a stream are due: the first, then one in `interval`.
#[derive(Debug, Default)]
pub struct Cadence(AtomicU64);

impl Cadence {
    /// Whether the next frame is due; counts it.
    pub fn due(&self, interval: u32) -> bool {
        let n = self.0.fetch_add(1, Ordering::Relaxed);
        n % u64::from(interval.max(1)) == 0
    }

    /// The next frame is due again (a new stream, or a seek).
    pub fn restart(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| gst::meta::CustomMeta::register(SKIPPED, &[]));
}

/// Marks `buf` as a frame `element` did not run its detector on.
pub fn mark_skipped(buf: &mut gst::BufferRef, element: &str) {
    register();
    if let Ok(mut meta) = gst::meta::CustomMeta::add(buf, SKIPPED) {
        meta.mut_structure().set("element", element);
    }
}

/// Whether a detector upstream skipped `buf`.
pub fn is_skipped(buf: &gst::BufferRef) -> bool {
    register();
    gst::meta::CustomMeta::from_buffer(buf, SKIPPED).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_frame_in_n_is_due_and_skipped_frames_are_marked() {
        gst::init().unwrap();
        let c = Cadence::default();
        let due: Vec<bool> = (0..7).map(|_| c.due(3)).collect();
        assert_eq!(due, [true, false, false, true, false, false, true]);
        c.restart();
        assert!(c.due(3) && c.due(1));

        let mut buf = gst::Buffer::new();
        assert!(!is_skipped(&buf));
        mark_skipped(buf.get_mut().unwrap(), "det");
        let copy = buf.copy();
        assert!(
            is_skipped(&buf) && is_skipped(&copy),
            "copied with the buffer"
        );
    }
}
