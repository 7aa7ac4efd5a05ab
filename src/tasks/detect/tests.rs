//! The GPU decoder against the Rust one on random outputs (both YOLO
//! layouts and SSD, sizes that are no multiple of the workgroup, no
//! survivors, more survivors than the first read-back holds, more than the
//! buffer holds, NaN scores), the kernel's variants and layout, and
//! [`Detector`] on the GPU and the CPU giving the same faces.

use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::decode::tests::{face_spec, FACE_DECODER};
use super::decode::Candidate;
use super::gpu::{DecodeParams, DecodeSwitches, GpuDecoder};
use super::spec::{OutputInfo, Spec};
use super::*;
use crate::gpu::shader::testing::{assert_same_layout, offsets, validate};
use crate::ml::{Context, TensorDescriptor};
use crate::models;
use crate::tasks::tests::{gpu, Picture};

/// Runs the GPU decoder on `boxes` (and `scores`, where the spec reads a
/// second output) written to tensors of the spec's shapes.
fn gpu_decode(
    gpu: &Gpu,
    spec: &Spec,
    boxes: &[f32],
    scores: Option<&[f32]>,
) -> (Vec<Candidate>, TransferStats, usize) {
    let ctx = Context::gpu(gpu);
    let tensor = |o: &OutputInfo, values: &[f32]| {
        let t = ctx
            .create_tensor(
                TensorDescriptor::new(DataType::Float32, o.shape.clone())
                    .writable()
                    .exportable_to_gpu(),
            )
            .unwrap();
        ctx.write_tensor(&t, bytemuck::cast_slice(values)).unwrap();
        t
    };
    let b = tensor(&spec.boxes, boxes);
    let mut decoder = GpuDecoder::new(gpu, spec).unwrap();
    let first_block = decoder.first_block();
    let rb = ctx.export_to_gpu(&b).unwrap();
    let pending = match scores {
        Some(scores) => {
            let s = tensor(&spec.scores, scores);
            let rs = ctx.export_to_gpu(&s).unwrap();
            decoder.submit(spec, (&rb).into(), (&rs).into(), None)
        }
        None => decoder.submit(spec, (&rb).into(), (&rb).into(), None),
    };
    let (words, stats) = pending.unwrap().finish().unwrap();
    let mut found = spec.parse_records(&words);
    found.sort_by_key(|c| c.index);
    (found, stats, first_block)
}

/// GPU and CPU candidates agree: the same boxes, classes and raw scores
/// exactly, corners and keypoints to float rounding.
fn assert_same(gpu: &[Candidate], cpu: &[Candidate], what: &str) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: candidate count");
    for (g, c) in gpu.iter().zip(cpu) {
        assert_eq!((g.index, g.class), (c.index, c.class), "{what}");
        assert_eq!(g.raw.to_bits(), c.raw.to_bits(), "{what}: box {}", c.index);
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-3 + 1e-5 * b.abs();
        let values = |x: &Candidate| {
            let mut v = x.corners.to_vec();
            v.extend(x.keypoints.iter().flatten());
            v
        };
        let (gv, cv) = (values(g), values(c));
        assert_eq!(gv.len(), cv.len(), "{what}");
        assert!(
            gv.iter().zip(&cv).all(|(a, b)| close(*a, *b)),
            "{what}: box {}: {gv:?} vs {cv:?}",
            c.index
        );
    }
}

fn output(name: &str, shape: &[usize]) -> OutputInfo {
    OutputInfo {
        name: name.into(),
        shape: shape.to_vec(),
        data_type: DataType::Float32,
    }
}

fn yolo_spec(layout: &str, normalized: bool, shape: &[usize], threshold: f32) -> Spec {
    let decoder: Decoder = serde_json::from_str(&format!(
        r#"{{"type": "yolo", "layout": "{layout}", "normalized": {normalized}}}"#
    ))
    .unwrap();
    Spec::new(
        Path::new("y.onnx"),
        &decoder,
        &[output("out", shape)],
        (96, 64),
        threshold,
    )
    .unwrap()
}

