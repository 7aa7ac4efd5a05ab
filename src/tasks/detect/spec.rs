//! A decoder from the model-proc checked against the model's outputs: which
//! outputs it reads, how many boxes and classes they hold, and the score
//! threshold in the form the decoders compare raw values with.

use std::path::Path;

use crate::error::{Error, Result};
use crate::ml::DataType;
use crate::tasks::model_proc::{Decoder, NmsKind, SsdAnchors, Yolo, YoloLayout, YoloTask};

use super::anchors::{self, Anchor};
use super::decode::Candidate;

/// The most boxes a model may output: the GPU decoder runs one invocation
/// per box in workgroups of 64 along one dispatch axis (65535 at most).
pub(crate) const MAX_BOXES: usize = 64 * 65535;

/// How far past 1 a probability may read: float16's step just above 1 is
/// 1/1024, and a sigmoid computed in it may round up a few steps.
const MAX_SCORE_SLACK: f32 = 0.01;

/// One output as the model declares it for the input size in use.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OutputInfo {
    pub name: String,
    pub shape: Vec<usize>,
    pub data_type: DataType,
}

/// How the raw values become candidates.
#[derive(Clone, Debug)]
pub(crate) enum Scheme {
    Ssd {
        options: Box<SsdAnchors>,
        anchors: Vec<Anchor>,
        /// Logits are clamped to [-clip, clip] before the sigmoid.
        clip: Option<f32>,
    },
    Yolo {
        v8: bool,
        normalized: bool,
    },
    /// Rows of x1, y1, x2, y2, score, class (then values left unread) from
    /// a graph that did its own NMS: `row` values per box.
    End2End {
        row: usize,
        normalized: bool,
    },
    /// Boxes, scores and integer labels in three outputs, one row per
    /// object, from a graph that did its own NMS (`listed.rs`).
    Listed {
        normalized: bool,
        label_offset: u32,
        labels: OutputInfo,
    },
}

/// A decoder ready to run on outputs of known shapes.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    pub scheme: Scheme,
    /// The outputs holding boxes and scores (the same one for YOLO).
    pub boxes: OutputInfo,
    pub scores: OutputInfo,
    /// Boxes (anchors) per frame.
    pub n: usize,
    pub classes: usize,
    pub keypoints: usize,
    /// Model input (width, height) in pixels: candidates' coordinates are
    /// model input pixels.
    pub input: [f32; 2],
    /// The minimum final score as a minimum raw score (the clipped logit for sigmoid
    /// scores): `raw >= raw_threshold` exactly when `score(raw) >= threshold`.
    pub raw_threshold: f32,
    pub nms: NmsKind,
    pub max_detections: usize,
    /// What the head predicts besides boxes and classes.
    pub task: YoloTask,
    /// Values per box after the class scores (mask coefficients, keypoint
    /// values, the angle), copied into each candidate as they are.
    pub extras: usize,
    /// Segment: the prototypes' output and (channels, height, width).
    pub protos: Option<(OutputInfo, [usize; 3])>,
    /// Pose: values per keypoint (2 or 3).
    pub keypoint_values: usize,
}

