//! After decoding, on the CPU for both paths: drop unusable boxes,
//! non-maximum suppression (MediaPipe's weighted kind, or hard per class),
//! then model input pixels back to frame pixels as the tensorize shader
//! mapped the frame in, clamped to the frame.

use std::cmp::Ordering;

use crate::tasks::mask::Extras;
use crate::tasks::model_proc::{NmsKind, YoloTask};
use crate::tasks::objects::{Detection, Labels, Rect};
use crate::video::Resize;

use super::decode::Candidate;
use super::heads;
use super::spec::{Scheme, Spec};

/// The most candidates (boxes over the threshold, before NMS) a frame
/// keeps. The GPU decoder's buffer holds this many; when more pass, the GPU
/// keeps whichever reached the buffer first and the CPU path the best ones.
pub const MAX_CANDIDATES: usize = 1024;

/// Model input pixels -> frame pixels: `frame = input * scale + offset`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ToFrame {
    pub scale: [f32; 2],
    pub offset: [f32; 2],
    pub frame: (u32, u32),
}

impl ToFrame {
    /// The inverse of how `tensorize.wgsl` fits a `frame` (width, height)
    /// frame into an `input` (width, height) tensor with `resize`.
    pub fn new(resize: Resize, input: (u32, u32), frame: (u32, u32)) -> ToFrame {
        let src = [frame.0 as f32, frame.1 as f32];
        let dst = [input.0 as f32, input.1 as f32];
        let (scale, offset) = match resize {
            Resize::Stretch => ([src[0] / dst[0], src[1] / dst[1]], [0.0; 2]),
            Resize::Letterbox { .. } => {
                // Scaled by 1/s to fit inside and centred: input = frame / s
                // + (dst - src / s) / 2.
                let s = (src[0] / dst[0]).max(src[1] / dst[1]);
                let pad = [0, 1].map(|a| (dst[a] - src[a] / s) * 0.5);
                ([s; 2], [-pad[0] * s, -pad[1] * s])
            }
            Resize::CenterCrop => {
                // Scaled by 1/s to cover and centred: frame = origin + input * s.
                let s = (src[0] / dst[0]).min(src[1] / dst[1]);
                ([s; 2], [0, 1].map(|a| (src[a] - dst[a] * s) * 0.5))
            }
        };
        ToFrame {
            scale,
            offset,
            frame,
        }
    }

    pub fn point(&self, p: [f32; 2]) -> [f32; 2] {
        [
            p[0] * self.scale[0] + self.offset[0],
            p[1] * self.scale[1] + self.offset[1],
        ]
    }
}

/// A candidate with its final score.
#[derive(Clone, Debug)]
struct Scored {
    c: Candidate,
    score: f32,
}

impl Scored {
    fn rect(&self) -> Rect {
        let [x0, y0, x1, y1] = self.c.corners;
        Rect::from_corners(x0, y0, x1, y1)
    }
}

/// Best first; equal scores by index, so both paths order alike.
fn by_score(a: &Scored, b: &Scored) -> Ordering {
    b.score
        .partial_cmp(&a.score)
        .unwrap_or(Ordering::Equal)
        .then(a.c.index.cmp(&b.c.index))
}

/// Scores the candidates, drops those a detection cannot be made of (a
/// value that is not finite, a negative width or height: MediaPipe drops
/// those too), and keeps the best [`MAX_CANDIDATES`].
fn usable(spec: &Spec, candidates: Vec<Candidate>) -> Vec<Scored> {
    let mut all: Vec<Scored> = candidates
        .into_iter()
        .filter(|c| {
            let [x0, y0, x1, y1] = c.corners;
            let finite = c.corners.iter().chain(c.keypoints.iter().flatten());
            finite.clone().all(|v| v.is_finite()) && x1 >= x0 && y1 >= y0
        })
        .map(|c| Scored {
            score: spec.score(c.raw),
            c,
        })
        .filter(|s| !s.score.is_nan())
        .collect();
    all.sort_by(by_score);
    all.truncate(MAX_CANDIDATES);
    all
}

