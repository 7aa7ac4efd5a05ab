//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod harness;

use std::sync::OnceLock;

/// The GPU every test uses. Tests that need a GPU fail (never skip) when there
/// is none: CI has lavapipe, so a missing adapter is a broken set-up.
pub fn gpu() -> wgnn::gpu::Gpu {
    static GPU: OnceLock<wgnn::gpu::Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let _ = env_logger::builder().is_test(true).try_init();
        wgnn::gpu::Gpu::new().unwrap_or_else(|e| {
            panic!("this test needs a GPU adapter (install mesa-vulkan-drivers for lavapipe): {e}")
        })
    })
    .clone()
}

/// Path of the repository root (where Cargo.toml is).
pub fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A GPU handle of its own, for tests that assert exact transfer counts and
/// must not see other tests' traffic.
pub fn own_gpu() -> wgnn::gpu::Gpu {
    let _ = gpu();
    wgnn::gpu::Gpu::new().expect("GPU adapter")
}

/// Frames and size of a video file, decoded with GStreamer.
pub fn decode_video(path: &std::path::Path) -> (usize, u32, u32) {
    use gst::prelude::*;
    gst::init().unwrap();
    let pipeline = gst::parse::launch(&format!(
        "filesrc location=\"{}\" ! decodebin ! videoconvert ! video/x-raw,format=RGBA ! appsink name=sink sync=false",
        path.display()
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let sink = pipeline
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let (mut n, mut size) = (0, (0, 0));
    while let Ok(sample) = sink.pull_sample() {
        let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
        size = (info.width(), info.height());
        n += 1;
    }
    pipeline.set_state(gst::State::Null).unwrap();
    (n, size.0, size.1)
}

/// How well a person mask agrees with a reference, both in [0, 1]: the mean
/// absolute difference and the IoU of (mask > 0.5), as the golden README
/// asks for.
pub fn mask_agreement(ours: &[f32], reference: &[f32]) -> (f64, f64) {
    assert_eq!(ours.len(), reference.len(), "masks of different sizes");
    let mut sum = 0.0f64;
    let (mut inter, mut union) = (0usize, 0usize);
    for (&a, &b) in ours.iter().zip(reference) {
        sum += f64::from((a - b).abs());
        inter += usize::from(a > 0.5 && b > 0.5);
        union += usize::from(a > 0.5 || b > 0.5);
    }
    (sum / ours.len() as f64, inter as f64 / union as f64)
}
