//! wgnninfer as a GStreamer user meets it: frames pass through untouched and
//! carry the model's outputs as tensor meta that stays on the GPU until read.

use crate::common;

use crate::common::harness::{buffer, caps, element, init, start_error};

use gst::prelude::*;
use gst_check::Harness;
use wgnn::gst::tensor_meta::outputs_of;

fn model(rel: &str) -> String {
    common::root()
        .join("assets/models")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn selfie_outputs_ride_on_the_untouched_frame_and_match_mediapipe() {
    init();
    let img = common::astronaut();
    let (w, h) = img.dimensions();
    let rgb = img.into_raw();
    let launch = format!(
        "wgnninfer device=gpu name=infer model={}",
        model("selfie/selfie_segmentation.tflite")
    );
    let mut harness = Harness::new_parse(&launch);
    harness.set_src_caps_str(&caps("RGB", w, h));
    let out = harness.push_and_pull(buffer(&rgb, 7)).unwrap();
    assert_eq!(out.pts(), Some(gst::ClockTime::from_mseconds(7)));
    assert!(
        out.map_readable().unwrap().as_slice() == rgb.as_slice(),
        "the frame passes through unchanged"
    );
    let outputs = outputs_of(&out).expect("tensor meta on the buffer");
    assert_eq!(outputs.tensors().len(), 1);
    let (name, tensor) = &outputs.tensors()[0];
    assert_eq!(tensor.shape(), &[1, 256, 256, 1], "output {name}");
    let infer = element(&harness, "infer");
    // The outputs stay on the GPU: nothing has come back yet.
    assert_eq!(infer.property::<u64>("bytes-downloaded"), 0);
    assert_eq!(infer.property::<u64>("bytes-uploaded"), (w * h * 3) as u64);

    let ours = outputs.read_f32(0).unwrap();
    // MediaPipe's 512x512 mask, averaged 2x2 down to the model's 256x256.
    let golden = common::golden_f32("astronaut_mask.f32");
    let at = |x: usize, y: usize| golden[y * 512 + x];
    let reference: Vec<f32> = (0..256 * 256)
        .map(|i| {
            let (x, y) = (i % 256, i / 256);
            (at(2 * x, 2 * y)
                + at(2 * x + 1, 2 * y)
                + at(2 * x, 2 * y + 1)
                + at(2 * x + 1, 2 * y + 1))
                / 4.0
        })
        .collect();
    let (mean, iou) = common::mask_agreement(&ours, &reference);
    eprintln!(
        "wgnninfer selfie output vs MediaPipe (256x256): mean |diff| {mean:.4}, IoU {iou:.4}"
    );
    assert!(mean <= 0.03 && iou >= 0.97, "mean {mean}, IoU {iou}");
}

#[test]
fn texture_frames_keep_everything_on_the_gpu_and_rent_the_outputs() {
    init();
    let (w, h) = (33, 21);
    let launch = format!(
        "wgnnupload ! wgnninfer device=gpu name=infer model={}",
        model("selfie/selfie_segmentation_landscape.tflite")
    );
    let mut harness = Harness::new_parse(&launch);
    harness.set_src_caps_str(&caps("RGBA", w, h));
    let mut held = Vec::new();
    for i in 0..3 {
        let out = harness
            .push_and_pull(buffer(&vec![(i * 60) as u8; (w * h * 4) as usize], i * 33))
            .unwrap();
        assert!(
            wgnn::gst::frame_meta::frame_of(&out).is_some(),
            "the frame stays a texture"
        );
        held.push(out);
    }
    let infer = element(&harness, "infer");
    assert_eq!(infer.property::<u64>("frames"), 3);
    assert_eq!(infer.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(infer.property::<u64>("bytes-downloaded"), 0);
    // Each buffer still held downstream keeps its own outputs.
    let sets: Vec<_> = held.iter().map(|b| outputs_of(b).unwrap()).collect();
    assert!(!std::sync::Arc::ptr_eq(&sets[0], &sets[1]));
    let (_, t) = &sets[2].tensors()[0];
    assert_eq!(t.shape(), &[1, 144, 256, 1]);
    let ctx = sets[2].context();
    let rented = ctx.export_to_gpu(t).expect("outputs can be rented");
    assert!(rented.buffer().size() >= 144 * 256 * 4);
    drop(rented);
}

#[test]
fn a_model_of_any_size_takes_the_frame_size() {
    init();
    let (w, h) = (12, 10);
    let launch = format!(
        "wgnninfer device=gpu name=infer model={}",
        model("esrgan-slim/x2/model.json")
    );
    let mut harness = Harness::new_parse(&launch);
    harness.set_src_caps_str(&caps("RGBx", w, h));
    let out = harness
        .push_and_pull(buffer(&vec![200; (w * h * 4) as usize], 0))
        .unwrap();
    let outputs = outputs_of(&out).unwrap();
    let (_, t) = &outputs.tensors()[0];
    assert_eq!(t.shape(), &[1, 20, 24, 3]);
    let v = outputs.read_f32(0).unwrap();
    // A flat grey frame upscales to (nearly) the same flat grey.
    let mean = v.iter().sum::<f32>() / v.len() as f32;
    assert!((mean - 200.0).abs() < 6.0, "mean {mean}");
}

#[test]
fn missing_or_bad_models_fail_the_state_change_naming_the_cause() {
    init();
    let src = "videotestsrc num-buffers=1 ! video/x-raw,width=16,height=16";
    let cases = [
        (
            format!("{src} ! wgnninfer device=gpu ! fakesink"),
            "no model",
        ),
        (
            format!("{src} ! wgnninfer device=gpu model=/no/such/file.tflite ! fakesink"),
            "/no/such/file.tflite",
        ),
    ];
    for (launch, needle) in cases {
        let text = start_error(&launch);
        assert!(text.contains(needle), "{launch}: {text}");
    }
}
