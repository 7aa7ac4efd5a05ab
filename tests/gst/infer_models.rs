//! wgnninfer with users' own models: several outputs (MediaPipe's face
//! detector), ONNX NCHW models that take the frame's size, and both devices
//! agreeing on the same frame.

use crate::common;

use crate::common::harness::{buffer, caps, element, init};

use gst::prelude::*;
use gst_check::Harness;
use wgnn::gst::tensor_meta::outputs_of;

fn run(
    launch: &str,
    format: &str,
    w: u32,
    h: u32,
    frame: &[u8],
) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut harness = Harness::new_parse(launch);
    harness.set_src_caps_str(&caps(format, w, h));
    let out = harness.push_and_pull(buffer(frame, 0)).unwrap();
    assert_eq!(
        out.map_readable().unwrap().as_slice(),
        frame,
        "the frame passes through unchanged"
    );
    assert_eq!(element(&harness, "infer").property::<u64>("frames"), 1);
    let outputs = outputs_of(&out).expect("tensor meta on the buffer");
    (0..outputs.tensors().len())
        .map(|i| {
            let (name, t) = &outputs.tensors()[i];
            (
                name.clone(),
                t.shape().to_vec(),
                outputs.read_f32(i).unwrap(),
            )
        })
        .collect()
}

fn max_relative(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-6);
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
        / scale
}

#[test]
fn every_output_of_a_two_output_detector_rides_on_the_frame_on_both_devices() {
    init();
    let img = common::astronaut();
    let (w, h) = img.dimensions();
    let rgb = img.into_raw();
    let model = common::root().join("assets/models/mediapipe/face_detection_short_range.tflite");
    let mut results = Vec::new();
    for device in ["gpu", "cpu"] {
        let launch = format!(
            // float32 on both devices: this compares the GPU's kernels with
            // the CPU reference (tests/gst/precision.rs covers float16).
            "wgnninfer name=infer device={device} precision=f32 model={}",
            model.display()
        );
        let outs = run(&launch, "RGB", w, h, &rgb);
        let shapes: Vec<&[usize]> = outs.iter().map(|(_, s, _)| s.as_slice()).collect();
        assert_eq!(shapes, [&[1, 896, 16][..], &[1, 896, 1][..]], "{device}");
        results.push(outs);
    }
    for ((name, _, gpu), (_, _, cpu)) in results[0].iter().zip(&results[1]) {
        let e = max_relative(gpu, cpu);
        eprintln!("face detector output '{name}': GPU vs CPU max relative {e:.2e}");
        assert!(e <= 1e-3, "output '{name}': {e}");
    }
    // The photo has a face: some anchor's score logit is confident.
    let best = results[1][1].2.iter().fold(f32::MIN, |m, &v| m.max(v));
    assert!(best > 2.0, "best face logit {best}");
}

#[test]
fn an_onnx_model_with_a_symbolic_size_takes_the_frame_size_in_nchw() {
    init();
    let (w, h) = (40, 24);
    let model = common::root().join("tests/data/onnx/torch/dynamic_seg_legacy17/model.onnx");
    let frame: Vec<u8> = (0..w * h * 4).map(|i| (i * 7 % 251) as u8).collect();
    let mut results = Vec::new();
    for device in ["gpu", "cpu"] {
        let launch = format!(
            // float32 on both devices: this compares the GPU's kernels with
            // the CPU reference (tests/gst/precision.rs covers float16).
            "wgnninfer name=infer device={device} precision=f32 model={}",
            model.display()
        );
        let outs = run(&launch, "RGBA", w, h, &frame);
        assert_eq!(outs.len(), 1);
        assert_eq!(outs[0].1, [1, 2, h as usize, w as usize], "{device}");
        // A softmax over the two channels.
        let v = &outs[0].2;
        let plane = (w * h) as usize;
        for i in 0..plane {
            assert!(
                (v[i] + v[plane + i] - 1.0).abs() < 1e-4,
                "{device} pixel {i}"
            );
        }
        results.push(v.clone());
    }
    let e = max_relative(&results[0], &results[1]);
    assert!(e <= 1e-3, "GPU vs CPU {e}");
}