/// MediaPipe's WEIGHTED non-maximum suppression (class-agnostic): the best
/// box and every box overlapping it by more than `iou` become one, whose
/// corners and keypoints are the score-weighted means and whose score and
/// class are the best box's. MediaPipe stops when the best box does not
/// overlap itself (an empty box); here it always counts itself.
fn weighted(sorted: Vec<Scored>, iou: f32) -> Vec<Scored> {
    let mut out = Vec::new();
    let mut remaining = sorted;
    while !remaining.is_empty() {
        let top = remaining[0].clone();
        let rect = top.rect();
        let (group, rest): (Vec<_>, Vec<_>) = remaining
            .into_iter()
            .enumerate()
            .partition(|(k, s)| *k == 0 || s.rect().iou(&rect) > iou);
        let mut merged = top;
        if group.len() > 1 {
            let total: f32 = group.iter().map(|(_, s)| s.score).sum();
            let mut corners = [0.0f32; 4];
            let mut keypoints = vec![[0.0f32; 2]; merged.c.keypoints.len()];
            for (_, s) in &group {
                for (m, v) in corners.iter_mut().zip(s.c.corners) {
                    *m += v * s.score;
                }
                for (m, k) in keypoints.iter_mut().zip(&s.c.keypoints) {
                    m[0] += k[0] * s.score;
                    m[1] += k[1] * s.score;
                }
            }
            merged.c.corners = corners.map(|v| v / total);
            merged.c.keypoints = keypoints
                .into_iter()
                .map(|[x, y]| [x / total, y / total])
                .collect();
        }
        out.push(merged);
        remaining = rest.into_iter().map(|(_, s)| s).collect();
    }
    out
}

/// Hard non-maximum suppression per class: a box is dropped when a better
/// box of its class overlaps it by more than `iou`; at most `max` kept.
fn hard(sorted: Vec<Scored>, iou: f32, max: usize) -> Vec<Scored> {
    let mut kept: Vec<Scored> = Vec::new();
    for s in sorted {
        if kept.len() >= max {
            break;
        }
        let rect = s.rect();
        if !kept
            .iter()
            .any(|k| k.c.class == s.c.class && k.rect().iou(&rect) > iou)
        {
            kept.push(s);
        }
    }
    kept
}

/// Candidates -> detections in frame pixels, best first, each with the
/// candidate it came from (segment masks are made of its extras). Boxes
/// that end up empty once clamped to the frame (wholly in the letterbox
/// border, say) are dropped; keypoints are clamped to the frame. Oriented
/// boxes keep their own width, height and angle, not clamped.
pub(crate) fn detections(
    spec: &Spec,
    candidates: Vec<Candidate>,
    iou: f32,
    to_frame: &ToFrame,
    labels: &Labels,
) -> Vec<(Detection, Candidate)> {
    let mut sorted = usable(spec, candidates);
    let kept = match spec.nms {
        // The graph did its NMS.
        _ if matches!(spec.scheme, Scheme::End2End { .. } | Scheme::Listed { .. }) => {
            sorted.truncate(spec.max_detections);
            sorted
        }
        NmsKind::Weighted => weighted(sorted, iou),
        NmsKind::Hard if spec.task == YoloTask::Obb => {
            let boxes: Vec<([f32; 5], u32)> =
                sorted.iter().map(|s| (rotated(&s.c), s.c.class)).collect();
            let keep = heads::rotated_nms(&boxes, iou, spec.max_detections);
            keep.into_iter().map(|k| sorted[k].clone()).collect()
        }
        NmsKind::Hard => hard(sorted, iou, spec.max_detections),
    };
    kept.into_iter()
        .filter_map(|s| Some((detection(spec, &s, to_frame, labels)?, s.c)))
        .collect()
}

