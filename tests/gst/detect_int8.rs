//! int8 Ultralytics detectors through `wgnndetect` on both devices, into
//! the JSON lines of `results-location` (tests/data/int8, make_models.py):
//! the QDQ and QOperator ONNX exports with no model-proc (their metadata
//! kept through quantization) against the objects onnxruntime's output
//! decodes to with Ultralytics' post-processing, and Ultralytics'
//! full-integer TFLite export with a model-proc against LiteRT's. The QDQ
//! export's 64 convolutions compute in int8 (`Op::QuantConv2d`);
//! onnxruntime's quantizer rounds its inputs by dividing by the scale where
//! wgnn multiplies by the reciprocal, so a value within a rounding of a half
//! step may land one step apart, and the scores and boxes that follow move
//! a little: objects are compared to a confidence tolerance (`CASES`) and
//! 1.5 pixels, and only those scoring more than that above the 0.25
//! threshold (one that close could fall on either side).

use std::path::PathBuf;

use crate::common;
use crate::common::harness::init;
use crate::detect_ultralytics::detect_once;

use serde_json::Value;

fn data() -> PathBuf {
    common::root().join("tests/data/int8")
}

/// The objects with an area (wgnn drops boxes of none) scoring `from` or
/// more.
fn scoring(objects: &Value, from: f64) -> Vec<&Value> {
    let f = |o: &Value, k: &str| o[k].as_f64().unwrap();
    objects
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| f(o, "confidence") >= from && f(o, "w") > 0.0 && f(o, "h") > 0.0)
        .collect()
}

/// The same object: label, confidence to `tolerance`, box to 1.5 pixels.
fn same(a: &Value, b: &Value, tolerance: f64) -> bool {
    let near =
        |field: &str, t: f64| (a[field].as_f64().unwrap() - b[field].as_f64().unwrap()).abs() <= t;
    a["label_id"] == b["label_id"]
        && a["label"] == b["label"]
        && near("confidence", tolerance)
        && ["x", "y", "w", "h"].iter().all(|f| near(f, 1.5))
}

/// references.json's keys and whether a model-proc sits beside the model:
/// the QDQ export (int8 convolutions between QuantizeLinear ->
/// DequantizeLinear pairs) and the QOperator one (QLinearConv, QLinearMul,
/// QLinearSigmoid, QLinearAdd, QLinearConcat, and Split, MaxPool and Resize
/// on uint8 tensors) run with none; Ultralytics' full-integer TFLite export
/// (int8 in and out, boxes 0..1 of the input) with yolov8n_int8.json: wgnn
/// does not read the metadata Ultralytics appends to a TFLite file.
/// Then the confidence tolerance and the fewest objects clear of it. The
/// ONNX detectors' scores move by a rounding. The TFLite one's output is up
/// to 21 steps of 0.004 off LiteRT's in the score rows (tests/models/int8.rs:
/// its random-weight int8 network amplifies a one-step difference, and
/// LiteRT's own builtin kernels are further off its XNNPACK ones): 0.09,
/// which leaves its best object to compare; its boxes and labels must still
/// match.
const CASES: [(&str, bool, f64, usize); 3] = [
    ("yolov8n_qdq", false, 0.02, 5),
    ("yolov8n_qop", false, 0.02, 5),
    ("yolov8n_int8", true, 0.09, 1),
];

#[test]
fn int8_ultralytics_detectors_run_on_both_devices_into_json() {
    init();
    let text = std::fs::read_to_string(data().join("references.json")).unwrap();
    let refs: Value = serde_json::from_str(&text).unwrap();
    let mut ran = 0;
    for (key, proc, tolerance, fewest) in CASES {
        ran += detect(key, &refs[key], proc, (tolerance, fewest));
    }
    assert_eq!(ran, 2 * CASES.len(), "runs");
}

/// Runs case `key` on both devices; the number of runs compared. Each
/// object clear of the 0.25 threshold by more than `tolerance` on one
/// side (reference or wgnn) must be found on the other among all it
/// reports, in any order (scores tie on an int8 grid).
fn detect(key: &str, case: &Value, proc: bool, (tolerance, fewest): (f64, usize)) -> usize {
    let model = data().join(case["model"].as_str().unwrap());
    assert_eq!(
        model.with_extension("json").exists(),
        proc,
        "{key}: a model-proc"
    );
    let img = image::open(data().join(case["frame"].as_str().unwrap()))
        .unwrap()
        .to_rgba8();
    let (w, h) = (img.width(), img.height());
    let clear = 0.255 + tolerance;
    let want = scoring(&case["objects"], 0.0);
    let compared = scoring(&case["objects"], clear).len();
    assert!(compared >= fewest, "{key}: {compared} objects to compare");
    let dir = common::scratch(&format!("detect-int8-{key}"));
    let mut ran = 0;
    for device in ["gpu", "cpu"] {
        let json = dir.join(format!("{device}.jsonl"));
        let line = detect_once(&model, device, (img.as_raw(), w, h), &json);
        let got = scoring(&line["objects"], 0.0);
        let what = format!("{key} on the {device}: {got:?}");
        for (side, these, others) in [("reference", &want, &got), ("wgnn", &got, &want)] {
            for o in these
                .iter()
                .filter(|o| o["confidence"].as_f64().unwrap() >= clear)
            {
                let found = others.iter().any(|x| same(o, x, tolerance));
                assert!(found, "{what}: the {side}'s {o} is not on the other side");
            }
        }
        ran += 1;
    }
    ran
}
