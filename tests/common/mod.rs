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
