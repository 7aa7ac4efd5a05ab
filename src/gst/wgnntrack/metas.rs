//! What `wgnntrack` reads from and writes onto a buffer's ROI metas.

use std::collections::HashMap;

use gst_video::VideoRegionOfInterestMeta;

use crate::gst::roi;
use crate::tasks::track::TrackInfo;
use crate::tasks::Detection;

/// The ROIs the tracker follows: the top-level ones (no parent) other than
/// a classifier's whole-frame ROI, as (meta id, detection) on a `width` x
/// `height` frame.
pub fn detections(buf: &gst::BufferRef, width: u32, height: u32) -> Vec<(i32, Detection)> {
    roi::read(buf, width, height)
        .into_iter()
        .filter(|r| r.parent_id < 0 && r.object.label != roi::WHOLE_FRAME)
        .map(|r| {
            let o = r.object;
            let d = Detection {
                label: o.label,
                label_id: o.label_id,
                confidence: o.confidence,
                rect: o.rect,
                keypoints: o.keypoints,
                extras: o.extras,
            };
            (r.id, d)
        })
        .collect()
}

/// Attaches an ROI for each predicted track, where it is expected; returns
/// their meta ids (in `tracks`' order).
pub fn attach_predicted(
    buf: &mut gst::BufferRef,
    tracks: &[TrackInfo],
    width: u32,
    height: u32,
) -> Vec<i32> {
    tracks
        .iter()
        .map(|t| {
            let d = Detection {
                label: t.label.clone(),
                label_id: t.label_id,
                confidence: t.confidence,
                rect: t.rect,
                keypoints: Vec::new(),
                extras: Default::default(),
            };
            roi::attach_detection(buf, &d, width, height, -1)
        })
        .collect()
}

/// A track id as a meta id (an `int`).
fn meta_id(track: u64) -> i32 {
    i32::try_from(track).unwrap_or(i32::MAX)
}

/// Gives each ROI of `tracked` (meta id, its track) the track's id as its
/// own and the `tracking` and `object_id` params. Other ROIs whose id the
/// tracks take get fresh ids; `parent_id`s follow their parents.
pub fn write(buf: &mut gst::BufferRef, tracked: &[(i32, TrackInfo)]) {
    let mut new_ids: HashMap<i32, i32> = tracked
        .iter()
        .map(|(old, t)| (*old, meta_id(t.id)))
        .collect();
    let taken: std::collections::HashSet<i32> = new_ids.values().copied().collect();
    let old_ids: Vec<i32> = buf
        .iter_meta::<VideoRegionOfInterestMeta>()
        .map(|m| m.id())
        .collect();
    let mut fresh = old_ids
        .iter()
        .chain(&taken)
        .copied()
        .max()
        .unwrap_or(0)
        .saturating_add(1);
    for old in old_ids {
        if !new_ids.contains_key(&old) && taken.contains(&old) {
            new_ids.insert(old, fresh);
            fresh = fresh.saturating_add(1);
        }
    }
    let info: HashMap<i32, &TrackInfo> = tracked.iter().map(|(old, t)| (*old, t)).collect();
    for mut meta in buf.iter_meta_mut::<VideoRegionOfInterestMeta>() {
        let old = meta.id();
        if let Some(&new) = new_ids.get(&meta.parent_id()) {
            meta.set_parent_id(new);
        }
        if let Some(&new) = new_ids.get(&old) {
            meta.set_id(new);
        }
        if let Some(t) = info.get(&old) {
            meta.add_param(
                gst::Structure::builder(roi::TRACKING)
                    .field("id", t.id)
                    .field("age", t.age)
                    .field("state", t.state.name())
                    .build(),
            );
            meta.add_param(
                gst::Structure::builder("object_id")
                    .field("id", meta_id(t.id))
                    .build(),
            );
        }
    }
}
