//! Zero-config Ultralytics exports through `wgnndetect`: no model-proc (no
//! property, no `.json` beside the model), on both devices, into the JSON
//! lines of `results-location`, against the objects Ultralytics' own
//! post-processing finds (tests/data/detect/ultralytics, made by its
//! make_models.py). The dynamic-size export gets its input size from the
//! metadata's `imgsz`: the frame is twice that, and at its own size the
//! model would find other objects.

use std::path::PathBuf;

use crate::common;
use crate::common::harness::{buffer, caps, init};

use gst_check::Harness;
use serde_json::Value;

fn data() -> PathBuf {
    common::root().join("tests/data/detect/ultralytics")
}

/// The committed frame of `dir`'s expected.json as RGBA.
pub(crate) fn frame(dir: &std::path::Path, doc: &Value) -> (Vec<u8>, u32, u32) {
    let img = image::open(dir.join(doc["frame"].as_str().unwrap()))
        .unwrap()
        .to_rgba8();
    (img.as_raw().clone(), img.width(), img.height())
}

/// Ultralytics' objects against the JSON line's, in order (best first).
/// Ultralytics keeps the boxes of no area a random-weight head predicts
/// (a negative width or height); wgnn drops them (MODEL_PROC.md), so they
/// are left out of the comparison.
pub(crate) fn assert_objects(got: &Value, want: &[Value], what: &str) {
    let got = got.as_array().unwrap();
    let positive = |o: &&Value| o["w"].as_f64().unwrap() > 0.0 && o["h"].as_f64().unwrap() > 0.0;
    let want: Vec<&Value> = want.iter().filter(positive).collect();
    assert!(!want.is_empty(), "{what}: no object with an area");
    assert_eq!(got.len(), want.len(), "{what}: {got:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g["label"], w["label"], "{what}");
        assert_eq!(g["label_id"], w["label_id"], "{what}");
        let near = |key: &str, tolerance: f64| {
            let (a, b) = (g[key].as_f64().unwrap(), w[key].as_f64().unwrap());
            assert!(
                (a - b).abs() <= tolerance,
                "{what}: {key} {a} vs {b}: {g} vs {w}"
            );
        };
        near("confidence", 1e-3);
        for key in ["x", "y", "w", "h"] {
            near(key, 0.1);
        }
    }
}

/// The JSON line `wgnndetect` with no model-proc writes for one RGBA frame
/// on `device`, into `json`.
pub(crate) fn detect_once(
    model: &std::path::Path,
    device: &str,
    frame: (&[u8], u32, u32),
    json: &std::path::Path,
) -> Value {
    detect_with(model, None, device, frame, json)
}

/// [`detect_once`] with the model-proc `proc` where given.
pub(crate) fn detect_with(
    model: &std::path::Path,
    proc: Option<&std::path::Path>,
    device: &str,
    (rgba, w, h): (&[u8], u32, u32),
    json: &std::path::Path,
) -> Value {
    // float32: the objects are compared to float rounding, and `auto` may
    // pick float16 on a GPU.
    let mut launch = format!(
        "wgnndetect device={device} precision=f32 model={} results-location={}",
        model.display(),
        json.display()
    );
    if let Some(proc) = proc {
        launch += &format!(" model-proc={}", proc.display());
    }
    let mut harness = Harness::new_parse(&launch);
    harness.set_src_caps_str(&caps("RGBA", w, h));
    harness.push_and_pull(buffer(rgba, 0)).unwrap();
    drop(harness);
    let text = std::fs::read_to_string(json).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[test]
fn ultralytics_exports_run_with_no_model_proc_on_both_devices() {
    init();
    let text = std::fs::read_to_string(data().join("expected.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let (rgba, w, h) = frame(&data(), &doc);
    assert_eq!(
        (w, h),
        (
            doc["width"].as_u64().unwrap() as u32,
            doc["height"].as_u64().unwrap() as u32
        )
    );
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    let dir = common::scratch("detect-ultralytics");
    let mut ran = 0;
    for case in cases {
        let model = data().join(case["model"].as_str().unwrap());
        assert!(
            !model.with_extension("json").exists(),
            "no model-proc beside it"
        );
        for device in ["gpu", "cpu"] {
            let what = format!("{} on {device}", model.display());
            let json = dir.join(format!("{ran}.jsonl"));
            let line = detect_once(&model, device, (&rgba, w, h), &json);
            assert_objects(&line["objects"], case["objects"].as_array().unwrap(), &what);
            ran += 1;
        }
    }
    assert_eq!(ran, 4);
}