impl Spec {
    /// Checks `decoder` against `outputs` (in the model's order); errors name
    /// the model file, the decoder, the output and the shapes expected and
    /// found.
    pub fn new(
        model: &Path,
        decoder: &Decoder,
        outputs: &[OutputInfo],
        input: (u32, u32),
        threshold: f32,
    ) -> Result<Spec> {
        let fail = |message: String| {
            Error::invalid(format!(
                "{}: decoder {}: {message}",
                model.display(),
                decoder.kind()
            ))
        };
        let find = |name: &str| {
            outputs
                .iter()
                .find(|o| o.name == name)
                .cloned()
                .ok_or_else(|| {
                    fail(format!(
                        "the model has no output '{name}' (its outputs: {})",
                        list(outputs)
                    ))
                })
        };
        let float = |o: &OutputInfo| match o.data_type {
            DataType::Float32 | DataType::Float16 => Ok(()),
            other => Err(fail(format!(
                "output '{}' is {other}; the decoder reads float32 or float16",
                o.name
            ))),
        };
        let input_px = [input.0 as f32, input.1 as f32];
        let spec = match decoder {
            Decoder::SsdAnchors(s) => {
                let count = anchors::count(&s.anchors);
                if count == 0 || count > MAX_BOXES as u64 {
                    return Err(fail(format!(
                        "the anchor options make {count} anchors; between 1 and {MAX_BOXES} \
                         are supported"
                    )));
                }
                let n = count as usize;
                let boxes = find(&s.boxes)?;
                let scores = find(&s.scores)?;
                float(&boxes)?;
                float(&scores)?;
                if squeeze_batch(&boxes.shape) != Some([n, s.num_coords]) {
                    return Err(fail(format!(
                        "output '{}' is {:?}, expected [1, N, {}] with N = {n} anchors",
                        boxes.name, boxes.shape, s.num_coords
                    )));
                }
                let classes = match squeeze_batch(&scores.shape) {
                    Some([m, c]) if m == n && c >= 1 => c,
                    _ => {
                        return Err(fail(format!(
                            "output '{}' is {:?}, expected [1, N, C] with N = {n} anchors and \
                             C >= 1 classes",
                            scores.name, scores.shape
                        )))
                    }
                };
                let clip = if s.sigmoid_score {
                    s.score_clipping_thresh
                } else {
                    None
                };
                Spec {
                    scheme: Scheme::Ssd {
                        options: Box::new(s.clone()),
                        anchors: anchors::generate(&s.anchors),
                        clip,
                    },
                    boxes,
                    scores,
                    n,
                    classes,
                    keypoints: s.num_keypoints,
                    input: input_px,
                    raw_threshold: if s.sigmoid_score {
                        logit_threshold(threshold)
                    } else {
                        threshold
                    },
                    nms: s.nms,
                    max_detections: usize::MAX,
                    task: YoloTask::Detect,
                    extras: 0,
                    protos: None,
                    keypoint_values: 0,
                }
            }
            Decoder::Yolo(y) => {
                let out = match &y.output {
                    Some(name) => find(name)?,
                    None => outputs
                        .first()
                        .cloned()
                        .ok_or_else(|| fail("the model has no output".into()))?,
                };
                float(&out)?;
                yolo(y, out, outputs, input_px, threshold).map_err(fail)?
            }
            Decoder::BoxesScoresLabels(d) => {
                let [boxes, scores, labels] = [&d.boxes, &d.scores, &d.labels].map(|n| find(n));
                let (boxes, scores) = (boxes?, scores?);
                float(&boxes)?;
                float(&scores)?;
                super::listed::spec(d, [boxes, scores, labels?], input_px, threshold)
                    .map_err(fail)?
            }
            Decoder::Classification(_) => {
                return Err(fail(
                    "a classification decoder does not detect objects (wgnnclassify runs \
                     classifiers)"
                        .into(),
                ))
            }
        };
        Ok(spec)
    }

    /// Words (u32) of one candidate record as the GPU decoder writes it:
    /// index, class, raw score, four corners, then x, y per keypoint, then
    /// the extras.
    pub fn record_words(&self) -> usize {
        7 + 2 * self.keypoints + self.extras
    }

    /// Refuses candidates whose scores are no probabilities where the
    /// decoder reads scores as they are (YOLO layouts, SSD without a
    /// sigmoid): exporters apply the sigmoid, so a score past 1 means the
    /// output holds something else (raw logits, or another model read in
    /// this layout), which would be reported as a confidence of 229. Value
    /// ranges are not in the graph: this runs on each frame's candidates,
    /// the only values the decoders read back. The slack covers float16.
    pub fn check_scores(&self, model: &Path, candidates: &[Candidate]) -> Result<()> {
        let decoder = match &self.scheme {
            Scheme::Ssd { options, .. } if options.sigmoid_score => return Ok(()),
            Scheme::Ssd { .. } => "ssd-anchors",
            Scheme::Yolo { .. } | Scheme::End2End { .. } => "yolo",
            Scheme::Listed { .. } => "boxes-scores-labels",
        };
        let Some(c) = candidates.iter().find(|c| c.raw > 1.0 + MAX_SCORE_SLACK) else {
            return Ok(());
        };
        Err(Error::invalid(format!(
            "{}: decoder {decoder}: box {} scores {} for class {}, but scores read in this \
             layout are probabilities between 0 and 1: the output holds something else (raw \
             logits, or another model's output read in this layout)",
            model.display(),
            c.index,
            c.raw,
            c.class
        )))
    }