#[test]
fn gpu_decoding_matches_the_rust_decoders() {
    let gpu = gpu();
    let mut rng = StdRng::seed_from_u64(16);

    // SSD (the face detector's options): about a third of the logits pass
    // 0.5, more than the first read-back holds; some scores are NaN and
    // some beyond the clipping.
    let spec = face_spec();
    let boxes: Vec<f32> = (0..896 * 16)
        .map(|_| rng.random_range(-20.0..20.0))
        .collect();
    let mut scores: Vec<f32> = (0..896).map(|_| rng.random_range(-8.0..4.0)).collect();
    for k in (0..896).step_by(37) {
        scores[k] = f32::NAN;
    }
    scores[5] = 500.0;
    scores[6] = -500.0;
    let cpu = spec.decode(&boxes, &scores);
    let (on_gpu, stats, first_block) = gpu_decode(&gpu, &spec, &boxes, Some(&scores));
    assert!(cpu.len() > first_block, "{} vs {first_block}", cpu.len());
    assert_same(&on_gpu, &cpu, "ssd");
    assert_eq!(stats.downloads, 2, "a second read for the rest: {stats}");
    let record = 4 * spec.record_words() as u64;
    assert_eq!(stats.download_bytes, 16 + cpu.len() as u64 * record);
    assert_eq!(stats.uploads, 2, "parameters and anchors, once");

    // No survivors: one read of the header and the first block.
    let none: Vec<f32> = scores.iter().map(|s| s.min(-1.0)).collect();
    let (on_gpu, stats, first_block) = gpu_decode(&gpu, &spec, &boxes, Some(&none));
    assert!(on_gpu.is_empty() && spec.decode(&boxes, &none).is_empty());
    assert_eq!(stats.downloads, 1);
    assert_eq!(stats.download_bytes, 16 + first_block as u64 * record);
    assert!(stats.download_bytes <= 4096);

    // YOLOv5: 77 boxes (not a multiple of 64), 3 classes, input pixels.
    let spec = yolo_spec("yolov5", false, &[1, 77, 8], 0.25);
    let rows: Vec<f32> = (0..77)
        .flat_map(|_| {
            let mut row = vec![
                rng.random_range(0.0..96.0),
                rng.random_range(0.0..64.0),
                rng.random_range(1.0..30.0),
                rng.random_range(1.0..30.0),
            ];
            row.extend((0..4).map(|_| rng.random_range(0.0f32..1.0)));
            row
        })
        .collect();
    let cpu = spec.decode(&rows, &rows);
    assert!(!cpu.is_empty() && cpu.len() < 77, "{}", cpu.len());
    let (on_gpu, stats, _) = gpu_decode(&gpu, &spec, &rows, None);
    assert_same(&on_gpu, &cpu, "yolov5");
    assert_eq!(stats.downloads, 1);

    // YOLOv8: 100 boxes, 3 classes, normalized, NaN class scores.
    let spec = yolo_spec("yolov8", true, &[1, 7, 100], 0.3);
    let mut cols: Vec<f32> = (0..700).map(|_| rng.random_range(0.0f32..1.0)).collect();
    for k in (400..700).step_by(7) {
        cols[k] = f32::NAN;
    }
    let cpu = spec.decode(&cols, &cols);
    assert!(!cpu.is_empty());
    let (on_gpu, _, _) = gpu_decode(&gpu, &spec, &cols, None);
    assert_same(&on_gpu, &cpu, "yolov8");

    // end2end: 90 rows of 7 (one extra value), normalized; class ids that
    // are fractional, negative, NaN or past 2^24 drop their row.
    let spec = yolo_spec("end2end", true, &[1, 90, 7], 0.4);
    let mut rows: Vec<f32> = (0..90)
        .flat_map(|i| {
            let class = [2.0, 0.0, 1.5, -1.0, f32::NAN, 3e7, 79.0][i % 7];
            let x0 = rng.random_range(0.0f32..0.5);
            [
                x0,
                0.1,
                x0 + 0.3,
                0.6,
                rng.random_range(0.0f32..1.0),
                class,
                9.0,
            ]
        })
        .collect();
    rows[4] = f32::NAN;
    let cpu = spec.decode(&rows, &rows);
    assert!(cpu.len() > 5, "{}", cpu.len());
    assert!(cpu.iter().all(|c| [0, 2, 79].contains(&c.class)), "{cpu:?}");
    let (on_gpu, _, _) = gpu_decode(&gpu, &spec, &rows, None);
    assert_same(&on_gpu, &cpu, "end2end");
    gpu.check().unwrap();
}

#[test]
fn the_gpu_keeps_at_most_max_candidates() {
    let gpu = gpu();
    // Every one of 1500 boxes passes a threshold of 0.
    let spec = yolo_spec("yolov8", false, &[1, 5, 1500], 0.0);
    let mut rng = StdRng::seed_from_u64(7);
    let cols: Vec<f32> = (0..5 * 1500)
        .map(|_| rng.random_range(0.0f32..1.0))
        .collect();
    let cpu = spec.decode(&cols, &cols);
    assert_eq!(cpu.len(), 1500);
    let (on_gpu, stats, _) = gpu_decode(&gpu, &spec, &cols, None);
    assert_eq!(on_gpu.len(), MAX_CANDIDATES);
    let same: Vec<Candidate> = on_gpu
        .iter()
        .map(|g| cpu[g.index as usize].clone())
        .collect();
    assert_same(&on_gpu, &same, "capped");
    assert_eq!(stats.downloads, 2);
    assert_eq!(stats.download_bytes, 16 + 28 * MAX_CANDIDATES as u64);
}

