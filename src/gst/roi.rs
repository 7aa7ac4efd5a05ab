//! Results on buffers: one `GstVideoRegionOfInterestMeta` per object, with
//! params in DL Streamer's convention so that its tools (and anything that
//! reads ROI metas) understand ours:
//!
//! - `detection`: `label` (string), `label_id` (int), `confidence`
//!   (double), `x_min`, `y_min`, `x_max`, `y_max` (double, 0..1 of the
//!   frame);
//! - `keypoints` (where the model has them): `points`, an array of doubles
//!   `x0, y0, x1, y1, ...`, 0..1 of the frame;
//! - `rotation`, `mask` and keypoint `scores`: see `roi_extras`;
//! - `classification`, one per class a classifier kept, best first:
//!   `label`, `label_id`, `confidence`, `rank` (0 is the best);
//! - `tracking` (`wgnntrack`): `id` (uint64, the track's, from 1, also the
//!   meta's own id), `age` (uint, frames since the track started) and
//!   `state` (`tracked` or `predicted`); with DL Streamer's `object_id`
//!   (`id`, int) beside it.
//!
//! The meta's own rectangle is the box rounded to whole pixels; readers
//! here prefer the `detection` param's sub-pixel corners where present.

use gst::prelude::ToSendValue;
use gst_video::VideoRegionOfInterestMeta;

use crate::tasks::{Classification, Detection, FrameResults, ObjectResult, Rect};

pub const DETECTION: &str = "detection";
pub const KEYPOINTS: &str = "keypoints";
pub const CLASSIFICATION: &str = "classification";
pub const TRACKING: &str = "tracking";

/// The `roi_type` of the ROI a classifier attaches when it ran on the whole
/// frame rather than on regions.
pub const WHOLE_FRAME: &str = "frame";

/// An ROI read back from a buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Roi {
    /// The meta's id, unique on its buffer.
    pub id: i32,
    pub parent_id: i32,
    /// The meta's rectangle, whole pixels.
    pub pixels: (u32, u32, u32, u32),
    /// What the params say, in frame pixels.
    pub object: ObjectResult,
}

/// The meta's rectangle for `rect`: rounded outwards to whole pixels and
/// kept inside the `width` x `height` frame.
fn pixel_rect(rect: &Rect, width: u32, height: u32) -> (u32, u32, u32, u32) {
    let r = rect.clamped(width, height);
    let x0 = r.x.floor() as u32;
    let y0 = r.y.floor() as u32;
    let x1 = ((r.x + r.w).ceil() as u32).min(width);
    let y1 = ((r.y + r.h).ceil() as u32).min(height);
    (x0, y0, x1.saturating_sub(x0), y1.saturating_sub(y0))
}

/// The id the next ROI on `buf` gets: one past the largest there.
fn next_id(buf: &gst::BufferRef) -> i32 {
    buf.iter_meta::<VideoRegionOfInterestMeta>()
        .map(|m| m.id())
        .max()
        .map_or(0, |id| id.saturating_add(1))
}

/// Attaches `detection` found on a `width` x `height` frame; returns the
/// meta's id. `parent_id` links it to the ROI it was found in (-1: none).
pub fn attach_detection(
    buf: &mut gst::BufferRef,
    detection: &Detection,
    width: u32,
    height: u32,
    parent_id: i32,
) -> i32 {
    let id = next_id(buf);
    let (fw, fh) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let r = &detection.rect;
    let s = gst::Structure::builder(DETECTION)
        .field("label", detection.label.as_str())
        .field("label_id", detection.label_id as i32)
        .field("confidence", f64::from(detection.confidence))
        .field("x_min", f64::from(r.x) / fw)
        .field("y_min", f64::from(r.y) / fh)
        .field("x_max", f64::from(r.x + r.w) / fw)
        .field("y_max", f64::from(r.y + r.h) / fh)
        .build();
    let mut meta =
        VideoRegionOfInterestMeta::add(buf, &detection.label, pixel_rect(r, width, height));
    meta.set_id(id);
    meta.set_parent_id(parent_id);
    meta.add_param(s);
    let (scores, extras) = super::roi_extras::params(&detection.extras);
    if !detection.keypoints.is_empty() {
        let points = detection
            .keypoints
            .iter()
            .flat_map(|[x, y]| [f64::from(*x) / fw, f64::from(*y) / fh])
            .map(|v| v.to_send_value());
        meta.add_param(
            gst::Structure::builder(KEYPOINTS)
                .field("points", gst::Array::from_values(points))
                .field_if_some("scores", scores)
                .build(),
        );
    }
    for p in extras {
        meta.add_param(p);
    }
    id
}

