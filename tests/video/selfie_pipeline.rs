//! A whole selfie pass on the GPU, the way the elements run it: upload the
//! frame once, tensorize it straight into the model's input tensor, run the
//! real MediaPipe model, composite the mask over the frame. The transfer
//! counters show exactly one upload (the frame) and no download until the
//! test asks for the result, and the result agrees with MediaPipe's own mask.

use crate::common;

use wgnn::ml::{Context, DataType, TensorDescriptor};
use wgnn::video::*;

#[test]
fn selfie_pass_uploads_once_and_downloads_nothing_until_asked() {
    let golden = common::golden_f32("astronaut_mask.f32");
    let gpu = common::own_gpu();
    let ctx = Context::gpu(&gpu);
    let model =
        wgnn::models::load(common::root().join("assets/models/selfie/selfie_segmentation.tflite"))
            .unwrap();
    let graph = model.build(&ctx, None).unwrap();
    let (in_name, in_desc) = graph.inputs().remove(0);
    let (out_name, out_desc) = graph.outputs().remove(0);
    assert_eq!(in_desc.shape, [1, 256, 256, 3]);
    assert_eq!(out_desc.shape, [1, 256, 256, 1]);
    let input = ctx
        .create_tensor(
            TensorDescriptor::new(DataType::Float32, in_desc.shape.clone()).exportable_to_gpu(),
        )
        .unwrap();
    let mask = ctx
        .create_tensor(
            TensorDescriptor::new(DataType::Float32, out_desc.shape.clone()).exportable_to_gpu(),
        )
        .unwrap();
    let tensorizer = Tensorizer::new(&gpu, TensorizeOptions::new(256, 256)).unwrap();
    let mut compositor = Compositor::new(
        &gpu,
        CompositeOptions {
            mask: MaskOptions::new(256, 256),
            effect: Effect::Mask,
            color: ColorSpec::default(),
        },
    )
    .unwrap();
    let (rgb, w, h) = common::astronaut_rgb();
    let out = create_rgba_texture(&gpu, w, h).unwrap();
    let pool = TexturePool::new();
    gpu.wait_idle().unwrap();

    let before = gpu.transfers();
    let frame = upload_frame(
        &gpu,
        &pool,
        &FrameLayout::packed(VideoFormat::Rgb, w, h),
        &rgb,
    )
    .unwrap();
    {
        let rented = ctx.export_to_gpu(&input).unwrap();
        tensorizer.run(&frame, &rented).unwrap();
    }
    ctx.dispatch(
        &graph,
        &[(in_name.as_str(), &input)],
        &[(out_name.as_str(), &mask)],
    )
    .unwrap();
    {
        let rented = ctx.export_to_gpu(&mask).unwrap();
        compositor.run(&frame, &rented, &out).unwrap();
    }
    gpu.wait_idle().unwrap();
    let moved = gpu.transfers().since(&before);
    assert_eq!(moved.uploads, 1, "{moved}");
    assert_eq!(moved.upload_bytes, (w * h * 3) as u64, "{moved}");
    assert_eq!(moved.downloads, 0, "{moved}");

    let rgba = download_rgba(&gpu, &out).unwrap();
    let moved = gpu.transfers().since(&before);
    assert_eq!(moved.downloads, 1, "{moved}");
    assert_eq!(moved.download_bytes, (w * h * 4) as u64, "{moved}");

    // Effect::Mask draws the person probability as grey.
    let ours: Vec<f32> = rgba.chunks_exact(4).map(|p| p[0] as f32 / 255.0).collect();
    let (mean, iou) = common::mask_agreement(&ours, &golden);
    eprintln!("selfie pass vs MediaPipe: mean |diff| {mean:.4}, IoU {iou:.4}");
    assert!(mean <= 0.03, "mean |diff| {mean}");
    assert!(iou >= 0.97, "IoU {iou}");
}