#[test]
fn every_decode_kernel_variant_validates_and_params_match() {
    for s in DecodeSwitches::all() {
        let src = s.source();
        validate(&format!("detect decode {s:?}"), &src);
    }
    assert_same_layout(
        &DecodeSwitches::all()[0].source(),
        "Params",
        size_of::<DecodeParams>(),
        &offsets!(DecodeParams: scale, input_size, threshold, clip, n, classes, row,
            box_offset, keypoint_offset, keypoints, keypoint_stride, xywh, normalized, cap,
            record_words, extras, label_offset, _pad0, _pad1, _pad2),
    );
}

fn face_model() -> Arc<Model> {
    Arc::new(
        models::load(models::bundled(
            "mediapipe/face_detection_short_range.tflite",
        ))
        .unwrap(),
    )
}

fn face_proc() -> ModelProc {
    serde_json::from_str(&format!(
        r#"{{"input": {{"range": [-1, 1], "resize": "letterbox"}},
             "decoder": {FACE_DECODER}, "labels": ["face"], "threshold": 0.5,
             "iou_threshold": 0.3}}"#
    ))
    .unwrap()
}

#[test]
fn the_detector_finds_the_same_face_on_gpu_and_cpu() {
    let gpu = gpu();
    let model = face_model();
    let proc = face_proc();
    let labels = proc.labels().unwrap();
    let make = |device: Device| {
        Detector::new(
            &device,
            model.clone(),
            &proc,
            labels.clone(),
            DetectOptions::default(),
            ColorSpec::default(),
        )
        .unwrap()
    };
    let mut g = make(Device::Gpu(gpu.clone()));
    let mut c = make(Device::Cpu);
    assert!(c.is_cpu() && !g.is_cpu());
    assert_eq!(g.input().size, Some((128, 128)));
    // A non-square frame: letterboxed into the 128x128 input.
    let picture = Picture::astronaut(200, 150);
    let (on_gpu, stats) = g.detect_gpu(&picture.on_gpu(&gpu)).unwrap();
    let on_cpu = c.detect_cpu(&picture.on_cpu()).unwrap();
    assert_eq!(on_gpu.len(), 1, "{on_gpu:?}");
    assert_eq!(on_cpu.len(), 1, "{on_cpu:?}");
    let (a, b) = (&on_gpu[0], &on_cpu[0]);
    assert_eq!((a.label.as_str(), a.label_id), ("face", 0));
    assert!(a.rect.iou(&b.rect) > 0.95, "{a:?} vs {b:?}");
    assert!((a.confidence - b.confidence).abs() < 0.01, "{a:?} vs {b:?}");
    assert!(a.confidence >= 0.5);
    assert_eq!(a.keypoints.len(), 6);
    for (p, q) in a.keypoints.iter().zip(&b.keypoints) {
        assert!(
            (p[0] - q[0]).abs() < 1.0 && (p[1] - q[1]).abs() < 1.0,
            "{p:?} {q:?}"
        );
    }
    // The box lies in the frame.
    let r = a.rect;
    assert!(r.x >= 0.0 && r.y >= 0.0 && r.x + r.w <= 200.0 && r.y + r.h <= 150.0);
    // Only the short list came back: no frame, no tensor.
    assert!(stats.download_bytes <= 4096, "{stats}");
    assert_eq!(stats.downloads, 1);

    // A frame with nothing in it: no detections, on both.
    let flat = Picture::flat(96, 160, 128);
    assert!(g.detect_gpu(&flat.on_gpu(&gpu)).unwrap().0.is_empty());
    assert!(c.detect_cpu(&flat.on_cpu()).unwrap().is_empty());

    let err = g.detect_cpu(&flat.on_cpu()).unwrap_err().to_string();
    assert!(
        err.contains("detector: detect_cpu takes CPU frames"),
        "{err}"
    );
    gpu.check().unwrap();
}