/// Adds `classes` (best first) to the ROI `id` of `buf`; false when the
/// buffer has no such ROI.
pub fn attach_classes(buf: &mut gst::BufferRef, id: i32, classes: &[Classification]) -> bool {
    for mut meta in buf.iter_meta_mut::<VideoRegionOfInterestMeta>() {
        if meta.id() != id {
            continue;
        }
        for (rank, c) in classes.iter().enumerate() {
            meta.add_param(classification_param(c, rank));
        }
        return true;
    }
    false
}

/// Attaches an ROI covering the whole `width` x `height` frame holding
/// `classes`; returns its id.
pub fn attach_frame_classes(
    buf: &mut gst::BufferRef,
    classes: &[Classification],
    width: u32,
    height: u32,
) -> i32 {
    let id = next_id(buf);
    let mut meta = VideoRegionOfInterestMeta::add(buf, WHOLE_FRAME, (0, 0, width, height));
    meta.set_id(id);
    meta.set_parent_id(-1);
    for (rank, c) in classes.iter().enumerate() {
        meta.add_param(classification_param(c, rank));
    }
    id
}

fn classification_param(c: &Classification, rank: usize) -> gst::Structure {
    gst::Structure::builder(CLASSIFICATION)
        .field("label", c.label.as_str())
        .field("label_id", c.label_id as i32)
        .field("confidence", f64::from(c.confidence))
        .field("rank", rank as u32)
        .build()
}

/// Copies every ROI of `from` onto `to`, ids, parents and params kept, the
/// pixel rectangles scaled by `scale` (x, y) for an output of another size
/// (the params hold 0..1 coordinates, so they stay as they are). Elements
/// that make a new output buffer call it so that results survive them.
pub fn copy(from: &gst::BufferRef, to: &mut gst::BufferRef, scale: (f64, f64)) {
    let (sx, sy) = scale;
    let px = |v: u32, s: f64| (f64::from(v) * s).round().clamp(0.0, f64::from(u32::MAX)) as u32;
    for m in from.iter_meta::<VideoRegionOfInterestMeta>() {
        let (x, y, w, h) = m.rect();
        let params: Vec<gst::Structure> = m.params().map(|s| s.to_owned()).collect();
        let mut copy = VideoRegionOfInterestMeta::add(
            to,
            m.roi_type(),
            (px(x, sx), px(y, sy), px(w, sx), px(h, sy)),
        );
        copy.set_id(m.id());
        copy.set_parent_id(m.parent_id());
        for p in params {
            copy.add_param(p);
        }
    }
}

/// The frame's results as its ROI metas hold them (what the elements that
/// write `results-location` after the detector write).
pub fn frame_results(buf: &gst::BufferRef, width: u32, height: u32) -> FrameResults {
    FrameResults {
        pts: buf.pts().map(|t| t.nseconds()),
        width,
        height,
        objects: read(buf, width, height)
            .into_iter()
            .map(|r| r.object)
            .collect(),
    }
}

/// Every ROI on `buf` (a `width` x `height` frame), in meta order.
pub fn read(buf: &gst::BufferRef, width: u32, height: u32) -> Vec<Roi> {
    buf.iter_meta::<VideoRegionOfInterestMeta>()
        .map(|m| read_one(&m, width, height))
        .collect()
}

