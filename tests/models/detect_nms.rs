//! A graph that ends in its own NMS (tests/data/detect/nms: an Ultralytics
//! `nms=True` export with seeded random weights, see its make_models.py)
//! against onnxruntime's output on the letterboxed frame, on both contexts:
//! NonZero, NonMaxSuppression, ScatterND and the shape arithmetic on their
//! counts run in the graph's host stage, on the scores and boxes read back.

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
