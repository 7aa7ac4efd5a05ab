//! ByteTrack (Zhang et al., 2022): the tracks' boxes move with a Kalman
//! filter, and detections are matched in passes:
//!
//! 1. confident detections (at or above the high threshold) with the tracks
//!    that have an id, tracked or lost;
//! 2. weak detections (low to high threshold) with the tracked ones the
//!    first pass left, at an overlap of at least 0.5: a partly hidden
//!    object scores low but is still where its track goes;
//! 3. the confident detections left with the tentative tracks (started on
//!    an earlier frame, no id yet).

use super::{match_pairs, Track, TrackerOptions, SECOND_PASS_IOU};
use crate::tasks::Detection;

/// The pairs (track, detection) of this frame.
pub(super) fn associate(
    tracks: &[Track],
    detections: &[Detection],
    o: &TrackerOptions,
) -> Vec<(usize, usize)> {
    let by_score = |keep: &dyn Fn(f32) -> bool| -> Vec<usize> {
        (0..detections.len())
            .filter(|&d| keep(detections[d].confidence))
            .collect()
    };
    let high = by_score(&|c| c >= o.high_threshold);
    let low = by_score(&|c| c >= o.low_threshold && c < o.high_threshold);
    let confirmed: Vec<usize> = (0..tracks.len()).filter(|&t| tracks[t].id != 0).collect();
    let mut pairs = match_pairs(tracks, &confirmed, detections, &high, o.iou_threshold);

    let taken = |pairs: &[(usize, usize)], t: usize| pairs.iter().any(|p| p.0 == t);
    let left: Vec<usize> = confirmed
        .iter()
        .copied()
        .filter(|&t| !tracks[t].lost && !taken(&pairs, t))
        .collect();
    let second = o.iou_threshold.max(SECOND_PASS_IOU);
    pairs.extend(match_pairs(tracks, &left, detections, &low, second));

    let tentative: Vec<usize> = (0..tracks.len()).filter(|&t| tracks[t].id == 0).collect();
    let high_left: Vec<usize> = high
        .into_iter()
        .filter(|&d| !pairs.iter().any(|p| p.1 == d))
        .collect();
    pairs.extend(match_pairs(
        tracks,
        &tentative,
        detections,
        &high_left,
        o.iou_threshold,
    ));
    pairs
}
