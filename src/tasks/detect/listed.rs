//! The `boxes-scores-labels` decoder (`tasks/torchvision.rs`): a graph that
//! did its own NMS lists its objects as three outputs, row `i` of each
//! describing object `i`. Rows whose score is below the threshold (the
//! zeros a host stage pads an open row count with among them) or whose
//! label is below the label offset are dropped; the rest are read as they
//! are.

use crate::ml::DataType;
use crate::tasks::model_proc::{BoxesScoresLabels, NmsKind, YoloTask};

use super::decode::Candidate;
use super::spec::{shape_text, OutputInfo, Scheme, Spec, MAX_BOXES};

/// The rows of `[N, k]` or `[1, N, k]` (`k` = None: `[N]` or `[1, N]`).
fn rows(o: &OutputInfo, k: Option<usize>) -> Option<usize> {
    let s = o.shape.as_slice();
    match (s, k) {
        (&[n], None) | (&[1, n], None) => Some(n),
        (&[n, kk], Some(k)) | (&[1, n, kk], Some(k)) if kk == k => Some(n),
        _ => None,
    }
}

/// The spec of the decoder `d` reading `boxes`, `scores` and `labels`.
pub(super) fn spec(
    d: &BoxesScoresLabels,
    [boxes, scores, labels]: [OutputInfo; 3],
    input: [f32; 2],
    threshold: f32,
) -> std::result::Result<Spec, String> {
    let shape_err = |o: &OutputInfo, want: &str| {
        format!(
            "output '{}' is {}, expected {want}",
            o.name,
            shape_text(&o.shape)
        )
    };
    let n = rows(&boxes, Some(4))
        .ok_or_else(|| shape_err(&boxes, "[N, 4] (x0, y0, x1, y1 per object)"))?;
    for (o, what) in [(&scores, "scores"), (&labels, "labels")] {
        if rows(o, None) != Some(n) {
            return Err(shape_err(o, &format!("[{n}] ({what}: one per box)")));
        }
    }
    if labels.data_type != DataType::Int32 {
        return Err(format!(
            "output '{}' is {}; the decoder reads integer labels",
            labels.name, labels.data_type
        ));
    }
    if n > MAX_BOXES {
        return Err(format!(
            "output '{}' holds {n} boxes; at most {MAX_BOXES} are supported",
            boxes.name
        ));
    }
    Ok(Spec {
        scheme: Scheme::Listed {
            normalized: d.normalized,
            label_offset: d.label_offset,
            labels,
        },
        boxes,
        scores,
        n,
        classes: 0,
        keypoints: 0,
        input,
        raw_threshold: threshold,
        nms: NmsKind::Hard,
        max_detections: d.max_detections,
        task: YoloTask::Detect,
        extras: 0,
        protos: None,
        keypoint_values: 0,
    })
}

impl Spec {
    /// Every row of `boxes`, `scores` and `labels` that passes, by index.
    pub fn decode_listed(&self, boxes: &[f32], scores: &[f32], labels: &[i32]) -> Vec<Candidate> {
        let Scheme::Listed {
            normalized,
            label_offset,
            ..
        } = &self.scheme
        else {
            return Vec::new();
        };
        let [sx, sy] = if *normalized { self.input } else { [1.0; 2] };
        (0..self.n)
            .filter_map(|i| {
                let raw = *scores.get(i)?;
                if raw.is_nan() || raw < self.raw_threshold {
                    return None;
                }
                let class = u32::try_from(*labels.get(i)?)
                    .ok()?
                    .checked_sub(*label_offset)?;
                let b = boxes.get(4 * i..4 * i + 4)?;
                Some(Candidate {
                    index: i as u32,
                    class,
                    raw,
                    corners: [b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy],
                    keypoints: Vec::new(),
                    extras: Vec::new(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::tasks::model_proc::Decoder;

    fn info(name: &str, shape: &[usize], data_type: DataType) -> OutputInfo {
        OutputInfo {
            name: name.into(),
            shape: shape.to_vec(),
            data_type,
        }
    }

    fn listed(decoder: &str, labels: DataType) -> crate::error::Result<Spec> {
        let decoder: Decoder = serde_json::from_str(decoder).unwrap();
        let outputs = [
            info("boxes", &[4, 4], DataType::Float32),
            info("scores", &[4], DataType::Float32),
            info("labels", &[4], labels),
        ];
        Spec::new(Path::new("t.onnx"), &decoder, &outputs, (64, 32), 0.25)
    }

    #[test]
    fn listed_rows_decode_with_the_label_offset_and_no_nms() {
        let plain = r#"{"type": "boxes-scores-labels", "label_offset": 1}"#;
        let spec = listed(plain, DataType::Int32).unwrap();
        // Two overlapping boxes the graph kept, a background row, and the
        // zero padding after the last object.
        let boxes = [
            [10.0, 8.0, 30.0, 20.0],
            [11.0, 8.0, 31.0, 20.0],
            [1.0, 1.0, 5.0, 5.0],
            [0.0; 4],
        ];
        let boxes: Vec<f32> = boxes.iter().flatten().copied().collect();
        let c = spec.decode_listed(&boxes, &[0.9, 0.8, 0.7, 0.0], &[3, 3, 0, 0]);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!((c[0].index, c[0].class, c[0].raw), (0, 2, 0.9));
        assert_eq!(c[1].corners, [11.0, 8.0, 31.0, 20.0]);
        let normalized = r#"{"type": "boxes-scores-labels", "normalized": true}"#;
        let spec = listed(normalized, DataType::Int32).unwrap();
        let c = spec.decode_listed(&boxes, &[0.9, 0.0, 0.0, 0.0], &[0; 4]);
        assert_eq!(c[0].corners, [640.0, 256.0, 1920.0, 640.0]);
        let err = listed(plain, DataType::Float32).unwrap_err().to_string();
        assert!(err.contains("the decoder reads integer labels"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
