//! An int8 QDQ Ultralytics detector through `wgnndetect` with no model-proc
//! (its metadata kept through quantization), on both devices, into the JSON
//! lines of `results-location`, against the objects onnxruntime's output
//! decodes to with Ultralytics' post-processing (tests/data/int8,
//! make_models.py `detector`). Its 64 convolutions compute in int8
//! (`Op::QuantConv2d`); onnxruntime's quantizer rounds its inputs by
//! dividing by the scale where wgnn multiplies by the reciprocal, so a value
//! within a rounding of a half step may land one step apart, and the
//! scores and boxes that follow move a little: objects are compared to
//! 0.02 in confidence and 1.5 pixels, and only those scoring 0.03 or more
//! above the 0.25 threshold (one that close could fall on either side).

use std::path::PathBuf;

use crate::common;
use crate::common::harness::init;
use crate::detect_ultralytics::detect_once;

use serde_json::Value;

fn data() -> PathBuf {
    common::root().join("tests/data/int8")
}

/// Clear of the threshold, with an area (wgnn drops boxes of none).
fn compared(objects: &Value) -> Vec<&Value> {
    let f = |o: &Value, k: &str| o[k].as_f64().unwrap();
    objects
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| f(o, "confidence") >= 0.28 && f(o, "w") > 0.0 && f(o, "h") > 0.0)
        .collect()
}

/// references.json's keys: the QDQ export (int8 convolutions between
/// QuantizeLinear -> DequantizeLinear pairs) and the QOperator one
/// (QLinearConv, QLinearMul, QLinearSigmoid, QLinearAdd, QLinearConcat, and
/// Split, MaxPool and Resize on uint8 tensors).
const CASES: [&str; 2] = ["yolov8n_qdq", "yolov8n_qop"];

#[test]
fn int8_ultralytics_detectors_run_with_no_model_proc_on_both_devices() {
    init();
    let text = std::fs::read_to_string(data().join("references.json")).unwrap();
    let refs: Value = serde_json::from_str(&text).unwrap();
    let mut ran = 0;
    for key in CASES {
        ran += detect(key, &refs[key]);
    }
    assert_eq!(ran, 2 * CASES.len(), "runs");
}

/// Runs case `key` on both devices; the number of runs compared.
fn detect(key: &str, case: &Value) -> usize {
    let model = data().join(case["model"].as_str().unwrap());
    assert!(!model.with_extension("json").exists(), "no model-proc");
    let img = image::open(data().join(case["frame"].as_str().unwrap()))
        .unwrap()
        .to_rgba8();
    let (w, h) = (img.width(), img.height());
    let want = compared(&case["objects"]);
    assert!(want.len() >= 5, "{} objects to compare", want.len());
    let dir = common::scratch(&format!("detect-int8-{key}"));
    let mut ran = 0;
    for device in ["gpu", "cpu"] {
        let json = dir.join(format!("{device}.jsonl"));
        let line = detect_once(&model, device, (img.as_raw(), w, h), &json);
        let got = compared(&line["objects"]);
        let what = format!("{key} on the {device}: {got:?}");
        assert_eq!(got.len(), want.len(), "{what}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g["label_id"], w["label_id"], "{what}");
            assert_eq!(g["label"], w["label"], "{what}");
            let near = |field: &str, tolerance: f64| {
                let (a, b) = (g[field].as_f64().unwrap(), w[field].as_f64().unwrap());
                assert!(
                    (a - b).abs() <= tolerance,
                    "{what}: {field} {a} vs {b}: {g} vs {w}"
                );
            };
            near("confidence", 0.02);
            for field in ["x", "y", "w", "h"] {
                near(field, 1.5);
            }
        }
        ran += 1;
    }
    ran
}