    /// The final score of a raw score.
    pub fn score(&self, raw: f32) -> f32 {
        match &self.scheme {
            Scheme::Ssd { options, .. } if options.sigmoid_score => sigmoid(raw),
            _ => raw,
        }
    }
}

/// The spec of a YOLO decoder reading `out` (float, checked), or why not.
fn yolo(
    y: &Yolo,
    out: OutputInfo,
    outputs: &[OutputInfo],
    input_px: [f32; 2],
    threshold: f32,
) -> std::result::Result<Spec, String> {
    if y.layout == YoloLayout::End2end && y.task != YoloTask::Detect {
        return Err(format!(
            "task {} is decoded in the yolov8 layout only, not in end2end: export \
             without nms=True",
            match y.task {
                YoloTask::Segment => "segment",
                YoloTask::Pose => "pose",
                _ => "obb",
            }
        ));
    }
    if y.layout == YoloLayout::End2end {
        return end2end(out, y.normalized, input_px, threshold, y.max_detections);
    }
    let v8 = y.layout == YoloLayout::Yolov8;
    let head = super::heads::Head::of(y, &out, outputs)?;
    let extras = head.extras;
    let (n, classes) = match (v8, out.shape.as_slice()) {
        (false, &[1, n, row]) if row > 5 + extras && n >= 1 => (n, row - 5 - extras),
        (true, &[1, row, n]) if row > 4 + extras && n >= 1 => (n, row - 4 - extras),
        _ => {
            let expected = if v8 {
                format!(
                    "[1, 4 + C{}, N] (YOLOv8/v11: cx, cy, w, h, C >= 1 class \
                     scores{} per box, boxes along the last axis)",
                    head.extras_shape(),
                    head.extras_text()
                )
            } else {
                format!(
                    "[1, N, 5 + C{}] (YOLOv5: one row of cx, cy, w, h, objectness, \
                     C >= 1 class scores{} per box)",
                    head.extras_shape(),
                    head.extras_text()
                )
            };
            return Err(format!(
                "output '{}' is {:?}, expected {expected}",
                out.name, out.shape
            ));
        }
    };
    check_yolo_fit(&out, v8, n, classes, outputs)?;
    if n > MAX_BOXES {
        return Err(format!(
            "output '{}' holds {n} boxes; at most {MAX_BOXES} are supported",
            out.name
        ));
    }
    Ok(Spec {
        scheme: Scheme::Yolo {
            v8,
            normalized: y.normalized,
        },
        boxes: out.clone(),
        scores: out,
        n,
        classes,
        keypoints: 0,
        input: input_px,
        raw_threshold: threshold,
        nms: NmsKind::Hard,
        max_detections: y.max_detections,
        task: y.task,
        extras,
        protos: head.protos,
        keypoint_values: head.keypoint_values,
    })
}

/// The end2end layout's spec: `[1, N, 6 + extra]` rows; the class count is
/// not in the shape (classes are ids in the rows), so labels are not
/// checked against one.
fn end2end(
    out: OutputInfo,
    normalized: bool,
    input: [f32; 2],
    threshold: f32,
    max_detections: usize,
) -> std::result::Result<Spec, String> {
    let (n, row) = match out.shape.as_slice() {
        &[1, n, row] if row >= 6 && n >= 1 => (n, row),
        _ => {
            return Err(format!(
                "output '{}' is {}, expected [1, N, 6 + extra] (end2end: one row of x1, y1, x2,                  y2, score, class per box)",
                out.name,
                shape_text(&out.shape)
            ))
        }
    };
    if n > MAX_BOXES {
        return Err(format!(
            "output '{}' holds {n} boxes; at most {MAX_BOXES} are supported",
            out.name
        ));
    }
    Ok(Spec {
        scheme: Scheme::End2End { row, normalized },
        boxes: out.clone(),
        scores: out,
        n,
        classes: 0,
        keypoints: 0,
        input,
        raw_threshold: threshold,
        nms: NmsKind::Hard,
        max_detections,
        task: YoloTask::Detect,
        extras: 0,
        protos: None,
        keypoint_values: 0,
    })
}