fn read_one(meta: &VideoRegionOfInterestMeta, width: u32, height: u32) -> Roi {
    let (fw, fh) = (width as f32, height as f32);
    let pixels = meta.rect();
    let mut object = ObjectResult {
        label: meta.roi_type().to_string(),
        label_id: 0,
        confidence: 1.0,
        rect: Rect::new(
            pixels.0 as f32,
            pixels.1 as f32,
            pixels.2 as f32,
            pixels.3 as f32,
        ),
        extras: Default::default(),
        keypoints: Vec::new(),
        classes: Vec::new(),
        id: None,
    };
    let number = |s: &gst::StructureRef, name: &str| s.get::<f64>(name).ok().map(|v| v as f32);
    for s in meta.params() {
        match s.name().as_str() {
            DETECTION => {
                if let Ok(label) = s.get::<&str>("label") {
                    object.label = label.to_string();
                }
                if let Ok(id) = s.get::<i32>("label_id") {
                    object.label_id = id.max(0) as usize;
                }
                if let Some(c) = number(s, "confidence") {
                    object.confidence = c;
                }
                let corners = ["x_min", "y_min", "x_max", "y_max"].map(|n| number(s, n));
                if let [Some(x0), Some(y0), Some(x1), Some(y1)] = corners {
                    object.rect = Rect::from_corners(x0 * fw, y0 * fh, x1 * fw, y1 * fh);
                }
            }
            KEYPOINTS => {
                if let Ok(points) = s.get::<gst::Array>("points") {
                    let v: Vec<f32> = points
                        .iter()
                        .filter_map(|v| v.get::<f64>().ok())
                        .map(|v| v as f32)
                        .collect();
                    object.keypoints = v.chunks_exact(2).map(|p| [p[0] * fw, p[1] * fh]).collect();
                }
                super::roi_extras::read_scores(s, &mut object);
            }
            TRACKING => object.id = s.get::<u64>("id").ok(),
            CLASSIFICATION => {
                let label = s.get::<&str>("label").unwrap_or_default().to_string();
                let label_id = s.get::<i32>("label_id").unwrap_or_default().max(0) as usize;
                let confidence = number(s, "confidence").unwrap_or_default();
                object.classes.push(Classification {
                    label,
                    label_id,
                    confidence,
                });
            }
            _ => {
                super::roi_extras::read(s, &mut object);
            }
        }
    }
    Roi {
        id: meta.id(),
        parent_id: meta.parent_id(),
        pixels,
        object,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detections_and_classes_round_trip_through_roi_metas() {
        gst::init().unwrap();
        let mut buf = gst::Buffer::new();
        let buf = buf.get_mut().unwrap();
        let face = Detection {
            label: "face".into(),
            label_id: 0,
            confidence: 0.75,
            rect: Rect::new(10.5, 20.25, 30.0, 40.0),
            extras: Default::default(),
            keypoints: vec![[12.0, 25.0], [30.0, 26.0]],
        };
        let a = attach_detection(buf, &face, 200, 100, -1);
        let outside = Detection {
            rect: Rect::new(190.0, 90.0, 50.0, 50.0),
            extras: Default::default(),
            keypoints: Vec::new(),
            ..face.clone()
        };
        let b = attach_detection(buf, &outside, 200, 100, a);
        assert_eq!((a, b), (0, 1));
        let classes = [
            Classification {
                label: "smile".into(),
                label_id: 3,
                confidence: 0.9,
            },
            Classification {
                label: "frown".into(),
                label_id: 1,
                confidence: 0.1,
            },
        ];
        assert!(attach_classes(buf, b, &classes));
        assert!(!attach_classes(buf, 7, &classes));
        let c = attach_frame_classes(buf, &classes[..1], 200, 100);
        assert_eq!(c, 2);

        let mut twice = gst::Buffer::new();
        copy(buf, twice.get_mut().unwrap(), (2.0, 2.0));
        let copied = read(&twice, 400, 200);
        assert_eq!(copied.len(), 3);
        assert_eq!(copied[0].pixels, (20, 40, 62, 82));
        assert_eq!(copied[1].parent_id, 0);
        assert_eq!(copied[1].object.classes, classes.to_vec());
        assert!(
            (copied[0].object.rect.x - 21.0).abs() < 1e-3,
            "params are 0..1 of the frame"
        );

        let rois = read(buf, 200, 100);
        assert_eq!(rois.len(), 3);
        assert_eq!(rois[0].pixels, (10, 20, 31, 41));
        let r = &rois[0].object;
        assert_eq!((r.label.as_str(), r.label_id), ("face", 0));
        assert!((r.rect.x - 10.5).abs() < 1e-3 && (r.rect.h - 40.0).abs() < 1e-3);
        assert!((r.confidence - 0.75).abs() < 1e-6);
        assert_eq!(r.keypoints.len(), 2);
        assert!((r.keypoints[1][0] - 30.0).abs() < 1e-3);
        assert_eq!(rois[1].parent_id, 0);
        assert_eq!(rois[1].pixels, (190, 90, 10, 10), "clamped to the frame");
        assert_eq!(rois[1].object.classes, classes.to_vec());
        assert_eq!(rois[2].pixels, (0, 0, 200, 100));
        assert_eq!(rois[2].object.label, WHOLE_FRAME);
        assert_eq!(rois[2].object.classes[0].label, "smile");
    }
}
