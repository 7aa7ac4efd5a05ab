//! The YOLO decoder end to end: `wgnn::tasks::Detector` on synthetic ONNX
//! models whose outputs are known constants (both layouts), on the GPU and
//! the CPU, letterboxed and stretched into the input from frames of several
//! shapes, against an independent NumPy decode + class-aware NMS + mapping
//! back to frame pixels (tests/data/detect/yolo, see its README).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use wgnn::models;
use wgnn::tasks::{DetectOptions, Detection, Detector, Device, ModelProc};
use wgnn::video::cpu::CpuFrame;
use wgnn::video::{upload_frame, ColorSpec, FrameLayout, TexturePool, VideoFormat};

use crate::common;

fn data() -> PathBuf {
    common::root().join("tests/data/detect/yolo")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(data().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The model-proc a case describes.
fn proc_for(doc: &Value, case: &Value) -> ModelProc {
    let text = serde_json::json!({
        "input": {"range": [0, 1], "resize": case["resize"], "pad": [114, 114, 114]},
        "decoder": {"type": "yolo", "layout": case["layout"], "normalized": case["normalized"],
                    "max_detections": case["max_detections"]},
        "labels": doc["labels"],
        "threshold": doc["threshold"],
        "iou_threshold": doc["iou_threshold"],
    });
    serde_json::from_value(text).unwrap()
}

/// A frame of varied colours: the models' outputs must not depend on it.
fn frame_bytes(w: u32, h: u32) -> Vec<u8> {
    (0..w * h * 4).map(|i| (i * 37 % 251) as u8).collect()
}

fn assert_matches(found: &[Detection], want: &[Value], what: &str) {
    assert_eq!(found.len(), want.len(), "{what}: {found:?}");
    for (d, w) in found.iter().zip(want) {
        assert_eq!(d.label, w["label"].as_str().unwrap(), "{what}");
        assert_eq!(d.label_id as u64, w["label_id"].as_u64().unwrap(), "{what}");
        let conf = w["confidence"].as_f64().unwrap() as f32;
        assert!((d.confidence - conf).abs() < 1e-6, "{what}: {d:?} vs {w}");
        let got = [d.rect.x, d.rect.y, d.rect.w, d.rect.h];
        for (g, key) in got.iter().zip(["x", "y", "w", "h"]) {
            let e = w[key].as_f64().unwrap() as f32;
            assert!(
                (g - e).abs() < 2e-3,
                "{what}: {key} {g} vs {e}: {d:?} vs {w}"
            );
        }
        assert!(d.keypoints.is_empty(), "{what}");
    }
}

#[test]
fn yolo_detections_match_an_independent_decode() {
    let gpu = common::gpu();
    let doc = expected();
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 12);
    let pool = TexturePool::new();
    for case in cases {
        let file = case["model"].as_str().unwrap();
        let model = Arc::new(models::load(data().join(file)).unwrap());
        let proc = proc_for(&doc, case);
        let (w, h) = (
            case["width"].as_u64().unwrap() as u32,
            case["height"].as_u64().unwrap() as u32,
        );
        let what = format!("{file} {} {w}x{h}", case["resize"]);
        let want = case["detections"].as_array().unwrap();
        let layout = FrameLayout::packed(VideoFormat::Rgba, w, h);
        let bytes = frame_bytes(w, h);
        for device in [Device::Gpu(gpu.clone()), Device::Cpu] {
            let mut detector = Detector::new(
                &device,
                model.clone(),
                &proc,
                proc.labels().unwrap(),
                DetectOptions::default(),
                ColorSpec::default(),
            )
            .unwrap();
            let found = if device.is_cpu() {
                detector
                    .detect_cpu(&CpuFrame::from_layout(&layout, &bytes).unwrap())
                    .unwrap()
            } else {
                let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
                let (found, stats) = detector.detect_gpu(&frame).unwrap();
                // One short read-back: the counter and the first records.
                assert_eq!(stats.downloads, 1, "{what}: {stats}");
                assert!(stats.download_bytes <= 4096, "{what}: {stats}");
                found
            };
            assert_matches(&found, want, &format!("{what} on {}", device.describe()));
        }
    }
    gpu.check().unwrap();
}

#[test]
fn thresholds_from_options_override_the_model_proc() {
    let doc = expected();
    let case = &doc["cases"][2]; // yolov5, letterbox, 96x64: the input's own size
    assert_eq!(case["width"], 96);
    let model = Arc::new(models::load(data().join("yolov5.onnx")).unwrap());
    let proc = proc_for(&doc, case);
    let mut detector = Detector::new(
        &Device::Cpu,
        model,
        &proc,
        proc.labels().unwrap(),
        DetectOptions {
            threshold: Some(0.65),
            iou_threshold: Some(0.9),
            ..DetectOptions::default()
        },
        ColorSpec::default(),
    )
    .unwrap();
    let layout = FrameLayout::packed(VideoFormat::Rgba, 96, 64);
    let bytes = frame_bytes(96, 64);
    let found = detector
        .detect_cpu(&CpuFrame::from_layout(&layout, &bytes).unwrap())
        .unwrap();
    // Scores 0.9, 0.8 (no longer suppressed at IoU 0.9) and 0.7 pass 0.65.
    let scores: Vec<f32> = found.iter().map(|d| d.confidence).collect();
    assert_eq!(scores.len(), 3, "{found:?}");
    assert!((scores[1] - 0.8).abs() < 1e-6, "{scores:?}");
}

#[test]
fn a_layout_or_labels_that_do_not_fit_the_model_are_refused() {
    let doc = expected();
    let model = Arc::new(models::load(data().join("yolov5.onnx")).unwrap());
    let mut case = doc["cases"][0].clone();
    let new = |proc: &ModelProc, labels| {
        Detector::new(
            &Device::Cpu,
            model.clone(),
            proc,
            labels,
            DetectOptions::default(),
            ColorSpec::default(),
        )
        .unwrap_err()
        .to_string()
    };
    // Read as YOLOv8, the [1, 60, 8] output is 8 boxes of 56 classes: no
    // YOLO head, refused whatever the labels.
    case["layout"] = "yolov8".into();
    let proc = proc_for(&doc, &case);
    let err = new(&proc, proc.labels().unwrap());
    assert!(
        err.contains(
            "output 'output0' 1x60x8 read as yolov8 is 8 boxes of 56 classes: fewer boxes than \
             classes"
        ),
        "{err}"
    );
    case["layout"] = "yolov5".into();
    let proc = proc_for(&doc, &case);
    let two = wgnn::tasks::Labels::from_names(vec!["cat".into(), "dog".into()], "a short list");
    let err = new(&proc, two);
    assert!(
        err.contains("the a short list has 2 labels, but the model has 3 classes"),
        "{err}"
    );
}
