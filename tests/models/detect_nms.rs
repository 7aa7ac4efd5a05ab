//! A graph that ends in its own NMS (tests/data/detect/nms: an Ultralytics
//! `nms=True` export with seeded random weights, see its make_models.py)
//! against onnxruntime's output on the letterboxed frame, on both contexts:
//! NonZero, NonMaxSuppression, ScatterND and the shape arithmetic on their
//! counts run in the graph's host stage, on the scores and boxes read back.
//! Also torchvision's SSDlite, whose batched NMS is behind an `If` and whose
//! outputs leave their row count open.

use wgnn::ml::Context;
use wgnn::models::onnx::read_tensor_file;

use crate::common;
use crate::onnx_torch::relative_error;

/// The worst |got - want| over the largest |want|, and the rows the model
/// found (the rest of its 300 are zeros).
fn worst_error(ctx: &Context) -> (f64, usize) {
    let dir = common::root().join("tests/data/detect/nms/yolov8n_nms");
    let model = wgnn::models::load(dir.join("model.onnx")).unwrap();
    let (_, input) = read_tensor_file(dir.join("test_data_set_0/input_0.pb")).unwrap();
    let (_, want) = read_tensor_file(dir.join("test_data_set_0/output_0.pb")).unwrap();
    let name = model.inputs()[0].name.clone();
    let outputs = model.run(ctx, None, &[(name.as_str(), input)]).unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].1.shape, [1, 300, 6]);
    let rows = want.to_f32().chunks(6).filter(|r| r[4] > 0.0).count();
    let rel = relative_error(&outputs[0].1, &want);
    println!("yolov8n_nms: {rows} rows, max relative error {rel:.2e}");
    (rel, rows)
}

#[test]
fn an_nms_export_matches_onnxruntime_on_the_cpu_context() {
    let ctx = Context::cpu();
    let (error, rows) = worst_error(&ctx);
    assert!(rows > 1 && rows < 300, "{rows}");
    assert!(error < 1e-4, "{error}");
    ctx.destroy();
}

#[test]
fn an_nms_export_matches_onnxruntime_on_the_gpu_context() {
    // A device of its own: the shared one counts the transfers of the
    // tests running beside this one.
    let gpu = wgnn::gpu::Gpu::new().expect("a GPU adapter (lavapipe)");
    let before = gpu.transfers();
    let (error, _) = worst_error(&Context::gpu(&gpu));
    assert!(error < 1e-3, "{error}");
    // What came back: the tensors the host stage reads and the output
    // `run` reads, far less than the 64x96 input (73,728 bytes).
    let moved = gpu.transfers().since(&before);
    assert!(moved.download_bytes < 20_000, "{moved:?}");
}

/// The host stage computes one item's results: a batch is refused in one
/// line that says what works.
#[test]
fn an_nms_export_refuses_a_batch() {
    let dir = common::root().join("tests/data/detect/nms/yolov8n_nms");
    let model = wgnn::models::load(dir.join("model.onnx")).unwrap();
    model.check_batch(None, 1).unwrap();
    let text = model.check_batch(None, 2).unwrap_err().to_string();
    assert!(text.contains("use batch-size=1 (not 2)"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}

/// torchvision's SSDlite (tests/data/detect/nms/ssdlite, see make_models.py
/// `ssd`): its transform (Ceil, Resize), per-class thresholds (NonZero,
/// TopK, GatherND), batched NMS behind an `If` and the final TopK run on
/// both contexts. Its outputs `[N, 4]`, `[N]`, `[N]` leave N open: they come
/// back padded with zeros after the N rows onnxruntime wrote. Returns the
/// worst relative error over boxes and scores.
fn ssd_worst_error(ctx: &Context) -> f64 {
    let dir = common::root().join("tests/data/detect/nms/ssdlite");
    let model = wgnn::models::load(dir.join("model.onnx")).unwrap();
    let (_, input) = read_tensor_file(dir.join("test_data_set_0/input_0.pb")).unwrap();
    let outputs = model.run(ctx, None, &[("images", input)]).unwrap();
    let mut worst = 0.0f64;
    let mut compared = 0;
    for (k, (name, got)) in outputs.iter().enumerate() {
        let (_, want) =
            read_tensor_file(dir.join(format!("test_data_set_0/output_{k}.pb"))).unwrap();
        let rows = want.shape[0];
        assert!(rows > 1, "{name}: {rows} rows");
        assert_eq!(got.shape[1..], want.shape[1..], "{name}");
        let (got, want) = (got.to_f32(), want.to_f32());
        let (head, padding) = got.split_at(want.len());
        assert!(
            padding.iter().all(|&v| v == 0.0),
            "{name}: rows after {rows}"
        );
        if name == "labels" {
            assert_eq!(head, want.as_slice(), "{name}");
        } else {
            let scale = want.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
            let diff = head.iter().zip(&want).map(|(a, b)| (a - b).abs() as f64);
            worst = worst.max(diff.fold(0.0, f64::max) / scale);
        }
        compared += 1;
    }
    assert_eq!(compared, 3);
    println!("ssdlite: max relative error {worst:.2e}");
    worst
}

#[test]
fn torchvision_ssdlite_matches_onnxruntime_on_the_cpu_context() {
    let ctx = Context::cpu();
    let error = ssd_worst_error(&ctx);
    assert!(error < 1e-4, "{error}");
    ctx.destroy();
}

#[test]
fn torchvision_ssdlite_matches_onnxruntime_on_the_gpu_context() {
    let error = ssd_worst_error(&Context::gpu(&common::gpu()));
    assert!(error < 1e-3, "{error}");
}
