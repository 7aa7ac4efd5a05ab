//! Ultralytics' segment, pose and obb heads end to end: `wgnn::tasks::Detector`
//! on tiny seeded exports (tests/data/detect/ultralytics_tasks, see
//! make_models.py), on the GPU and the CPU, against Ultralytics' own
//! post-processing of the same outputs: boxes, mask IoU >= 0.9 per object,
//! keypoints within a pixel, angles within 0.01 rad.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use wgnn::models;
use wgnn::tasks::{DetectOptions, Detection, Detector, Device, Mask, ModelProc};
use wgnn::video::cpu::CpuFrame;
use wgnn::video::{upload_frame, ColorSpec, FrameLayout, TexturePool, VideoFormat};

use crate::common;

fn data() -> PathBuf {
    common::root().join("tests/data/detect/ultralytics_tasks")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(data().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The model-proc of one model of expected.json.
pub fn proc_for(doc: &Value, m: &Value) -> Value {
    serde_json::json!({
        "input": {"range": [0, 1], "resize": "letterbox", "pad": [114, 114, 114]},
        "decoder": {"type": "yolo", "layout": "yolov8", "task": m["task"]},
        "labels": m["labels"],
        "threshold": m["threshold"],
        "iou_threshold": doc["iou_threshold"],
    })
}

/// The reference's mask (COCO RLE of the whole 64 x 64 input, column-major).
fn reference_mask(counts: &[Value], size: usize) -> Vec<bool> {
    let mut column_major = Vec::new();
    for (k, c) in counts.iter().enumerate() {
        column_major.extend(std::iter::repeat_n(
            k % 2 == 1,
            c.as_u64().unwrap() as usize,
        ));
    }
    assert_eq!(column_major.len(), size * size);
    let mut bits = vec![false; size * size];
    for (k, b) in column_major.into_iter().enumerate() {
        bits[(k % size) * size + k / size] = b;
    }
    bits
}

fn mask_iou(found: &Mask, want: &[bool], size: usize) -> f64 {
    let (mut inter, mut union) = (0usize, 0usize);
    for y in 0..size {
        for x in 0..size {
            let a = found.contains(x as u32, y as u32);
            let b = want[y * size + x];
            inter += usize::from(a && b);
            union += usize::from(a || b);
        }
    }
    if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    }
}

fn near(a: f32, b: f64, tolerance: f32, what: &str) {
    assert!((a - b as f32).abs() <= tolerance, "{what}: {a} vs {b}");
}

fn assert_matches(task: &str, found: &[Detection], want: &[Value], size: usize, what: &str) {
    assert_eq!(found.len(), want.len(), "{what}: {found:?}");
    let s = size as f64;
    for (d, w) in found.iter().zip(want) {
        assert_eq!(d.label_id as u64, w["label_id"].as_u64().unwrap(), "{what}");
        near(d.confidence, w["confidence"].as_f64().unwrap(), 1e-4, what);
        if task == "obb" {
            let o: Vec<f64> = w["obb"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            near(d.rect.x + d.rect.w / 2.0, o[0], 0.01, what);
            near(d.rect.y + d.rect.h / 2.0, o[1], 0.01, what);
            near(d.rect.w, o[2], 0.01, what);
            near(d.rect.h, o[3], 0.01, what);
            near(d.extras.angle.unwrap(), o[4], 0.01, what);
            continue;
        }
        let b: Vec<f64> = w["box"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap().clamp(0.0, s))
            .collect();
        near(d.rect.x, b[0], 0.01, what);
        near(d.rect.y, b[1], 0.01, what);
        near(d.rect.x + d.rect.w, b[2], 0.01, what);
        near(d.rect.y + d.rect.h, b[3], 0.01, what);
        if task == "pose" {
            let kps = w["keypoints"].as_array().unwrap();
            assert_eq!(d.keypoints.len(), kps.len(), "{what}");
            for ((p, score), k) in d.keypoints.iter().zip(&d.extras.keypoint_scores).zip(kps) {
                let k: Vec<f64> = k
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                near(p[0], k[0].clamp(0.0, s), 1.0, what);
                near(p[1], k[1].clamp(0.0, s), 1.0, what);
                near(*score, k[2], 1e-4, what);
            }
        }
        if task == "segment" {
            let mask = d.extras.mask.as_ref().unwrap();
            let want = reference_mask(w["mask_full"].as_array().unwrap(), size);
            let iou = mask_iou(mask, &want, size);
            assert!(iou >= 0.9, "{what}: mask IoU {iou} for {d:?}");
        }
    }
}

#[test]
fn segment_pose_and_obb_heads_match_ultralytics() {
    let gpu = common::gpu();
    let doc = expected();
    let size = doc["size"].as_u64().unwrap() as u32;
    let models_run = doc["models"].as_array().unwrap();
    assert_eq!(models_run.len(), 3);
    let bytes = std::fs::read(data().join("input.rgba")).unwrap();
    let layout = FrameLayout::packed(VideoFormat::Rgba, size, size);
    let pool = TexturePool::new();
    for m in models_run {
        let task = m["task"].as_str().unwrap();
        let model = Arc::new(models::load(data().join(m["model"].as_str().unwrap())).unwrap());
        let proc: ModelProc = serde_json::from_value(proc_for(&doc, m)).unwrap();
        let want = m["objects"].as_array().unwrap();
        assert!(!want.is_empty(), "{task}");
        for device in [Device::Gpu(gpu.clone()), Device::Cpu] {
            let what = format!("{task} on {}", device.describe());
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
                // The candidates, and for masks their bits: never the frame.
                let most = 4096
                    + if task == "segment" {
                        size * size / 8 * found.len() as u32
                    } else {
                        0
                    };
                assert!(stats.download_bytes <= u64::from(most), "{what}: {stats}");
                found
            };
            assert_matches(task, &found, want, size as usize, &what);
        }
    }
    gpu.check().unwrap();
}
