//! ONNX's "light" model zoo (tests/data/onnx/light, copied from the onnx
//! wheel by select_backend_cases.py): whole ImageNet architectures with
//! constant-filled weights, so the recorded output holds for any input. They
//! exercise import at scale: BatchNormalization folded into convolutions, LRN,
//! concatenations, Sum, Reshape to the classifier, 224x224 inputs.

use std::path::PathBuf;

use wgnn::ml::{Context, HostTensor};
use wgnn::models::onnx::read_tensor_file;

use crate::common;

fn light(name: &str) -> (PathBuf, HostTensor) {
    let dir = common::root().join("tests/data/onnx/light");
    let (_, want) = read_tensor_file(dir.join(format!("light_{name}_output_0.pb"))).unwrap();
    (dir.join(format!("light_{name}.onnx")), want)
}

/// Runs the model on a zero image and returns its largest error relative to
/// the recorded output's largest magnitude.
fn run(ctx: &Context, name: &str) -> f32 {
    let (path, want) = light(name);
    let model = wgnn::models::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let input = &model.inputs()[0];
    let shape: Vec<usize> = input.shape.iter().map(|d| d.unwrap_or(1)).collect();
    let zeros = HostTensor::f32(shape.clone(), vec![0.0; shape.iter().product()]);
    let out = model
        .run(ctx, None, &[(input.name.as_str(), zeros)])
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (got, want) = (out[0].1.to_f32(), want.to_f32());
    assert_eq!(got.len(), want.len(), "{name}");
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(
            0f32,
            |m, d| if d.is_nan() { f32::INFINITY } else { m.max(d) },
        );
    let e = worst / scale;
    println!("light_{name}: max relative error {e:.2e}");
    e
}

#[test]
fn the_light_model_zoo_matches_on_the_cpu_context() {
    let ctx = Context::cpu();
    for name in [
        "squeezenet",
        "shufflenet",
        "inception_v1",
        "inception_v2",
        "resnet50",
        "densenet121",
    ] {
        assert!(run(&ctx, name) <= 1e-4, "light_{name}");
    }
    ctx.destroy();
}

/// AlexNet, ZFNet-512 and VGG-19 build their fully connected weights with
/// ConstantOfShape at load (VGG-19's first: 102,760,448 elements), past the
/// 2^24 elements that once bounded constants built at load. AlexNet and
/// ZFNet-512 run; VGG-19 (20 GFLOP, too slow here) is imported and shaped.
#[test]
fn the_light_models_that_build_large_constants_load() {
    let ctx = Context::cpu();
    for name in ["bvlc_alexnet", "zfnet512"] {
        assert!(run(&ctx, name) <= 1e-4, "light_{name}");
    }
    ctx.destroy();
    let (path, want) = light("vgg19");
    let model = wgnn::models::load(&path).unwrap_or_else(|e| panic!("vgg19: {e}"));
    assert_eq!(model.output_shapes(None).unwrap(), [want.shape]);
}

/// The smaller architectures on the GPU context (software Vulkan in CI runs
/// the rest too slowly to be worth it: the CPU test covers their import).
#[test]
fn the_light_model_zoo_matches_on_the_gpu_context() {
    let ctx = Context::gpu(&common::gpu());
    for name in ["squeezenet", "shufflenet", "inception_v1"] {
        assert!(run(&ctx, name) <= 1e-3, "light_{name}");
    }
}
