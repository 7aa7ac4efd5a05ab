//! Ultralytics exports (tests/data/detect/ultralytics, seeded random
//! weights, see its make_models.py) against onnxruntime's outputs on the
//! letterboxed frame, on both contexts: a static YOLOv8 and a dynamic-size
//! YOLO11, built at the size of the recorded input.

use wgnn::ml::Context;
use wgnn::models::onnx::read_tensor_file;

use crate::common;
use crate::onnx_torch::relative_error;

const CASES: [&str; 2] = ["yolov8n_detect", "yolo11n_dynamic"];

/// The worst |got - want| over the largest |want| of each case.
fn worst_errors(ctx: &Context) -> Vec<f64> {
    CASES
        .iter()
        .map(|case| {
            let dir = common::root()
                .join("tests/data/detect/ultralytics")
                .join(case);
            let model = wgnn::models::load(dir.join("model.onnx")).unwrap();
            let (_, input) = read_tensor_file(dir.join("test_data_set_0/input_0.pb")).unwrap();
            let (_, want) = read_tensor_file(dir.join("test_data_set_0/output_0.pb")).unwrap();
            // The dynamic-size export is built at the recorded input's size.
            let dynamic = model.inputs()[0].shape[2..].iter().any(Option::is_none);
            let hw = dynamic.then(|| (input.shape[2], input.shape[3]));
            let name = model.inputs()[0].name.clone();
            let outputs = model.run(ctx, hw, &[(name.as_str(), input)]).unwrap();
            assert_eq!(outputs.len(), 1, "{case}");
            let rel = relative_error(&outputs[0].1, &want);
            println!("{case}: max relative error {rel:.2e}");
            rel
        })
        .collect()
}

#[test]
fn ultralytics_exports_match_onnxruntime_on_the_cpu_context() {
    let ctx = Context::cpu();
    let errors = worst_errors(&ctx);
    assert!(errors.iter().all(|&e| e < 1e-4), "{errors:?}");
    ctx.destroy();
}

#[test]
fn ultralytics_exports_match_onnxruntime_on_the_gpu_context() {
    let errors = worst_errors(&Context::gpu(&common::gpu()));
    assert!(errors.iter().all(|&e| e < 1e-3), "{errors:?}");
}
