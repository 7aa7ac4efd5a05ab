//! The loaded models against other implementations' outputs (tests/data/golden,
//! see its README): ESRGAN-slim x2 against TF.js, selfie segmentation against
//! MediaPipe. Each runs on the CPU context and on the GPU context.

use crate::common;

use wgnn::ml::{
    Context, CoordinateTransform, GraphBuilder, InterpolationMode, OperandDescriptor,
    Resample2dOptions,
};

fn esrgan_x2(ctx: &Context) {
    let model =
        wgnn::models::load(common::root().join("assets/models/esrgan-slim/x2/model.json")).unwrap();
    let input = common::golden_f32("sr_astronaut_64x64.f32");
    let expected = common::golden_f32("sr_astronaut_64x64_x2.f32");
    let (shape, out) = common::run_image_model(&model, ctx, Some((64, 64)), &input).unwrap();
    assert_eq!(shape, [1, 128, 128, 3]);
    let max = out
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    eprintln!("esrgan x2 max |diff| = {max}");
    assert!(max <= 0.05, "max |diff| {max} > 0.05");
}

#[test]
fn esrgan_x2_matches_tfjs_cpu() {
    esrgan_x2(&Context::cpu());
}

#[test]
fn esrgan_x2_matches_tfjs_gpu() {
    esrgan_x2(&Context::gpu(&common::gpu()));
}

/// Bilinear (half-pixel, as MediaPipe's image-to-tensor and mask resizes)
/// resize of an NHWC image with a wgnn graph, so both contexts run it.
fn resize(ctx: &Context, data: &[f32], hwc: [usize; 3], to: [usize; 2]) -> Vec<f32> {
    let b = GraphBuilder::new(ctx);
    let x = b
        .input("x", OperandDescriptor::f32([1, hwc[0], hwc[1], hwc[2]]))
        .unwrap();
    let y = b
        .resample2d(
            &x,
            Resample2dOptions {
                mode: InterpolationMode::Linear,
                sizes: Some(to),
                axes: [1, 2],
                coordinate_transform: CoordinateTransform::HalfPixel,
                ..Default::default()
            },
        )
        .unwrap();
    let graph = b.build(&[("y", &y)]).unwrap();
    let xt = ctx
        .create_tensor(
            wgnn::ml::TensorDescriptor::new(wgnn::ml::DataType::Float32, x.shape()).writable(),
        )
        .unwrap();
    let yt = ctx
        .create_tensor(
            wgnn::ml::TensorDescriptor::new(wgnn::ml::DataType::Float32, y.shape()).readable(),
        )
        .unwrap();
    ctx.write_tensor(&xt, bytemuck::cast_slice(data)).unwrap();
    ctx.dispatch(&graph, &[("x", &xt)], &[("y", &yt)]).unwrap();
    ctx.read_f32(&yt).unwrap()
}

fn selfie_astronaut(ctx: &Context) {
    let img = common::astronaut();
    let (w, h) = (img.width() as usize, img.height() as usize);
    let rgb: Vec<f32> = img.as_raw().iter().map(|&v| v as f32 / 255.0).collect();
    let expected = common::golden_f32("astronaut_mask.f32");
    assert_eq!(expected.len(), w * h);

    let model =
        wgnn::models::load(common::root().join("assets/models/selfie/selfie_segmentation.tflite"))
            .unwrap();
    assert_eq!(model.inputs()[0].range, Some([0.0, 1.0]));
    let small = resize(ctx, &rgb, [h, w, 3], [256, 256]);
    let (shape, mask) = common::run_image_model(&model, ctx, None, &small).unwrap();
    assert_eq!(shape, [1, 256, 256, 1]);
    let mask = resize(ctx, &mask, [256, 256, 1], [h, w]);

    let (mean, iou) = common::mask_agreement(&mask, &expected);
    eprintln!("selfie mean |diff| = {mean:.5}, IoU = {iou:.5}");
    assert!(mean <= 0.03, "mean |diff| {mean} > 0.03");
    assert!(iou >= 0.97, "IoU {iou} < 0.97");
}

#[test]
fn selfie_astronaut_matches_mediapipe_cpu() {
    selfie_astronaut(&Context::cpu());
}

#[test]
fn selfie_astronaut_matches_mediapipe_gpu() {
    selfie_astronaut(&Context::gpu(&common::gpu()));
}