/// An oriented candidate as (cx, cy, w, h, angle) in model input pixels.
fn rotated(c: &Candidate) -> [f32; 5] {
    let [x0, y0, x1, y1] = c.corners;
    let angle = c.extras.first().copied().unwrap_or(0.0);
    [(x0 + x1) / 2.0, (y0 + y1) / 2.0, x1 - x0, y1 - y0, angle]
}

fn detection(spec: &Spec, s: &Scored, to_frame: &ToFrame, labels: &Labels) -> Option<Detection> {
    let (w, h) = to_frame.frame;
    let clamp = |[x, y]: [f32; 2]| [x.clamp(0.0, w as f32), y.clamp(0.0, h as f32)];
    let mut extras = Extras::default();
    let mut keypoints: Vec<[f32; 2]> =
        s.c.keypoints
            .iter()
            .map(|&k| clamp(to_frame.point(k)))
            .collect();
    let rect = if spec.task == YoloTask::Obb {
        let [cx, cy, bw, bh, angle] = heads::regularize(rotated(&s.c));
        let [fx, fy] = to_frame.point([cx, cy]);
        let [sx, sy] = to_frame.scale;
        extras.angle = Some(angle);
        Rect::new(fx - bw * sx / 2.0, fy - bh * sy / 2.0, bw * sx, bh * sy)
    } else {
        let [x0, y0, x1, y1] = s.c.corners;
        let p0 = to_frame.point([x0, y0]);
        let p1 = to_frame.point([x1, y1]);
        Rect::from_corners(p0[0], p0[1], p1[0], p1[1]).clamped(w, h)
    };
    if !(rect.w > 0.0 && rect.h > 0.0) {
        return None;
    }
    if spec.task == YoloTask::Pose {
        let d = spec.keypoint_values;
        for k in s.c.extras.chunks_exact(d) {
            keypoints.push(clamp(to_frame.point([k[0], k[1]])));
            if d == 3 {
                extras.keypoint_scores.push(k[2]);
            }
        }
    }
    Some(Detection {
        label: labels.name(s.c.class as usize),
        label_id: s.c.class as usize,
        confidence: s.score,
        rect,
        keypoints,
        extras,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::detect::decode::tests::face_spec;

    fn cand(index: u32, class: u32, raw: f32, corners: [f32; 4]) -> Candidate {
        Candidate {
            index,
            class,
            raw,
            corners,
            keypoints: Vec::new(),
            extras: Vec::new(),
        }
    }

    #[test]
    fn frame_mapping_inverts_each_resize() {
        // A 200x100 frame into a 64x64 input.
        let stretch = ToFrame::new(Resize::Stretch, (64, 64), (200, 100));
        assert_eq!(stretch.point([32.0, 32.0]), [100.0, 50.0]);
        assert_eq!(stretch.point([64.0, 0.0]), [200.0, 0.0]);
        // Letterbox: scale 200/64 = 3.125, the content is 64x32, 16 px of
        // border above and below.
        let letterbox = ToFrame::new(Resize::Letterbox { pad: [0; 3] }, (64, 64), (200, 100));
        assert_eq!(letterbox.point([0.0, 16.0]), [0.0, 0.0]);
        assert_eq!(letterbox.point([64.0, 48.0]), [200.0, 100.0]);
        assert_eq!(letterbox.point([32.0, 32.0]), [100.0, 50.0]);
        // A tall frame: borders left and right.
        let tall = ToFrame::new(Resize::Letterbox { pad: [0; 3] }, (64, 32), (30, 60));
        assert_eq!(tall.point([24.0, 0.0]), [0.0, 0.0]);
        assert_eq!(tall.point([40.0, 32.0]), [30.0, 60.0]);
        // Crop: scale 100/64, the 200-wide frame loses 50 px each side.
        let crop = ToFrame::new(Resize::CenterCrop, (64, 64), (200, 100));
        assert_eq!(crop.point([0.0, 0.0]), [50.0, 0.0]);
        assert_eq!(crop.point([64.0, 64.0]), [150.0, 100.0]);
    }

    #[test]
    fn weighted_nms_averages_overlapping_boxes_by_score() {
        let mut spec = face_spec();
        spec.keypoints = 0;
        // Logits: sigmoid(2.1972246) = 0.9, sigmoid(0) = 0.5.
        let a = cand(1, 0, 2.197_224_6, [0.0, 0.0, 10.0, 10.0]);
        let b = cand(2, 0, 0.0, [2.0, 0.0, 12.0, 10.0]); // IoU 8/12 with a
        let far = cand(3, 0, 1.0, [50.0, 50.0, 60.0, 60.0]);
        let kept = weighted(usable(&spec, vec![b, a, far]), 0.3);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].c.index, 1);
        assert!((kept[0].score - 0.9).abs() < 1e-6);
        let x0 = (0.0 * 0.9 + 2.0 * 0.5) / 1.4;
        assert!((kept[0].c.corners[0] - x0).abs() < 1e-5, "{:?}", kept[0].c);
        assert!((kept[0].c.corners[2] - (10.0 * 0.9 + 12.0 * 0.5) / 1.4).abs() < 1e-5);
        assert_eq!(kept[1].c.corners, [50.0, 50.0, 60.0, 60.0]);
    }

    #[test]
    fn hard_nms_is_per_class_and_bounded() {
        let mut spec = face_spec();
        spec.scheme = crate::tasks::detect::spec::Scheme::Yolo {
            v8: true,
            normalized: false,
        };
        spec.keypoints = 0;
        let boxes = vec![
            cand(0, 0, 0.9, [0.0, 0.0, 10.0, 10.0]),
            cand(1, 0, 0.8, [1.0, 0.0, 11.0, 10.0]), // same class, overlapping: dropped
            cand(2, 1, 0.7, [1.0, 0.0, 11.0, 10.0]), // other class: kept
            cand(3, 0, 0.6, [30.0, 0.0, 40.0, 10.0]),
            cand(4, 0, f32::NAN, [30.0, 0.0, 40.0, 10.0]),
            cand(5, 0, 0.6, [f32::NAN, 0.0, 40.0, 10.0]),
            cand(6, 0, 0.6, [40.0, 0.0, 30.0, 10.0]), // negative width
        ];
        let kept = hard(usable(&spec, boxes.clone()), 0.45, 10);
        let ids: Vec<u32> = kept.iter().map(|s| s.c.index).collect();
        assert_eq!(ids, [0, 2, 3]);
        let two = hard(usable(&spec, boxes), 0.45, 2);
        assert_eq!(two.len(), 2);
    }

    #[test]
    fn detections_are_in_frame_pixels_and_clamped() {
        let mut spec = face_spec();
        spec.keypoints = 1;
        let mut inside = cand(0, 0, 5.0, [16.0, 16.0, 32.0, 48.0]);
        inside.keypoints = vec![[70.0, 20.0]];
        let mut border = cand(1, 0, 5.0, [0.0, 0.0, 64.0, 10.0]);
        border.keypoints = vec![[0.0, 0.0]];
        let labels = Labels::from_names(vec!["face".into()], "test");
        let to_frame = ToFrame::new(Resize::Letterbox { pad: [0; 3] }, (64, 64), (200, 100));
        let d: Vec<Detection> = detections(&spec, vec![inside, border], 0.3, &to_frame, &labels)
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        assert_eq!(d.len(), 1, "the box in the border goes: {d:?}");
        assert_eq!(d[0].label, "face");
        assert_eq!(d[0].rect, Rect::new(50.0, 0.0, 50.0, 100.0));
        assert_eq!(d[0].keypoints, vec![[200.0, 12.5]]);
    }
}
