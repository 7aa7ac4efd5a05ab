//! MediaPipe 0.10.14's faces on the reference images (tests/data/detect/faces,
//! see its README) and the agreement the issue asks of ours: the same number
//! of faces, box IoU >= 0.8, scores within 0.05, keypoints within 2 px.
//! Shared by tests/models (the `Detector`) and tests/gst (`wgnndetect`).
//!
//! MediaPipe reports boxes and keypoints that leave the image (a face cut by
//! the top edge); wgnn's are clamped to the frame (an ROI meta cannot leave
//! it), so the references are clamped the same way before comparing.
// Shared by two test binaries: each uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use wgnn::tasks::{ObjectResult, Rect};

pub const MIN_IOU: f32 = 0.8;
pub const MAX_SCORE_DIFF: f32 = 0.05;
pub const MAX_KEYPOINT_PX: f32 = 2.0;

/// One face MediaPipe found, in image pixels.
#[derive(Clone, Debug)]
pub struct RefFace {
    pub score: f32,
    pub rect: Rect,
    pub keypoints: Vec<[f32; 2]>,
}

impl RefFace {
    /// The face as wgnn reports it: box and keypoints inside the frame.
    pub fn clamped(&self, width: u32, height: u32) -> RefFace {
        let (w, h) = (width as f32, height as f32);
        RefFace {
            score: self.score,
            rect: self.rect.clamped(width, height),
            keypoints: self
                .keypoints
                .iter()
                .map(|[x, y]| [x.clamp(0.0, w), y.clamp(0.0, h)])
                .collect(),
        }
    }
}

