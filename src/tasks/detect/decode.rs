//! The decoders in Rust: raw output values -> candidates (boxes whose score
//! passes the threshold), in model input pixels. The CPU path runs them on
//! the whole outputs; `decode.wgsl` does the same per box on the GPU, and
//! its tests compare the two.

use super::spec::{Scheme, Spec};

/// The largest class id an end2end row may hold: 2^24, past which f32
/// holds no longer every whole number.
pub(crate) const MAX_CLASS_ID: f32 = 16_777_216.0;

/// One box whose score passed the threshold, before NMS.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Candidate {
    /// The box's (anchor's) index in the output.
    pub index: u32,
    pub class: u32,
    /// The raw score: the clipped logit for sigmoid scores (see
    /// [`Spec::score`]), else the score itself.
    pub raw: f32,
    /// x_min, y_min, x_max, y_max in model input pixels.
    pub corners: [f32; 4],
    /// (x, y) in model input pixels.
    pub keypoints: Vec<[f32; 2]>,
    /// The values after the class scores as the model gives them (YOLO
    /// segment, pose, obb heads: see [`Spec::extras`]).
    pub extras: Vec<f32>,
}

impl Spec {
    /// Every candidate of `boxes` and `scores` (the outputs' values in
    /// order; the same slice twice for YOLO), by index.
    pub fn decode(&self, boxes: &[f32], scores: &[f32]) -> Vec<Candidate> {
        (0..self.n)
            .filter_map(|i| self.decode_one(boxes, scores, i))
            .collect()
    }

    /// The best class and its raw score of box `i`: the first class with the
    /// largest value, NaN never winning; `None` where every value is NaN.
    fn best(&self, scores: &[f32], i: usize) -> Option<(u32, f32)> {
        let mut best: Option<(u32, f32)> = None;
        for c in 0..self.classes {
            let mut v = self.class_value(scores, i, c);
            if let Scheme::Ssd {
                clip: Some(clip), ..
            } = &self.scheme
            {
                v = v.clamp(-clip, *clip);
            }
            if v.is_nan() {
                continue;
            }
            if best.is_none_or(|(_, b)| v > b) {
                best = Some((c as u32, v));
            }
        }
        best
    }

    fn class_value(&self, scores: &[f32], i: usize, c: usize) -> f32 {
        let at = match self.scheme {
            Scheme::Ssd { .. } => i * self.classes + c,
            Scheme::Yolo { v8: false, .. } => i * self.yolov5_row() + 5 + c,
            Scheme::Yolo { v8: true, .. } => (4 + c) * self.n + i,
            Scheme::End2End { .. } | Scheme::Listed { .. } => return f32::NAN,
        };
        scores.get(at).copied().unwrap_or(f32::NAN)
    }

    /// Values per box of the YOLOv5 layout.
    fn yolov5_row(&self) -> usize {
        self.classes + 5 + self.extras
    }

    fn decode_one(&self, boxes: &[f32], scores: &[f32], i: usize) -> Option<Candidate> {
        if let Scheme::End2End { row, normalized } = self.scheme {
            return self.decode_row(boxes, i, row, normalized);
        }
        let (class, best) = self.best(scores, i)?;
        let v = |at: usize| boxes.get(at).copied().unwrap_or(f32::NAN);
        let [in_w, in_h] = self.input;
        match &self.scheme {
            Scheme::Ssd {
                options: o,
                anchors,
                ..
            } => {
                let raw = best;
                if raw.is_nan() || raw < self.raw_threshold {
                    return None;
                }
                let a = anchors.get(i)?;
                let at = i * o.num_coords + o.box_coord_offset;
                // MediaPipe's YXHW order, or XYWH with reverse_output_order.
                let (mut xc, mut yc, mut w, mut h) = if o.reverse_output_order {
                    (v(at), v(at + 1), v(at + 2), v(at + 3))
                } else {
                    (v(at + 1), v(at), v(at + 3), v(at + 2))
                };
                xc = xc / o.x_scale * a.w + a.x_center;
                yc = yc / o.y_scale * a.h + a.y_center;
                w = w / o.w_scale * a.w;
                h = h / o.h_scale * a.h;
                let corners = [
                    (xc - w / 2.0) * in_w,
                    (yc - h / 2.0) * in_h,
                    (xc + w / 2.0) * in_w,
                    (yc + h / 2.0) * in_h,
                ];
                let keypoints = (0..o.num_keypoints)
                    .map(|k| {
                        let at = i * o.num_coords
                            + o.keypoint_coord_offset
                            + k * o.num_values_per_keypoint;
                        let (kx, ky) = if o.reverse_output_order {
                            (v(at), v(at + 1))
                        } else {
                            (v(at + 1), v(at))
                        };
                        [
                            (kx / o.x_scale * a.w + a.x_center) * in_w,
                            (ky / o.y_scale * a.h + a.y_center) * in_h,
                        ]
                    })
                    .collect();
                Some(Candidate {
                    index: i as u32,
                    class,
                    raw,
                    corners,
                    keypoints,
                    extras: Vec::new(),
                })
            }
            Scheme::Yolo { v8, normalized } => {
                let value = |j: usize| {
                    if *v8 {
                        v(j * self.n + i)
                    } else {
                        v(i * self.yolov5_row() + j)
                    }
                };
                let raw = if *v8 { best } else { value(4) * best };
                if raw.is_nan() || raw < self.raw_threshold {
                    return None;
                }
                let (sx, sy) = if *normalized {
                    (in_w, in_h)
                } else {
                    (1.0, 1.0)
                };
                let (cx, cy) = (value(0) * sx, value(1) * sy);
                let (w, h) = (value(2) * sx, value(3) * sy);
                let first = if *v8 { 4 } else { 5 } + self.classes;
                Some(Candidate {
                    index: i as u32,
                    class,
                    raw,
                    corners: [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0],
                    keypoints: Vec::new(),
                    extras: (first..first + self.extras).map(value).collect(),
                })
            }
            Scheme::End2End { .. } | Scheme::Listed { .. } => None,
        }
    }

