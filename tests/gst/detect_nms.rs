//! A graph that ends in its own NMS through `wgnndetect` with no model-proc
//! (tests/data/detect/nms: an Ultralytics `nms=True` export, made by its
//! make_models.py): the metadata's export `args` pick the `end2end` layout,
//! the zero rows after the last object are dropped, and the JSON lines hold
//! the objects Ultralytics' own predict finds, on both devices.

use std::path::PathBuf;

use crate::common;
use crate::common::harness::init;
use crate::detect_ultralytics::{assert_objects, detect_once, frame};

use serde_json::Value;

fn data() -> PathBuf {
    common::root().join("tests/data/detect/nms")
}

#[test]
fn an_nms_export_runs_with_no_model_proc_on_both_devices() {
    init();
    let text = std::fs::read_to_string(data().join("expected.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let (rgba, w, h) = frame(&data(), &doc);
    let case = &doc["cases"][0];
    let model = data().join(case["model"].as_str().unwrap());
    assert!(
        !model.with_extension("json").exists(),
        "no model-proc beside it"
    );
    let dir = common::scratch("detect-nms");
    let mut ran = 0;
    for device in ["gpu", "cpu"] {
        let what = format!("{} on {device}", model.display());
        let json = dir.join(format!("{device}.jsonl"));
        let line = detect_once(&model, device, (&rgba, w, h), &json);
        assert_objects(&line["objects"], case["objects"].as_array().unwrap(), &what);
        ran += 1;
    }
    assert_eq!(ran, 2);
}