/// One reference image and MediaPipe's faces on it.
#[derive(Clone, Debug)]
pub struct RefImage {
    /// As references.json names it: a path from the repository root, or
    /// the 8K frame's recipe.
    pub image: String,
    pub width: u32,
    pub height: u32,
    pub faces: Vec<RefFace>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn number(v: &serde_json::Value) -> f32 {
    v.as_f64().expect("a number in references.json") as f32
}

fn point(v: &serde_json::Value) -> [f32; 2] {
    let p = v.as_array().expect("an [x, y] pair");
    [number(&p[0]), number(&p[1])]
}

/// Every reference image, in references.json's order.
pub fn references() -> Vec<RefImage> {
    let path = root().join("tests/data/detect/faces/references.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| RefImage {
            image: i["image"].as_str().unwrap().to_string(),
            width: i["width"].as_u64().unwrap() as u32,
            height: i["height"].as_u64().unwrap() as u32,
            faces: i["faces"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let b: Vec<f32> = f["box"].as_array().unwrap().iter().map(number).collect();
                    RefFace {
                        score: number(&f["score"]),
                        rect: Rect::new(b[0], b[1], b[2], b[3]),
                        keypoints: f["keypoints"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(point)
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect()
}

/// The reference whose `image` ends with `suffix`.
pub fn reference(suffix: &str) -> RefImage {
    references()
        .into_iter()
        .find(|r| r.image.ends_with(suffix))
        .unwrap_or_else(|| panic!("no reference image ending with {suffix}"))
}

/// The 8K frame's recipe in references.json (see the README): the photo's
/// top 512x288 band, each pixel repeated 15 times in x and in y.
const EIGHT_K: &str = "assets/samples/astronaut.png band [0, 0, 512, 288] x15 nearest";

impl RefImage {
    pub fn is_eight_k(&self) -> bool {
        self.image == EIGHT_K
    }

    /// The image as packed RGBA, exactly the pixels MediaPipe saw.
    pub fn rgba(&self) -> Vec<u8> {
        if self.is_eight_k() {
            return eight_k();
        }
        let path = root().join(&self.image);
        let img = image::open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .to_rgba8();
        assert_eq!(
            img.dimensions(),
            (self.width, self.height),
            "{}",
            self.image
        );
        img.into_raw()
    }
}

fn eight_k() -> Vec<u8> {
    let photo = image::open(root().join("assets/samples/astronaut.png"))
        .unwrap()
        .to_rgba8();
    let (w, h, k) = (512usize, 288usize, 15usize);
    let mut out = Vec::with_capacity(w * k * h * k * 4);
    for y in 0..h * k {
        let row: Vec<u8> = (0..w)
            .flat_map(|x| photo.get_pixel(x as u32, (y / k) as u32).0)
            .collect();
        for px in row.chunks_exact(4) {
            for _ in 0..k {
                out.extend_from_slice(px);
            }
        }
    }
    out
}

/// Checks `found` (label "face") against MediaPipe's faces on `reference`:
/// a line of the worst differences, or what fails.
pub fn agreement(found: &[ObjectResult], reference: &RefImage) -> Result<String, String> {
    let name = &reference.image;
    if found.len() != reference.faces.len() {
        return Err(format!(
            "{name}: {} faces, MediaPipe found {}: {found:?}",
            found.len(),
            reference.faces.len()
        ));
    }
    let (mut worst_iou, mut worst_score, mut worst_px) = (1.0f32, 0.0f32, 0.0f32);
    let mut failures = Vec::new();
    for want in &reference.faces {
        let want = want.clamped(reference.width, reference.height);
        let want = &want;
        let got = found
            .iter()
            .max_by(|a, b| a.rect.iou(&want.rect).total_cmp(&b.rect.iou(&want.rect)))
            .expect("as many faces as MediaPipe's, so at least one");
        let iou = got.rect.iou(&want.rect);
        let score = (got.confidence - want.score).abs();
        worst_iou = worst_iou.min(iou);
        worst_score = worst_score.max(score);
        if got.label != "face" || got.label_id != 0 {
            failures.push(format!(
                "label {} ({}), not face (0)",
                got.label, got.label_id
            ));
        }
        if iou < MIN_IOU {
            failures.push(format!(
                "box {:?} vs {:?}: IoU {iou:.3}",
                got.rect, want.rect
            ));
        }
        if score > MAX_SCORE_DIFF {
            failures.push(format!("score {} vs {}", got.confidence, want.score));
        }
        if got.keypoints.len() != want.keypoints.len() {
            failures.push(format!(
                "{} keypoints, MediaPipe has {}",
                got.keypoints.len(),
                want.keypoints.len()
            ));
            continue;
        }
        for (i, (g, w)) in got.keypoints.iter().zip(&want.keypoints).enumerate() {
            let d = (g[0] - w[0]).hypot(g[1] - w[1]);
            worst_px = worst_px.max(d);
            if d > MAX_KEYPOINT_PX {
                failures.push(format!("keypoint {i} {g:?} vs {w:?}: {d:.2} px"));
            }
        }
    }
    let summary = format!(
        "{name}: {} face(s), worst IoU {worst_iou:.3}, score diff {worst_score:.3}, keypoint \
         {worst_px:.2} px",
        found.len()
    );
    if failures.is_empty() {
        Ok(summary)
    } else {
        Err(format!("{summary}: {}", failures.join("; ")))
    }
}

/// The looser check of the tests whose subject is not the detector's
/// accuracy (JSON lines, bus messages, metas through tee): one face per
/// face MediaPipe found, each overlapping its box by IoU >= 0.5.
pub fn plausible(found: &[ObjectResult], reference: &RefImage) -> Result<(), String> {
    if found.len() != reference.faces.len() {
        return Err(format!(
            "{}: {} faces, MediaPipe found {}",
            reference.image,
            found.len(),
            reference.faces.len()
        ));
    }
    for want in &reference.faces {
        let want = want.clamped(reference.width, reference.height);
        let best = found
            .iter()
            .map(|f| f.rect.iou(&want.rect))
            .fold(0.0, f32::max);
        if best < 0.5 {
            return Err(format!(
                "{}: no face near {:?}: {found:?}",
                reference.image, want.rect
            ));
        }
    }
    Ok(())
}
