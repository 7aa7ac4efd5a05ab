//! Detectors whose graph ends in its own NMS and lists what it found as
//! three outputs, one row per object: torchvision's detection models
//! (SSD, SSDlite, Faster R-CNN, RetinaNet, FCOS) exported with a wrapper
//! that returns the first image's `boxes` `[N, 4]` (x0, y0, x1, y1),
//! `scores` `[N]` and `labels` `[N]`. Their model-proc decoder
//! (`boxes-scores-labels`), and the one a model gets with no model-proc
//! where its outputs are named exactly `boxes`, `scores` and `labels`:
//! torchvision's graphs normalise and resize the image themselves, so the
//! input is RGB 0..1 stretched to the graph's size (docs/MODEL_PROC.md).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::models::Model;

/// The outputs a zero-config model names, in this order.
const NAMES: [&str; 3] = ["boxes", "scores", "labels"];

/// The `boxes-scores-labels` decoder: rows the graph already thresholded
/// and suppressed, read as they are (no NMS).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BoxesScoresLabels {
    /// Output holding `[N, 4]` (or `[1, N, 4]`) x0, y0, x1, y1.
    #[serde(default = "boxes")]
    pub boxes: String,
    /// Output holding `[N]` (or `[1, N]`) scores, 0..1.
    #[serde(default = "scores")]
    pub scores: String,
    /// Output holding `[N]` (or `[1, N]`) integer class labels.
    #[serde(default = "labels")]
    pub labels: String,
    /// Box coordinates are 0..1 of the input rather than input pixels.
    #[serde(default)]
    pub normalized: bool,
    /// Subtracted from each label to give the class id (the index into
    /// `labels`); a row whose label is below it is dropped. torchvision's
    /// labels count the background as 0: 0 with a label list that starts
    /// with it (as its weights' `categories` do), 1 with one that does not.
    #[serde(default)]
    pub label_offset: u32,
    /// Most objects kept per frame.
    #[serde(default = "max_detections")]
    pub max_detections: usize,
}

fn boxes() -> String {
    NAMES[0].into()
}
fn scores() -> String {
    NAMES[1].into()
}
fn labels() -> String {
    NAMES[2].into()
}
fn max_detections() -> usize {
    300
}

/// The model-proc (as JSON) a model whose outputs are exactly `boxes`,
/// `scores` and `labels` gets with none given; `None` for any other.
pub(crate) fn implied(model: &Model) -> Option<Value> {
    let names: Vec<&str> = model.outputs().iter().map(|o| o.name.as_str()).collect();
    (names == NAMES).then(|| {
        json!({
            "input": {"range": [0, 1], "color": "rgb", "resize": "stretch"},
            "decoder": {"type": "boxes-scores-labels"},
        })
    })
}
