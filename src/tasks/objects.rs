//! What detection and classification produce, in frame pixels: the values
//! the elements attach as `GstVideoRegionOfInterestMeta`, draw, and write as
//! JSON lines.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

use super::mask::{Extras, MaskJson};

/// A rectangle in frame pixels; floating point because decoders give
/// sub-pixel boxes (the ROI meta rounds them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Rect {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Rect {
    pub fn new(x: f32, y: f32, w: f32, h: f32) -> Rect {
        Rect { x, y, w, h }
    }

    /// The rectangle from corners (x_min, y_min) to (x_max, y_max).
    pub fn from_corners(x_min: f32, y_min: f32, x_max: f32, y_max: f32) -> Rect {
        Rect::new(x_min, y_min, x_max - x_min, y_max - y_min)
    }

    pub fn area(&self) -> f32 {
        self.w.max(0.0) * self.h.max(0.0)
    }

    /// Intersection over union; 0 where either is empty.
    pub fn iou(&self, other: &Rect) -> f32 {
        let x0 = self.x.max(other.x);
        let y0 = self.y.max(other.y);
        let x1 = (self.x + self.w).min(other.x + other.w);
        let y1 = (self.y + self.h).min(other.y + other.h);
        let inter = (x1 - x0).max(0.0) * (y1 - y0).max(0.0);
        let union = self.area() + other.area() - inter;
        if union > 0.0 {
            inter / union
        } else {
            0.0
        }
    }

    /// The part of this rectangle inside a `width` x `height` frame (may be
    /// empty: w or h 0).
    pub fn clamped(&self, width: u32, height: u32) -> Rect {
        let (fw, fh) = (width as f32, height as f32);
        let x0 = self.x.clamp(0.0, fw);
        let y0 = self.y.clamp(0.0, fh);
        let x1 = (self.x + self.w).clamp(0.0, fw);
        let y1 = (self.y + self.h).clamp(0.0, fh);
        Rect::from_corners(x0, y0, x1.max(x0), y1.max(y0))
    }
}

/// One class a classifier or detector gave, with its score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Classification {
    pub label: String,
    pub label_id: usize,
    pub confidence: f32,
}

/// One detected object, in frame pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct Detection {
    pub label: String,
    pub label_id: usize,
    pub confidence: f32,
    pub rect: Rect,
    /// (x, y) per keypoint, in frame pixels; empty where the model has none.
    pub keypoints: Vec<[f32; 2]>,
    /// Keypoint scores, the angle of an oriented box, the mask.
    pub extras: Extras,
}

/// One object as the results of a frame list it: a detection (or a region
/// upstream attached) and what classifiers said of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectResult {
    pub label: String,
    pub label_id: usize,
    pub confidence: f32,
    pub rect: Rect,
    pub keypoints: Vec<[f32; 2]>,
    pub extras: Extras,
    /// Best first; empty where no classifier ran on it.
    pub classes: Vec<Classification>,
    /// The id a tracker gave it (`wgnntrack`), the same on every frame.
    pub id: Option<u64>,
}

impl From<Detection> for ObjectResult {
    fn from(d: Detection) -> Self {
        ObjectResult {
            label: d.label,
            label_id: d.label_id,
            confidence: d.confidence,
            rect: d.rect,
            keypoints: d.keypoints,
            extras: d.extras,
            classes: Vec::new(),
            id: None,
        }
    }
}

/// What one frame produced: one JSON line of `results-location`, one bus
/// message of `post-messages`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameResults {
    /// Presentation time in nanoseconds, where the frame has one.
    pub pts: Option<u64>,
    pub width: u32,
    pub height: u32,
    pub objects: Vec<ObjectResult>,
}

/// The JSON form of one object: `{"label", "label_id", "confidence", "x",
/// "y", "w", "h"}`, plus `id` (tracked objects), `keypoints`,
/// `keypoint_scores`, `angle`, `mask` and `classes` only where there are any.
#[derive(Serialize)]
struct ObjectJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    label: &'a str,
    label_id: usize,
    confidence: f32,
    x: f32,
    y: f32,
    w: f32,
    h: f32,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    keypoints: &'a [[f32; 2]],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keypoint_scores: Vec<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    angle: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mask: Option<MaskJson>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    classes: &'a [Classification],
}

#[derive(Serialize)]
struct FrameJson<'a> {
    pts: Option<u64>,
    width: u32,
    height: u32,
    objects: Vec<ObjectJson<'a>>,
}

impl FrameResults {
    /// One line of JSON (no newline): `{"pts": ns or null, "width": W,
    /// "height": H, "objects": [...]}`, coordinates in frame pixels.
    pub fn to_json_line(&self) -> String {
        let objects = self
            .objects
            .iter()
            .map(|o| ObjectJson {
                id: o.id,
                label: &o.label,
                label_id: o.label_id,
                confidence: finite(o.confidence),
                x: finite(o.rect.x),
                y: finite(o.rect.y),
                w: finite(o.rect.w),
                h: finite(o.rect.h),
                keypoints: &o.keypoints,
                keypoint_scores: o
                    .extras
                    .keypoint_scores
                    .iter()
                    .map(|&v| finite(v))
                    .collect(),
                angle: o.extras.angle.map(finite),
                mask: o.extras.mask.as_ref().map(|m| m.to_json()),
                classes: &o.classes,
            })
            .collect();
        let frame = FrameJson {
            pts: self.pts,
            width: self.width,
            height: self.height,
            objects,
        };
        // Serializing plain structs of numbers and strings cannot fail.
        serde_json::to_string(&frame).unwrap_or_else(|_| "{}".into())
    }
}

