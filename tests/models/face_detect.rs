//! The bundled face detector (assets/models/mediapipe/face_detection_short_range
//! .tflite and its model-proc) through `wgnn::tasks::Detector`, on the GPU
//! context and the CPU context, against MediaPipe 0.10.14's own face
//! detection on the same pixels (tests/data/detect/faces): the photo, six
//! frames of the sample clip, a frame smaller than the model input, an 8K
//! frame and a photo without a face.

use std::sync::Arc;

use crate::common;
use crate::face_refs::{self, agreement};

use wgnn::tasks::{DetectOptions, Detector, Device, ModelProc, ObjectResult};
use wgnn::video::cpu::CpuFrame;
use wgnn::video::{upload_frame, ColorSpec, FrameLayout, TexturePool, VideoFormat};

/// What the GPU path may read back per frame: the compacted list, never
/// the frame or the model's outputs (896 x 17 floats = 60 KB).
const MAX_READ_BACK: u64 = 4096;

fn face_detector(device: &Device) -> Detector {
    let path = wgnn::models::bundled("mediapipe/face_detection_short_range.tflite");
    let model = Arc::new(wgnn::models::load(&path).unwrap());
    let proc = ModelProc::for_model(&path, None)
        .unwrap()
        .expect("the bundled model-proc beside the model");
    let labels = proc.labels().unwrap();
    let options = DetectOptions {
        threshold: None,
        iou_threshold: None,
        ..DetectOptions::default()
    };
    Detector::new(device, model, &proc, labels, options, ColorSpec::default()).unwrap()
}

/// Runs `detect` on every reference image and checks each against
/// MediaPipe's faces; one failure message lists them all.
fn against_mediapipe(what: &str, mut detect: impl FnMut(&FrameLayout, &[u8]) -> Vec<ObjectResult>) {
    let mut failures = Vec::new();
    for reference in face_refs::references() {
        let layout = FrameLayout::packed(VideoFormat::Rgba, reference.width, reference.height);
        let found = detect(&layout, &reference.rgba());
        match agreement(&found, &reference) {
            Ok(line) => eprintln!("{what}: {line}"),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
}

#[test]
fn the_gpu_finds_mediapipes_faces() {
    let gpu = common::gpu();
    let mut detector = face_detector(&Device::Gpu(gpu.clone()));
    assert!(!detector.is_cpu());
    let pool = TexturePool::new();
    against_mediapipe("gpu", |layout, bytes| {
        let frame = upload_frame(&gpu, &pool, layout, bytes).unwrap();
        let (found, read) = detector.detect_gpu(&frame).unwrap();
        assert!(
            read.download_bytes > 0 && read.download_bytes <= MAX_READ_BACK,
            "{}x{}: read back {} bytes",
            layout.width,
            layout.height,
            read.download_bytes
        );
        found.into_iter().map(ObjectResult::from).collect()
    });
    gpu.check().unwrap();
}

#[test]
fn the_cpu_finds_mediapipes_faces() {
    let mut detector = face_detector(&Device::Cpu);
    assert!(detector.is_cpu());
    against_mediapipe("cpu", |layout, bytes| {
        let frame = CpuFrame::from_layout(layout, bytes).unwrap();
        let found = detector.detect_cpu(&frame).unwrap();
        found.into_iter().map(ObjectResult::from).collect()
    });
}

#[test]
fn a_higher_threshold_drops_the_weaker_faces() {
    // MediaPipe's scores: 0.94 on frame 72, 0.63 on frame 179. At 0.8 only
    // the first keeps its face; the thresholds are the caller's, not the
    // model-proc's.
    let path = wgnn::models::bundled("mediapipe/face_detection_short_range.tflite");
    let model = Arc::new(wgnn::models::load(&path).unwrap());
    let proc = ModelProc::for_model(&path, None).unwrap().unwrap();
    let options = DetectOptions {
        threshold: Some(0.8),
        iou_threshold: None,
        ..DetectOptions::default()
    };
    let mut detector = Detector::new(
        &Device::Cpu,
        model,
        &proc,
        proc.labels().unwrap(),
        options,
        ColorSpec::default(),
    )
    .unwrap();
    for (suffix, faces) in [("f072.png", 1), ("f179.png", 0)] {
        let r = face_refs::reference(suffix);
        let layout = FrameLayout::packed(VideoFormat::Rgba, r.width, r.height);
        let bytes = r.rgba();
        let found = detector
            .detect_cpu(&CpuFrame::from_layout(&layout, &bytes).unwrap())
            .unwrap();
        assert_eq!(found.len(), faces, "{suffix}: {found:?}");
    }
}
