//! wgnndetect with Ultralytics' segment, pose and obb heads on both devices:
//! the tiny seeded exports of tests/data/detect/ultralytics_tasks with a
//! model-proc naming the task, into JSON lines (`mask` as COCO RLE,
//! `keypoints` with `keypoint_scores`, `angle`) and ROI metas, against the
//! objects Ultralytics' own post-processing finds (tests/models/detect_tasks
//! checks the values closely; here what the element writes).

use gst_check::Harness;
use serde_json::Value;

use crate::common;
use crate::common::harness::{buffer, caps, init};
use wgnn::gst::roi;

pub fn data() -> std::path::PathBuf {
    common::root().join("tests/data/detect/ultralytics_tasks")
}

/// A model-proc in `dir` naming model `m`'s task, labels and threshold
/// (of expected.json's `doc`).
pub fn model_proc(doc: &Value, m: &Value, dir: &std::path::Path) -> std::path::PathBuf {
    let proc = dir.join("proc.json");
    let text = serde_json::json!({
        "input": {"range": [0, 1], "resize": "letterbox", "pad": [114, 114, 114]},
        "decoder": {"type": "yolo", "layout": "yolov8", "task": m["task"]},
        "labels": m["labels"],
        "threshold": m["threshold"],
        "iou_threshold": doc["iou_threshold"],
    });
    std::fs::write(&proc, text.to_string()).unwrap();
    proc
}

#[test]
fn segment_pose_and_obb_objects_reach_json_and_roi_metas() {
    init();
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(data().join("expected.json")).unwrap())
            .unwrap();
    let size = doc["size"].as_u64().unwrap() as u32;
    let rgba = std::fs::read(data().join("input.rgba")).unwrap();
    let mut ran = 0;
    for m in doc["models"].as_array().unwrap() {
        let task = m["task"].as_str().unwrap();
        let want = m["objects"].as_array().unwrap();
        for device in ["gpu", "cpu"] {
            let dir = common::scratch(&format!("detect-tasks-{task}-{device}"));
            let proc = model_proc(&doc, m, &dir);
            let results = dir.join("out.jsonl");
            // float32: thresholds sit between scores a few 1e-3 apart, and
            // `auto` may pick float16 on a GPU.
            let mut h = Harness::new_parse(&format!(
                "wgnndetect device={device} precision=f32 model={} model-proc={} \
                 results-location={}",
                data().join(m["model"].as_str().unwrap()).display(),
                proc.display(),
                results.display()
            ));
            h.set_src_caps_str(&caps("RGBA", size, size));
            let out = h.push_and_pull(buffer(&rgba, 0)).unwrap();
            let rois = roi::read(&out, size, size);
            drop(h);
            let line = std::fs::read_to_string(&results).unwrap();
            let v: Value = serde_json::from_str(line.trim()).unwrap();
            let objects = v["objects"].as_array().unwrap();
            let what = format!("{task} on {device}");
            assert_eq!(objects.len(), want.len(), "{what}: {line}");
            assert_eq!(rois.len(), want.len(), "{what}");
            for (o, r) in objects.iter().zip(&rois) {
                match task {
                    "segment" => {
                        let mask = &o["mask"];
                        let (w, h) = (mask["w"].as_u64().unwrap(), mask["h"].as_u64().unwrap());
                        let counts = mask["counts"].as_array().unwrap();
                        let total: u64 = counts.iter().map(|c| c.as_u64().unwrap()).sum();
                        assert_eq!(total, w * h, "{what}: {mask}");
                        let meta = r.object.extras.mask.as_ref().expect("a mask param");
                        assert_eq!(u64::from(meta.width), w, "{what}");
                        assert_eq!(
                            meta.rle().len(),
                            counts.len(),
                            "{what}: the ROI meta's mask is the JSON's"
                        );
                    }
                    "pose" => {
                        assert_eq!(o["keypoints"].as_array().unwrap().len(), 17, "{what}");
                        assert_eq!(o["keypoint_scores"].as_array().unwrap().len(), 17, "{what}");
                        assert_eq!(r.object.extras.keypoint_scores.len(), 17, "{what}");
                    }
                    _ => {
                        let angle = o["angle"].as_f64().unwrap();
                        assert!(
                            (0.0..std::f64::consts::FRAC_PI_2).contains(&angle),
                            "{what}"
                        );
                        let meta = r.object.extras.angle.unwrap();
                        assert!((f64::from(meta) - angle).abs() < 1e-6, "{what}");
                    }
                }
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 6);
}