/// Whether `out`, read in a YOLO layout, looks like a YOLO head rather than
/// another model's output read the wrong way: a YOLO head predicts many
/// boxes of few classes (thousands of boxes of 80 classes for COCO), in one
/// output. An SSD model keeps boxes and scores apart, in outputs of the
/// same box count; a YOLO layout on it would make scores of coordinates.
fn check_yolo_fit(
    out: &OutputInfo,
    v8: bool,
    n: usize,
    classes: usize,
    outputs: &[OutputInfo],
) -> std::result::Result<(), String> {
    let layout = if v8 { "yolov8" } else { "yolov5" };
    let read = format!(
        "output '{}' {} read as {layout} is {n} boxes of {classes} classes",
        out.name,
        shape_text(&out.shape)
    );
    if n < classes {
        return Err(format!(
            "{read}: fewer boxes than classes, which no YOLO model gives (is it a YOLO model, \
             and in this layout?)"
        ));
    }
    let beside = outputs.iter().find(|o| {
        o.name != out.name && squeeze_batch(&o.shape).is_some_and(|[a, b]| a == n || b == n)
    });
    if let Some(other) = beside {
        return Err(format!(
            "{read}, and output '{}' {} holds as many: boxes and scores apart, as in an SSD \
             model, not one YOLO output",
            other.name,
            shape_text(&other.shape)
        ));
    }
    Ok(())
}

/// A shape as users read it: `1x896x16`.
pub(super) fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    dims.join("x")
}

/// [1, a, b] or [a, b] as [a, b].
fn squeeze_batch(shape: &[usize]) -> Option<[usize; 2]> {
    match *shape {
        [1, a, b] | [a, b] => Some([a, b]),
        _ => None,
    }
}

fn list(outputs: &[OutputInfo]) -> String {
    let all: Vec<String> = outputs
        .iter()
        .map(|o| format!("'{}' {:?}", o.name, o.shape))
        .collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

/// MediaPipe's sigmoid, in f32.
pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The smallest f32 `x` with `sigmoid(x) >= t`, so that the GPU compares
/// logits, with no exponential, and keeps exactly the boxes the CPU keeps:
/// a bisection over the f32 values in order (the sigmoid never decreases).
pub(crate) fn logit_threshold(t: f32) -> f32 {
    // f32 values in order as integers: negative values count down.
    let key = |x: f32| {
        let b = x.to_bits();
        if b >> 31 == 1 {
            -i64::from(b & 0x7fff_ffff)
        } else {
            i64::from(b)
        }
    };
    let value = |k: i64| {
        if k < 0 {
            f32::from_bits((-k) as u32 | 0x8000_0000)
        } else {
            f32::from_bits(k as u32)
        }
    };
    let passes = |k: i64| sigmoid(value(k)) >= t;
    let (mut lo, mut hi) = (key(f32::NEG_INFINITY), key(f32::INFINITY));
    if passes(lo) {
        return f32::NEG_INFINITY;
    }
    if !passes(hi) {
        // Only for t > 1 (or NaN), which the checks refuse: nothing passes.
        return f32::NAN;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    value(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logit_threshold_is_exact() {
        for t in [1e-30, 0.1, 0.25, 0.5, 0.500_000_1, 0.75, 0.9999, 1.0] {
            let l = logit_threshold(t);
            assert!(sigmoid(l) >= t, "{t}: {l}");
            // The next f32 down fails.
            let below = if l > 0.0 {
                f32::from_bits(l.to_bits() - 1)
            } else if l == 0.0 {
                -f32::from_bits(1)
            } else {
                f32::from_bits(l.to_bits() + 1)
            };
            assert!(sigmoid(below) < t, "{t}: {l}, {below}");
        }
        assert_eq!(logit_threshold(0.0), f32::NEG_INFINITY);
        assert!(logit_threshold(0.5).abs() < 1e-6);
        assert!((logit_threshold(0.75) - 3f32.ln()).abs() < 1e-5);
    }
}