/// JSON has no NaN or infinity; a model that gave one writes 0.
fn finite(v: f32) -> f32 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// Class names by id, from a model-proc's list or a labels file (one name
/// per line).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Labels {
    names: Vec<String>,
    /// Where the names came from, for errors: "labels file X" or
    /// "model-proc X".
    origin: String,
}

impl Labels {
    /// No names: ids are shown as numbers.
    pub fn none() -> Labels {
        Labels::default()
    }

    pub fn from_names(names: Vec<String>, origin: impl Into<String>) -> Labels {
        Labels {
            names,
            origin: origin.into(),
        }
    }

    /// Reads a labels file: one name per line; blank lines at the end are
    /// dropped, other blank lines are names too (ids must stay aligned).
    pub fn from_file(path: &Path) -> Result<Labels> {
        let file_error = |message: String| Error::File {
            path: PathBuf::from(path),
            message,
        };
        let text = crate::files::read_regular(path)
            .map_err(|e| file_error(format!("cannot read the labels file: {e}")))?;
        let text = String::from_utf8(text)
            .map_err(|_| file_error("the labels file is not UTF-8 text".into()))?;
        let mut names: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
        while names.last().is_some_and(|n| n.is_empty()) {
            names.pop();
        }
        if names.is_empty() {
            return Err(file_error("the labels file has no labels".into()));
        }
        Ok(Labels::from_names(
            names,
            format!("labels file {}", path.display()),
        ))
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// The name of class `id`: its label, or the id as text where there is
    /// no list.
    pub fn name(&self, id: usize) -> String {
        self.names
            .get(id)
            .cloned()
            .unwrap_or_else(|| id.to_string())
    }

    /// Checks that a model with `classes` classes has a name for each; no
    /// list at all is fine (ids are shown).
    pub fn check(&self, classes: usize) -> Result<()> {
        if !self.names.is_empty() && self.names.len() < classes {
            return Err(Error::invalid(format!(
                "the {} has {} labels, but the model has {classes} classes",
                self.origin,
                self.names.len()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iou_of_known_rectangles() {
        let a = Rect::new(0.0, 0.0, 10.0, 10.0);
        let b = Rect::new(5.0, 0.0, 10.0, 10.0);
        assert!((a.iou(&b) - 50.0 / 150.0).abs() < 1e-6);
        assert_eq!(a.iou(&Rect::new(20.0, 20.0, 1.0, 1.0)), 0.0);
        assert_eq!(a.iou(&Rect::default()), 0.0);
        assert_eq!(a.iou(&a), 1.0);
    }

    #[test]
    fn clamping_keeps_the_part_inside_the_frame() {
        let r = Rect::new(-5.0, 90.0, 20.0, 20.0).clamped(100, 100);
        assert_eq!(r, Rect::new(0.0, 90.0, 15.0, 10.0));
        let outside = Rect::new(200.0, 0.0, 5.0, 5.0).clamped(100, 100);
        assert_eq!(outside.w, 0.0);
    }

    #[test]
    fn a_frame_is_one_json_line_in_the_documented_form() {
        let mut results = FrameResults {
            pts: Some(40_000_000),
            width: 640,
            height: 480,
            objects: vec![ObjectResult {
                label: "face".into(),
                label_id: 0,
                confidence: 0.5,
                rect: Rect::new(1.0, 2.0, 3.0, 4.0),
                keypoints: vec![[5.0, 6.0]],
                extras: Extras::default(),
                classes: Vec::new(),
                id: None,
            }],
        };
        assert_eq!(
            results.to_json_line(),
            r#"{"pts":40000000,"width":640,"height":480,"objects":[{"label":"face","label_id":0,"confidence":0.5,"x":1.0,"y":2.0,"w":3.0,"h":4.0,"keypoints":[[5.0,6.0]]}]}"#
        );
        results.pts = None;
        results.objects[0].keypoints.clear();
        results.objects[0].confidence = f32::NAN;
        let line = results.to_json_line();
        assert!(line.starts_with(r#"{"pts":null,"#), "{line}");
        assert!(!line.contains("keypoints"), "{line}");
        assert!(line.contains(r#""confidence":0.0"#), "{line}");
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["objects"][0]["label"], "face");
        results.objects[0].id = Some(7);
        assert!(
            results
                .to_json_line()
                .contains(r#""objects":[{"id":7,"label":"face","#),
            "{}",
            results.to_json_line()
        );
    }

    #[test]
    fn labels_files_and_their_checks() {
        let dir = std::env::temp_dir().join(format!("wgnn-labels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("labels.txt");
        std::fs::write(&path, "cat\n\ndog\n\n\n").unwrap();
        let labels = Labels::from_file(&path).unwrap();
        assert_eq!(labels.len(), 3);
        assert_eq!(labels.name(2), "dog");
        assert_eq!(labels.name(7), "7");
        assert!(labels.check(3).is_ok());
        let err = labels.check(80).unwrap_err().to_string();
        assert!(
            err.contains("has 3 labels, but the model has 80 classes"),
            "{err}"
        );
        assert!(err.contains("labels.txt"), "{err}");
        assert!(Labels::none().check(80).is_ok());

        std::fs::write(&path, "\n\n").unwrap();
        let err = Labels::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("has no labels"), "{err}");
        let err = Labels::from_file(&dir.join("missing.txt"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot read the labels file"), "{err}");
    }
}
