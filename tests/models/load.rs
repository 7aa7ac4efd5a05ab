//! Every bundled model loads, declares its inputs and outputs, and runs on a
//! small input with the output shape it declares; plus the format sniffing and
//! the UpscalerJS custom layers on a model written here.

use crate::common;

use std::path::{Path, PathBuf};

use wgnn::ml::{Context, DataType};
use wgnn::models::{self, Format};

fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("models-load-{name}"))
}

fn selfie(ctx: &Context, file: &str, hw: (usize, usize)) {
    let model = models::load(common::root().join("assets/models/selfie").join(file)).unwrap();
    assert_eq!(model.format(), Format::Tflite);
    let (i, o) = (&model.inputs()[0], &model.outputs()[0]);
    assert_eq!(i.shape, [Some(1), Some(hw.0), Some(hw.1), Some(3)]);
    assert_eq!(i.data_type, DataType::Float32);
    assert_eq!(o.shape, [Some(1), Some(hw.0), Some(hw.1), Some(1)]);
    // A horizontal ramp, so the output depends on the weights.
    let input: Vec<f32> = (0..hw.0 * hw.1 * 3)
        .map(|k| ((k / 3) % hw.1) as f32 / hw.1 as f32)
        .collect();
    let (shape, out) = common::run_image_model(&model, ctx, None, &input).unwrap();
    assert_eq!(shape, [1, hw.0, hw.1, 1]);
    assert!(
        out.iter().all(|v| (0.0..=1.0).contains(v)),
        "a sigmoid output left [0, 1]"
    );
    let err = model
        .build(ctx, Some((64, 64)))
        .err()
        .expect("a fixed-size model refuses another size")
        .to_string();
    assert!(err.contains(file) && err.contains("fixed size"), "{err}");
}

fn esrgan(ctx: &Context) {
    for scale in [2usize, 3, 4] {
        let path = common::root().join(format!("assets/models/esrgan-slim/x{scale}/model.json"));
        let model = models::load(&path).unwrap();
        assert_eq!(model.format(), Format::TfjsLayers);
        assert_eq!(model.inputs()[0].shape, [None, None, None, Some(3)]);
        assert_eq!(model.inputs()[0].range, Some([0.0, 255.0]));
        assert_eq!(model.outputs()[0].shape, [None, None, None, Some(3)]);
        let (h, w) = (6, 10);
        let input: Vec<f32> = (0..h * w * 3).map(|k| (k * 37 % 256) as f32).collect();
        let (shape, out) = common::run_image_model(&model, ctx, Some((h, w)), &input).unwrap();
        assert_eq!(shape, [1, h * scale, w * scale, 3], "x{scale}");
        assert!(out.iter().all(|v| v.is_finite()));
        // A second size gets a graph of its own.
        let g = model.build(ctx, Some((4, 4))).unwrap();
        assert_eq!(g.outputs()[0].1.shape, [1, 4 * scale, 4 * scale, 3]);
        let err = model
            .build(ctx, None)
            .err()
            .expect("a free-size model needs a size")
            .to_string();
        assert!(err.contains("input size"), "{err}");
    }
}

#[test]
fn selfie_models_run_cpu() {
    let ctx = Context::cpu();
    selfie(&ctx, "selfie_segmentation_landscape.tflite", (144, 256));
}

#[test]
fn selfie_models_run_gpu() {
    let ctx = Context::gpu(&common::gpu());
    selfie(&ctx, "selfie_segmentation.tflite", (256, 256));
    selfie(&ctx, "selfie_segmentation_landscape.tflite", (144, 256));
}

#[test]
fn esrgan_models_run_cpu() {
    esrgan(&Context::cpu());
}

#[test]
fn esrgan_models_run_gpu() {
    esrgan(&Context::gpu(&common::gpu()));
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
}

#[test]
fn format_is_recognised_from_contents() {
    let dir = scratch("sniff");
    let selfie = common::root().join("assets/models/selfie/selfie_segmentation.tflite");
    copy(&selfie, &dir.join("model.json"));
    assert_eq!(
        models::load(dir.join("model.json")).unwrap().format(),
        Format::Tflite
    );
    let x2 = common::root().join("assets/models/esrgan-slim/x2");
    copy(&x2.join("model.json"), &dir.join("topology.tflite"));
    copy(
        &x2.join("group1-shard1of1.bin"),
        &dir.join("group1-shard1of1.bin"),
    );
    assert_eq!(
        models::load(dir.join("topology.tflite")).unwrap().format(),
        Format::TfjsLayers
    );
    std::fs::write(dir.join("noise.tflite"), [7u8; 64]).unwrap();
    let err = models::load(dir.join("noise.tflite"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("noise.tflite") && err.contains("neither"),
        "{err}"
    );
}

/// MultiplyBeta and PixelShuffle as UpscalerJS's models configure them.
#[test]
fn upscalerjs_custom_layers() {
    let dir = scratch("custom");
    let json = r#"{
      "format": "layers-model",
      "modelTopology": {"model_config": {"class_name": "Functional", "config": {
        "name": "m",
        "layers": [
          {"class_name": "InputLayer", "name": "in", "inbound_nodes": [],
           "config": {"batch_input_shape": [null, null, null, 8], "name": "in"}},
          {"class_name": "MultiplyBeta", "name": "beta", "inbound_nodes": [[["in", 0, 0, {}]]],
           "config": {"name": "beta"}},
          {"class_name": "PixelShuffle", "name": "ps", "inbound_nodes": [[["beta", 0, 0, {}]]],
           "config": {"name": "ps", "scale": 2}}
        ],
        "input_layers": [["in", 0, 0]], "output_layers": [["ps", 0, 0]]}}},
      "weightsManifest": []
    }"#;
    std::fs::write(dir.join("model.json"), json).unwrap();
    let model = models::load(dir.join("model.json")).unwrap();
    let (h, w, c, r) = (3, 2, 8, 2);
    let input: Vec<f32> = (0..h * w * c).map(|k| k as f32).collect();
    let (shape, out) =
        common::run_image_model(&model, &Context::cpu(), Some((h, w)), &input).unwrap();
    let oc = c / (r * r);
    assert_eq!(shape, [1, h * r, w * r, oc]);
    for y in 0..h * r {
        for x in 0..w * r {
            for ch in 0..oc {
                let (i, j) = (y % r, x % r);
                let src = ((y / r) * w + x / r) * c + (i * r + j) * oc + ch;
                let got = out[(y * w * r + x) * oc + ch];
                assert_eq!(got, input[src] * 0.2, "at ({y}, {x}, {ch})");
            }
        }
    }
}