    /// Box `i` of the end2end layout: x1, y1, x2, y2, score, class. The
    /// class is an id held as a float: a row whose id is no whole number
    /// from 0 to 2^24 (exact in f32) is dropped.
    fn decode_row(
        &self,
        values: &[f32],
        i: usize,
        row: usize,
        normalized: bool,
    ) -> Option<Candidate> {
        let v = |j: usize| values.get(i * row + j).copied().unwrap_or(f32::NAN);
        let raw = v(4);
        if raw.is_nan() || raw < self.raw_threshold {
            return None;
        }
        let class = v(5);
        if !(0.0..=MAX_CLASS_ID).contains(&class) || class.fract() != 0.0 {
            return None;
        }
        let [sx, sy] = if normalized { self.input } else { [1.0; 2] };
        Some(Candidate {
            index: i as u32,
            class: class as u32,
            raw,
            corners: [v(0) * sx, v(1) * sy, v(2) * sx, v(3) * sy],
            keypoints: Vec::new(),
            extras: Vec::new(),
        })
    }

    /// Candidates from the GPU decoder's records (`record_words` u32 each).
    pub fn parse_records(&self, words: &[u32]) -> Vec<Candidate> {
        let f = f32::from_bits;
        let extras_at = 7 + 2 * self.keypoints;
        words
            .chunks_exact(self.record_words())
            .map(|r| Candidate {
                index: r[0],
                class: r[1],
                raw: f(r[2]),
                corners: [f(r[3]), f(r[4]), f(r[5]), f(r[6])],
                keypoints: r[7..extras_at]
                    .chunks_exact(2)
                    .map(|p| [f(p[0]), f(p[1])])
                    .collect(),
                extras: r[extras_at..].iter().map(|&w| f(w)).collect(),
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ml::DataType;
    use crate::tasks::detect::spec::OutputInfo;
    use crate::tasks::model_proc::Decoder;
    use std::path::Path;

    fn output(name: &str, shape: &[usize]) -> OutputInfo {
        OutputInfo {
            name: name.into(),
            shape: shape.to_vec(),
            data_type: DataType::Float32,
        }
    }

    /// The face detector's decoder (MediaPipe's options) with 0.5.
    pub(crate) fn face_spec() -> Spec {
        let decoder: Decoder = serde_json::from_str(FACE_DECODER).unwrap();
        Spec::new(
            Path::new("face.tflite"),
            &decoder,
            &[
                output("regressors", &[1, 896, 16]),
                output("classificators", &[1, 896, 1]),
            ],
            (128, 128),
            0.5,
        )
        .unwrap()
    }

    pub(crate) const FACE_DECODER: &str = r#"{"type": "ssd-anchors",
        "boxes": "regressors", "scores": "classificators",
        "anchors": {"num_layers": 4, "min_scale": 0.1484375, "max_scale": 0.75,
                    "input_size_width": 128, "input_size_height": 128,
                    "strides": [8, 16, 16, 16], "fixed_anchor_size": true},
        "num_coords": 16, "box_coord_offset": 0, "keypoint_coord_offset": 4,
        "num_keypoints": 6, "num_values_per_keypoint": 2,
        "x_scale": 128, "y_scale": 128, "w_scale": 128, "h_scale": 128,
        "sigmoid_score": true, "score_clipping_thresh": 100,
        "reverse_output_order": true}"#;

    #[test]
    fn ssd_boxes_and_keypoints_decode_as_mediapipe_does() {
        let spec = face_spec();
        let mut boxes = vec![0.0f32; 896 * 16];
        let mut scores = vec![-5.0f32; 896];
        // Anchor 632: stride 16, cell (x, y) = (4, 2) of the 8x8 grid (632 -
        // 512 = 120 = 20 cells of 6): centre (4.5/8, 2.5/8).
        let i = 632;
        scores[i] = 2.0;
        let r = &mut boxes[i * 16..i * 16 + 16];
        r[..4].copy_from_slice(&[12.8, -6.4, 32.0, 16.0]); // x, y, w, h
        r[4] = 1.28; // keypoint 0: x, y
        r[5] = 2.56;
        // A NaN score and one above the clip are handled too.
        scores[3] = f32::NAN;
        scores[895] = 1000.0;
        let c = spec.decode(&boxes, &scores);
        assert_eq!(c.len(), 2, "{c:?}");
        let d = &c[0];
        assert_eq!((d.index, d.class, d.raw), (632, 0, 2.0));
        let (xc, yc) = (4.5 / 8.0 + 0.1, 2.5 / 8.0 - 0.05);
        let (w, h) = (0.25, 0.125);
        let expect = [
            (xc - w / 2.0) * 128.0,
            (yc - h / 2.0) * 128.0,
            (xc + w / 2.0) * 128.0,
            (yc + h / 2.0) * 128.0,
        ];
        for (a, b) in d.corners.iter().zip(expect) {
            assert!((a - b).abs() < 1e-4, "{:?} vs {expect:?}", d.corners);
        }
        let kp = d.keypoints[0];
        assert!((kp[0] - (4.5 / 8.0 + 0.01) * 128.0).abs() < 1e-4, "{kp:?}");
        assert!((kp[1] - (2.5 / 8.0 + 0.02) * 128.0).abs() < 1e-4, "{kp:?}");
        assert_eq!(d.keypoints.len(), 6);
        assert!((spec.score(d.raw) - 0.880_797).abs() < 1e-5);
        // Clipped to 100.
        assert_eq!((c[1].index, c[1].raw), (895, 100.0));
    }

    #[test]
    fn yxhw_order_without_reverse_output_order() {
        let text = FACE_DECODER
            .replace(
                r#""reverse_output_order": true"#,
                r#""sigmoid_score": false"#,
            )
            .replace(r#""sigmoid_score": true, "#, "");
        let decoder: Decoder = serde_json::from_str(&text).unwrap();
        let spec = Spec::new(
            Path::new("m"),
            &decoder,
            &[
                output("regressors", &[1, 896, 16]),
                output("classificators", &[896, 1]),
            ],
            (256, 128),
            0.5,
        )
        .unwrap();
        let mut boxes = vec![0.0f32; 896 * 16];
        let mut scores = vec![0.0f32; 896];
        scores[0] = 0.5;
        boxes[..6].copy_from_slice(&[12.8, 0.0, 25.6, 0.0, 1.28, 0.0]); // y, x, h, w, ky, kx
        let c = spec.decode(&boxes, &scores);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].raw, 0.5, "no sigmoid");
        let yc = 0.5 / 16.0 + 0.1;
        assert!(
            (c[0].corners[1] - (yc - 0.1) * 128.0).abs() < 1e-4,
            "{:?}",
            c[0]
        );
        assert!(
            (c[0].corners[0] - 0.5 / 16.0 * 256.0).abs() < 1e-4,
            "zero width"
        );
        assert!((c[0].keypoints[0][1] - (0.5 / 16.0 + 0.01) * 128.0).abs() < 1e-4);
    }

    fn yolo(layout: &str, normalized: bool, shape: &[usize]) -> Spec {
        let decoder: Decoder = serde_json::from_str(&format!(
            r#"{{"type": "yolo", "layout": "{layout}", "normalized": {normalized}}}"#
        ))
        .unwrap();
        Spec::new(
            Path::new("y.onnx"),
            &decoder,
            &[output("out", shape)],
            (64, 32),
            0.25,
        )
        .unwrap()
    }

    #[test]
    fn yolo_layouts_decode_known_values() {
        // Three boxes, two classes. Box 1 passes with class 1.
        let rows = [
            [10.0, 10.0, 4.0, 4.0, 0.9, 0.2, 0.1], // 0.9 * 0.2 = 0.18: below
            [20.0, 16.0, 8.0, 6.0, 0.5, 0.3, 0.8], // 0.5 * 0.8 = 0.4
            [1.0, 1.0, 1.0, 1.0, f32::NAN, 0.9, 0.9], // NaN objectness
        ];
        let v5: Vec<f32> = rows.iter().flatten().copied().collect();
        let c = yolo("yolov5", false, &[1, 3, 7]).decode(&v5, &v5);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].index, c[0].class, c[0].raw), (1, 1, 0.5 * 0.8));
        assert_eq!(c[0].corners, [16.0, 13.0, 24.0, 19.0]);

        // v8: [1, 4 + C, N], no objectness; normalized boxes.
        let cols = [
            [0.5, 0.5, 0.25, 0.5, 0.1, 0.7],
            [0.1, 0.1, 0.1, 0.1, 0.24, 0.2],
            [0.0, 0.0, 0.0, 0.0, 0.3, 0.3], // a tie: the first class wins
        ];
        let mut v8 = vec![0.0f32; 18];
        for (i, col) in cols.iter().enumerate() {
            for (j, x) in col.iter().enumerate() {
                v8[j * 3 + i] = *x;
            }
        }
        let c = yolo("yolov8", true, &[1, 6, 3]).decode(&v8, &v8);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[0].index, c[0].class, c[0].raw), (0, 1, 0.7));
        assert_eq!(c[0].corners, [24.0, 8.0, 40.0, 24.0]);
        assert_eq!((c[1].index, c[1].class), (2, 0));
    }

    #[test]
    fn end2end_rows_decode_as_they_are_with_no_nms() {
        // Two overlapping boxes of one class: the graph kept both, so both
        // stay; a padding row of score 0 and one below the threshold go.
        let rows = [
            [10.0, 8.0, 30.0, 20.0, 0.9, 1.0],
            [11.0, 8.0, 31.0, 20.0, 0.8, 1.0],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 1.0, 5.0, 5.0, 0.2, 2.0],
        ];
        let values: Vec<f32> = rows.iter().flatten().copied().collect();
        let spec = yolo("end2end", false, &[1, 4, 6]);
        let c = spec.decode(&values, &values);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[0].index, c[0].class, c[0].raw), (0, 1, 0.9));
        assert_eq!(c[0].corners, [10.0, 8.0, 30.0, 20.0]);
        let labels = crate::tasks::objects::Labels::none();
        let to_frame =
            super::super::post::ToFrame::new(crate::video::Resize::Stretch, (64, 32), (128, 64));
        let found = super::super::post::detections(&spec, c, 0.45, &to_frame, &labels);
        assert_eq!(found.len(), 2, "no NMS: {found:?}");
        assert_eq!(found[1].0.rect.x, 22.0);
        // Boxes 0..1 of the input, and a shape of fewer than 6 values.
        let spec = yolo("end2end", true, &[1, 4, 6]);
        assert_eq!(
            spec.decode(&values, &values)[0].corners,
            [640.0, 256.0, 1920.0, 640.0]
        );
        let refused = |decoder: &str, shape: &[usize]| {
            let decoder: Decoder = serde_json::from_str(decoder).unwrap();
            let outputs = [output("o", shape)];
            Spec::new(Path::new("m.onnx"), &decoder, &outputs, (64, 64), 0.25)
                .unwrap_err()
                .to_string()
        };
        let err = refused(r#"{"type": "yolo", "layout": "end2end"}"#, &[1, 300, 5]);
        assert!(
            err.contains("output 'o' is 1x300x5, expected [1, N, 6 + extra]"),
            "{err}"
        );
        let pose = r#"{"type": "yolo", "layout": "end2end", "task": "pose"}"#;
        let err = refused(pose, &[1, 300, 57]);
        assert!(
            err.contains("m.onnx: decoder yolo: task pose is decoded in the yolov8 layout only"),
            "{err}"
        );
    }

    #[test]
    fn records_parse_back() {
        let spec = face_spec();
        let mut words = vec![
            7u32,
            0,
            2.5f32.to_bits(),
            1.0f32.to_bits(),
            2.0f32.to_bits(),
        ];
        words.extend([3.0f32, 4.0].map(f32::to_bits));
        words.extend((0..12).map(|k| (k as f32).to_bits()));
        let c = spec.parse_records(&words);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].corners, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(c[0].keypoints[5], [10.0, 11.0]);
    }
}
