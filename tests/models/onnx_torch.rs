//! Real exports: small PyTorch networks through both of PyTorch's ONNX
//! exporters (tests/data/onnx/torch, with its README), run on the CPU and GPU
//! contexts against onnxruntime's outputs; and hand-written graphs for the
//! rewrites the exporters do themselves (tests/data/onnx/handmade).

use std::path::{Path, PathBuf};

use wgnn::ml::{Context, HostTensor};
use wgnn::models::onnx::read_tensor_file;

use crate::common;

/// Largest |got - want| relative to the reference tensor's largest
/// magnitude: networks' outputs span orders of magnitude, and an element
/// near zero says little about the error of the sum that made it.
pub(crate) fn relative_error(got: &HostTensor, want: &HostTensor) -> f64 {
    assert_eq!(got.shape, want.shape, "output shape");
    let (g, w) = (got.to_f32(), want.to_f32());
    let scale = w.iter().fold(0f64, |m, &v| m.max(f64::from(v).abs()));
    let worst = g
        .iter()
        .zip(&w)
        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs())
        .fold(
            0f64,
            |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
        );
    if scale == 0.0 {
        worst
    } else {
        worst / scale
    }
}

/// The PyTorch exports, then the hand-written graphs (tests/data/onnx/handmade).
fn cases() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for (folder, at_least) in [("torch", 15), ("handmade", 2)] {
        let dir = common::root().join("tests/data/onnx").join(folder);
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("model.onnx").is_file())
            .collect();
        cases.sort();
        assert!(
            cases.len() >= at_least,
            "expected {at_least} cases in {dir:?}"
        );
        all.extend(cases);
    }
    all
}

fn numbered(dir: &Path, prefix: &str) -> Vec<(String, HostTensor)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| read_tensor_file(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect()
}

/// Runs one export on `ctx`: its worst relative error over every output.
fn run_case(ctx: &Context, case: &Path) -> wgnn::Result<f64> {
    let model = wgnn::models::load(case.join("model.onnx"))?;
    let data = case.join("test_data_set_0");
    let inputs = numbered(&data, "input_");
    let wants = numbered(&data, "output_");
    // A model with a symbolic height and width is built at the size of the
    // recorded input; the others at the size they declare.
    let info = &model.inputs()[0];
    let hw = (info.shape.len() == 4 && info.shape[2..].iter().any(Option::is_none))
        .then(|| (inputs[0].1.shape[2], inputs[0].1.shape[3]));
    let named: Vec<(&str, HostTensor)> = model
        .inputs()
        .iter()
        .zip(&inputs)
        .map(|(i, (_, v))| (i.name.as_str(), v.clone()))
        .collect();
    let outputs = model.run(ctx, hw, &named)?;
    assert_eq!(
        outputs.len(),
        wants.len(),
        "{}: number of outputs",
        case.display()
    );
    Ok(outputs
        .iter()
        .zip(&wants)
        .map(|((_, got), (_, want))| relative_error(got, want))
        .fold(0f64, f64::max))
}

/// Runs every export on `ctx` and returns (case, worst relative error).
fn run_all(ctx: &Context, bound: f64) -> Vec<(String, f64)> {
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        match run_case(ctx, &case) {
            Ok(worst) => {
                println!("{name}: max relative error {worst:.2e}");
                if worst > bound {
                    failures.push(format!("{name}: {worst:.2e} > {bound:.0e}"));
                }
                report.push((name, worst));
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    report
}

#[test]
fn pytorch_exports_match_onnxruntime_on_the_cpu_context() {
    let ctx = Context::cpu();
    run_all(&ctx, 1e-4);
    ctx.destroy();
}

#[test]
fn pytorch_exports_match_onnxruntime_on_the_gpu_context() {
    run_all(&Context::gpu(&common::gpu()), 1e-3);
}
