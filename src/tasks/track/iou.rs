//! The IoU tracker: a track is where its last detection was, and each
//! detection (at or above the low threshold) continues the track it
//! overlaps most, the pairs chosen together (Hungarian assignment) rather
//! than greedily.

use super::{match_pairs, Track, TrackerOptions};
use crate::tasks::Detection;

/// The pairs (track, detection) of this frame.
pub(super) fn associate(
    tracks: &[Track],
    detections: &[Detection],
    o: &TrackerOptions,
) -> Vec<(usize, usize)> {
    let all: Vec<usize> = (0..tracks.len()).collect();
    let dets: Vec<usize> = (0..detections.len())
        .filter(|&d| detections[d].confidence >= o.low_threshold)
        .collect();
    match_pairs(tracks, &all, detections, &dets, o.iou_threshold)
}
