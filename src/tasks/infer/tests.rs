use std::sync::Arc;

use crate::models::{self, Model};
use crate::tasks::image_input::tests::eight_channel_model;
use crate::tasks::tests::{gpu, Picture};
use crate::tasks::{Device, ImageInference, InferOptions};
use crate::video::{ChannelOrder, Normalize, Resize};

fn model(rel: &str) -> Arc<Model> {
    Arc::new(models::load(models::bundled(rel)).unwrap())
}

/// Largest and mean absolute difference of two value lists of one length.
fn max_mean(a: &[f32], b: &[f32]) -> (f32, f32) {
    assert_eq!(a.len(), b.len());
    let d: Vec<f32> = a.iter().zip(b).map(|(x, y)| (x - y).abs()).collect();
    (
        d.iter().copied().fold(0.0, f32::max),
        d.iter().sum::<f32>() / d.len() as f32,
    )
}

#[test]
fn gpu_and_cpu_give_the_same_outputs() {
    let gpu = gpu();
    let picture = Picture::astronaut(40, 30);
    // A model of a declared size (the frame is stretched to it) and one
    // that takes the frame's size.
    let cases = [
        (
            "selfie/selfie_segmentation.tflite",
            vec![1, 256, 256, 1],
            0.01,
        ),
        ("esrgan-slim/x2/model.json", vec![1, 60, 80, 3], 1.0),
    ];
    for (rel, shape, tolerance) in cases {
        let m = model(rel);
        let options = InferOptions::default();
        let mut g = ImageInference::new(&Device::Gpu(gpu.clone()), m.clone(), options).unwrap();
        let mut c = ImageInference::new(&Device::Cpu, m, options).unwrap();
        let on_gpu = g.run_gpu(&picture.on_gpu(&gpu)).unwrap();
        let on_cpu = c.run_cpu(&picture.on_cpu()).unwrap();
        assert!(on_gpu.context().is_gpu() && !on_cpu.context().is_gpu());
        assert_eq!(on_gpu.tensors()[0].1.shape(), shape, "{rel}");
        assert_eq!(on_cpu.tensors()[0].1.shape(), shape, "{rel}");
        let (max, mean) = max_mean(&on_gpu.read_f32(0).unwrap(), &on_cpu.read_f32(0).unwrap());
        assert!(
            max <= tolerance && mean <= tolerance / 10.0,
            "{rel}: max {max}, mean {mean}"
        );
    }
    gpu.check().unwrap();
}

#[test]
fn output_sets_are_reused_once_nobody_holds_them() {
    let gpu = gpu();
    let picture = Picture::flat(16, 12, 90);
    let m = model("selfie/selfie_segmentation.tflite");
    let mut g =
        ImageInference::new(&Device::Gpu(gpu.clone()), m.clone(), Default::default()).unwrap();
    let frame = picture.on_gpu(&gpu);
    let first = g.run_gpu(&frame).unwrap();
    let second = g.run_gpu(&frame).unwrap();
    assert!(!Arc::ptr_eq(&first, &second), "the first is still held");
    let kept = Arc::as_ptr(&first);
    drop(first);
    let third = g.run_gpu(&frame).unwrap();
    assert_eq!(Arc::as_ptr(&third), kept, "the released set comes back");
    // The outputs stay readable after the task is gone.
    drop(g);
    assert_eq!(third.read_f32(0).unwrap().len(), 256 * 256);

    let mut c = ImageInference::new(&Device::Cpu, m, Default::default()).unwrap();
    let a = c.run_cpu(&picture.on_cpu()).unwrap();
    drop(c);
    assert_eq!(a.read_f32(0).unwrap().len(), 256 * 256);
}

#[test]
fn options_shape_the_input_and_bad_models_are_refused() {
    let options = InferOptions {
        range: Some([-1.0, 1.0]),
        resize: Resize::Letterbox { pad: [0; 3] },
        bgr: true,
        ..Default::default()
    };
    let t = ImageInference::new(
        &Device::Cpu,
        model("selfie/selfie_segmentation.tflite"),
        options,
    )
    .unwrap();
    assert_eq!(t.input().normalize(), Normalize::MINUS_ONE_ONE);
    assert_eq!(t.input().channels, ChannelOrder::Bgr);

    let err = ImageInference::new(&Device::Cpu, Arc::new(eight_channel_model()), options)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("not an image model"), "{err}");

    let gpu = gpu();
    let mut g = ImageInference::new(
        &Device::Gpu(gpu.clone()),
        model("esrgan-slim/x2/model.json"),
        options,
    )
    .unwrap();
    let picture = Picture::flat(4, 4, 0);
    let err = g.run_cpu(&picture.on_cpu()).err().unwrap().to_string();
    assert!(err.contains("inference: run_cpu takes CPU frames"), "{err}");
}
