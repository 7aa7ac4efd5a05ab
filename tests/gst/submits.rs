//! Queue submissions per frame and stream on the element paths the
//! many-stream bench runs (`wgnn-bench streams`: upload, a batching model
//! element sharing one instance, the overlay or the blur): each submission
//! is serialized on the device's one queue, so with a hundred streams in a
//! process their number per frame bounds the streams (issue 43). Counted on
//! a device of the test's own (`Gpu::submits`), so no other test's traffic
//! is seen.

use std::path::PathBuf;

use crate::common;
use crate::common::harness::{buffer, expect_eos, init, launch};

use gst::prelude::*;
use wgnn::gpu::{Gpu, SubmitStats};

const STREAMS: usize = 2;
/// Rounds counted, after one that builds the graphs and pools.
const ROUNDS: usize = 2;
const SIZE: (u32, u32) = (64, 48);

/// Frame `k` of stream `s`: a gradient that differs per frame.
fn frame(s: usize, k: usize) -> Vec<u8> {
    let (w, h) = SIZE;
    let mut out = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h {
        for x in 0..w {
            let v = (x * 4 + y * 3) as usize + s * 40 + k * 17;
            out.extend([v as u8, (v / 2) as u8, (255 - v % 256) as u8, 255]);
        }
    }
    out
}

struct Stream {
    pipeline: gst::Pipeline,
    src: gst_app::AppSrc,
    sink: gst_app::AppSink,
}

impl Stream {
    fn start(chain: &str, gpu: &Gpu) -> Stream {
        let pipeline = launch(&format!(
            "appsrc name=src format=time ! wgnnupload ! {chain} ! video/x-raw(memory:WgpuTexture) ! \
             appsink name=sink sync=false"
        ));
        pipeline.set_context(&wgnn::gst::device::context_for(gpu));
        let by = |name: &str| pipeline.by_name(name).unwrap();
        let src = by("src").downcast::<gst_app::AppSrc>().unwrap();
        let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, SIZE.0, SIZE.1)
            .fps(gst::Fraction::new(30, 1))
            .build()
            .unwrap();
        src.set_caps(Some(&info.to_caps().unwrap()));
        let sink = by("sink").downcast::<gst_app::AppSink>().unwrap();
        pipeline.set_state(gst::State::Playing).unwrap();
        Stream {
            pipeline,
            src,
            sink,
        }
    }
}

/// Submissions per frame and stream of `chain` (after
/// `wgnnupload`, its model element sharing instance `id` at batch size
/// [`STREAMS`]), over [`ROUNDS`] rounds of one frame per stream.
fn per_frame(chain: &str, id: &str) -> f64 {
    init();
    let gpu = common::own_gpu();
    let id = format!("submits-{id}-{}", std::process::id());
    let chain = chain.replace(
        "BATCH",
        &format!("model-instance-id={id} batch-size={STREAMS} max-batch-latency=1000"),
    );
    let streams: Vec<Stream> = (0..STREAMS).map(|_| Stream::start(&chain, &gpu)).collect();
    let round = |k: usize| {
        for (s, stream) in streams.iter().enumerate() {
            let pts = k as u64 * 33;
            stream.src.push_buffer(buffer(&frame(s, k), pts)).unwrap();
        }
        for stream in &streams {
            let sample = stream
                .sink
                .try_pull_sample(gst::ClockTime::from_seconds(60));
            assert!(sample.is_some(), "{chain}: no frame out in 60 s");
        }
    };
    round(0);
    let before = gpu.submits();
    (1..=ROUNDS).for_each(round);
    let counted: SubmitStats = gpu.submits().since(&before);
    for s in streams {
        s.src.end_of_stream().unwrap();
        expect_eos(&s.pipeline, 60, &chain);
        s.pipeline.set_state(gst::State::Null).unwrap();
    }
    let frames = (STREAMS * ROUNDS) as f64;
    let (subs, scopes) = (
        counted.submissions as f64 / frames,
        counted.error_scopes as f64 / frames,
    );
    eprintln!("{chain}: {subs} submissions and {scopes} error scopes a frame and stream");
    subs
}

/// The most submissions a frame and stream: wgnnupload's, and the batch's
/// one shared by [`STREAMS`] (every frame's tensorize, the model, the copies
/// out and every frame's composite). Before issue 43: 4 at this batch.
const SEGMENT: f64 = 1.0 + 1.0 / STREAMS as f64;
/// wgnnupload's, the batch's (with the decode pass and the copy of its list
/// read back) and wgnnoverlay's. Before issue 43: 6 at this batch.
const DETECT: f64 = 2.0 + 1.0 / STREAMS as f64;

fn bundled(path: &str) -> String {
    wgnn::models::bundled(path).display().to_string()
}

fn yolo() -> PathBuf {
    common::root().join("tests/data/detect/ultralytics/yolov8n_detect/model.onnx")
}

/// Asserts that `chain` submits at most `most` times a frame and stream.
fn assert_at_most(chain: &str, id: &str, most: f64) {
    let subs = per_frame(chain, id);
    assert!(
        subs <= most,
        "{chain}: {subs} submissions a frame, over {most}"
    );
}

#[test]
fn segment_and_blur_submit_with_the_batch_alone() {
    let model = bundled("selfie/selfie_segmentation.tflite");
    let chain = format!("wgnnsegment device=gpu precision=f32 model={model} effect=blur BATCH");
    assert_at_most(&chain, "segment", SEGMENT);
}

#[test]
fn face_detect_submits_with_the_batch_and_the_overlay_once() {
    let model = bundled("mediapipe/face_detection_short_range.tflite");
    let chain = format!("wgnndetect device=gpu precision=f32 model={model} BATCH ! wgnnoverlay");
    assert_at_most(&chain, "face", DETECT);
}

#[test]
fn yolo_detect_submits_with_the_batch_and_the_overlay_once() {
    let model = yolo().display().to_string();
    let chain = format!("wgnndetect device=gpu precision=f32 model={model} BATCH ! wgnnoverlay");
    assert_at_most(&chain, "yolo", DETECT);
}