#[test]
fn detector_errors_name_the_cause() {
    let model = face_model();
    let new = |proc: &ModelProc, labels: Labels, options: DetectOptions| {
        Detector::new(
            &Device::Cpu,
            model.clone(),
            proc,
            labels,
            options,
            ColorSpec::default(),
        )
        .unwrap_err()
        .to_string()
    };
    let none = Labels::none();
    let opts = DetectOptions::default();

    // Strides that make another anchor count.
    let proc: ModelProc = serde_json::from_str(&format!(
        r#"{{"decoder": {}}}"#,
        FACE_DECODER.replace("[8, 16, 16, 16]", "[8, 16, 16, 32]")
    ))
    .unwrap();
    let err = new(&proc, none.clone(), opts);
    assert!(
        err.contains(
            "face_detection_short_range.tflite: decoder ssd-anchors: output 'regressors' is \
             [1, 896, 16], expected [1, N, 16] with N = 800 anchors"
        ),
        "{err}"
    );
    let proc: ModelProc = serde_json::from_str(&format!(
        r#"{{"decoder": {}}}"#,
        FACE_DECODER.replace(r#""scores": "classificators""#, r#""scores": "logits""#)
    ))
    .unwrap();
    let err = new(&proc, none.clone(), opts);
    assert!(
        err.contains("the model has no output 'logits' (its outputs: 'regressors' [1, 896, 16]"),
        "{err}"
    );
    let proc: ModelProc = serde_json::from_str(
        r#"{"decoder": {"type": "yolo", "layout": "yolov5", "output": "classificators"}}"#,
    )
    .unwrap();
    let err = new(&proc, none.clone(), opts);
    assert!(
        err.contains(
            "decoder yolo: output 'classificators' is [1, 896, 1], expected [1, N, 5 + C]"
        ),
        "{err}"
    );
    let proc: ModelProc =
        serde_json::from_str(r#"{"decoder": {"type": "classification"}}"#).unwrap();
    assert!(new(&proc, none.clone(), opts).contains("does not detect objects"));
    let err = new(&ModelProc::default(), none.clone(), opts);
    assert!(err.contains("no decoder"), "{err}");

    let proc = face_proc();
    let err = new(
        &proc,
        none.clone(),
        DetectOptions {
            threshold: Some(1.5),
            iou_threshold: None,
            ..DetectOptions::default()
        },
    );
    assert!(
        err.contains("threshold is 1.5; it must be between 0 and 1"),
        "{err}"
    );
}

#[test]
fn a_yolo_layout_on_the_ssd_face_model_is_refused_at_start() {
    let model = face_model();
    let cases = [
        (
            "yolov8",
            "output 'regressors' 1x896x16 read as yolov8 is 16 boxes of 892 classes: fewer boxes \
             than classes",
        ),
        (
            "yolov5",
            "output 'regressors' 1x896x16 read as yolov5 is 896 boxes of 11 classes, and output \
             'classificators' 1x896x1 holds as many",
        ),
    ];
    for (layout, says) in cases {
        let proc: ModelProc = serde_json::from_str(&format!(
            r#"{{"decoder": {{"type": "yolo", "layout": "{layout}"}}}}"#
        ))
        .unwrap();
        let err = Detector::new(
            &Device::Cpu,
            model.clone(),
            &proc,
            Labels::none(),
            DetectOptions::default(),
            ColorSpec::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(says), "{layout}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

/// A YOLO layout reads scores as probabilities: an output whose values run
/// past 1 (raw logits, or another model's output whose shapes happen to
/// fit) is refused with the box and score, not reported as a confidence of
/// 229; scores within [0, 1], float16's rounding included, pass.
#[test]
fn scores_that_are_no_probabilities_are_refused() {
    let spec = yolo_spec("yolov8", false, &[1, 4 + 3, 50], 0.25);
    let mut out = vec![0.0f32; 7 * 50];
    for box_ in 0..50 {
        out[box_] = 20.0;
        out[50 + box_] = 20.0;
        out[100 + box_] = 8.0;
        out[150 + box_] = 8.0;
    }
    out[4 * 50 + 7] = 1.0 + 1.0 / 1024.0;
    out[5 * 50 + 9] = 0.6;
    let fine = spec.decode(&out, &out);
    assert_eq!(fine.len(), 2);
    spec.check_scores(Path::new("y.onnx"), &fine).unwrap();

    out[6 * 50 + 11] = 229.63;
    let logits = spec.decode(&out, &out);
    assert_eq!(logits.len(), 3);
    let err = spec
        .check_scores(Path::new("y.onnx"), &logits)
        .unwrap_err()
        .to_string();
    for says in [
        "y.onnx: decoder yolo: box 11 scores 229.63 for class 2",
        "between 0 and 1",
    ] {
        assert!(err.contains(says), "{says:?} not in {err}");
    }
    assert!(!err.contains('\n'), "{err}");

    // Sigmoid scores (the SSD face model's) are logits by design.
    let face = face_spec();
    let scores = vec![500.0f32; 896];
    let boxes = vec![0.0f32; 896 * 16];
    face.check_scores(Path::new("f.tflite"), &face.decode(&boxes, &scores))
        .unwrap();
}
