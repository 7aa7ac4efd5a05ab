//! A graph that ends in its own NMS through `wgnndetect` with no model-proc
//! (tests/data/detect/nms: an Ultralytics `nms=True` export, made by its
//! make_models.py): the metadata's export `args` pick the `end2end` layout,
//! the zero rows after the last object are dropped, and the JSON lines hold
//! the objects Ultralytics' own predict finds, on both devices; and
//! torchvision's SSDlite through the `boxes-scores-labels` decoder.

use std::path::PathBuf;

use crate::common;
use crate::common::harness::init;
use crate::detect_ultralytics::{assert_objects, detect_once, detect_with, frame};

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

/// torchvision's SSDlite (`ssdlite`, see make_models.py `ssd`): on the GPU
/// with no model-proc (its outputs are named `boxes`, `scores`, `labels`:
/// the `boxes-scores-labels` decoder, labels as torchvision's ids), on the
/// CPU with a minimal model-proc naming the classes without the
/// background (`label_offset` 1).
#[test]
fn a_torchvision_ssd_runs_with_and_without_a_model_proc() {
    init();
    let text = std::fs::read_to_string(data().join("expected.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let (rgba, w, h) = frame(&data(), &doc);
    let case = &doc["cases"][1];
    let model = data().join(case["model"].as_str().unwrap());
    assert!(!model.with_extension("json").exists());
    let want = case["objects"].as_array().unwrap();
    let dir = common::scratch("detect-ssd");
    // No labels: the JSON names each class by its id.
    let ids: Vec<Value> = want
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o["label"] = o["label_id"].to_string().into();
            o
        })
        .collect();
    let line = detect_once(&model, "gpu", (&rgba, w, h), &dir.join("gpu.jsonl"));
    assert_objects(&line["objects"], &ids, "ssdlite on gpu, no model-proc");
    let names = &case["labels"].as_array().unwrap()[1..];
    let proc = dir.join("ssdlite.json");
    let text = serde_json::json!({
        "input": {"range": [0, 1]},
        "decoder": {"type": "boxes-scores-labels", "label_offset": 1},
        "labels": names,
    });
    std::fs::write(&proc, text.to_string()).unwrap();
    let offset: Vec<Value> = want
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o["label_id"] = (o["label_id"].as_u64().unwrap() - 1).into();
            o
        })
        .collect();
    let json = dir.join("cpu.jsonl");
    let line = detect_with(&model, Some(&proc), "cpu", (&rgba, w, h), &json);
    assert_objects(&line["objects"], &offset, "ssdlite on cpu, model-proc");
}
