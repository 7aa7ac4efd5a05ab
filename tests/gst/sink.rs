//! wgnnsink without a display (offscreen=true): the pixels it draws, read
//! back with the `snapshot` action signal, are the frames it was given, in
//! texture and in system memory and in every format its caps offer; drawing
//! downloads nothing; it shares the pipeline's device; it survives state
//! cycles; a missing display is an error on the bus. The window itself is
//! tested under Xvfb in gst_sink_window.rs.

use crate::common::harness::{self, expect_eos, launch, push_rgba_frames, LogCapture};
use crate::common::{self, known_frame, max_rgb_diff};

use gst::prelude::*;

fn init() {
    let _ = common::gpu();
    harness::init();
}

/// Runs to EOS (panicking on an error message) and leaves the pipeline in
/// PLAYING, so that the sink still holds its last picture.
fn run_to_eos(pipeline: &gst::Pipeline) {
    pipeline.set_state(gst::State::Playing).unwrap();
    expect_eos(pipeline, 300, "wgnnsink pipeline");
}

fn snapshot(sink: &gst::Element) -> (u32, u32, Vec<u8>) {
    let sample = sink
        .emit_by_name::<Option<gst::Sample>>("snapshot", &[])
        .expect("a snapshot after a frame was drawn");
    let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
    assert_eq!(info.format(), gst_video::VideoFormat::Rgba);
    let map = sample.buffer().unwrap().map_readable().unwrap();
    assert_eq!(map.len(), (info.width() * info.height() * 4) as usize);
    (info.width(), info.height(), map.to_vec())
}

fn known_frame_through(desc: &str, expect_upload_in_sink: bool) {
    init();
    let (w, h, n) = (64u32, 48u32, 5u64);
    let frame = known_frame(w, h);
    let pipeline = launch(desc);
    push_rgba_frames(&pipeline, &frame, w, h, n);
    run_to_eos(&pipeline);
    let sink = pipeline.by_name("sink").unwrap();
    assert_eq!(sink.property::<u64>("frames"), n);
    assert_eq!(
        sink.property::<u64>("bytes-downloaded"),
        0,
        "drawing must not read anything back"
    );
    let uploaded = sink.property::<u64>("bytes-uploaded");
    if expect_upload_in_sink {
        assert_eq!(uploaded, n * u64::from(w * h * 4), "one upload per frame");
    } else {
        assert_eq!(uploaded, 0, "texture frames are drawn where they are");
    }
    let (sw, sh, pixels) = snapshot(&sink);
    assert_eq!((sw, sh), (w, h));
    let diff = max_rgb_diff(&pixels, &frame);
    assert!(
        diff <= 1,
        "{desc}: snapshot differs from the frame by {diff}"
    );
    assert!(pixels.chunks_exact(4).all(|p| p[3] == 255));
    assert_eq!(
        sink.property::<u64>("bytes-downloaded"),
        u64::from(w * h * 4),
        "the snapshot is the one download"
    );
    pipeline.set_state(gst::State::Null).unwrap();
}

#[test]
fn a_texture_frame_is_drawn_exactly() {
    known_frame_through(
        "appsrc name=src ! wgnnupload ! video/x-raw(memory:WgpuTexture) ! \
         wgnnsink name=sink offscreen=true sync=false",
        false,
    );
}

#[test]
fn a_system_memory_frame_is_uploaded_once_and_drawn_exactly() {
    known_frame_through(
        "appsrc name=src ! video/x-raw ! wgnnsink name=sink offscreen=true sync=false",
        true,
    );
}

/// BT.601 limited-range Y'CbCr to RGB in floating point, rounded: the
/// reference the sink's YUV drawing is held to.
fn bt601_to_rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    let (kr, kb) = (0.299, 0.114);
    let luma = (f64::from(y) - 16.0) / 219.0;
    let cb = (f64::from(u) - 128.0) / 224.0;
    let cr = (f64::from(v) - 128.0) / 224.0;
    let r = luma + 2.0 * (1.0 - kr) * cr;
    let b = luma + 2.0 * (1.0 - kb) * cb;
    let g = (luma - kr * r - kb * b) / (1.0 - kr - kb);
    [r, g, b].map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8)
}

/// The RGB of each pixel of a raw NV12 or I420 frame, its chroma taken from
/// the sample covering the pixel.
fn yuv_reference(info: &gst_video::VideoInfo, data: &[u8]) -> Vec<u8> {
    let (w, h) = (info.width() as usize, info.height() as usize);
    let (off, stride) = (info.offset(), info.stride());
    let at = |plane: usize, x: usize, y: usize| data[off[plane] + y * stride[plane] as usize + x];
    let mut out = Vec::with_capacity(w * h * 4);
    for y in 0..h {
        for x in 0..w {
            let luma = at(0, x, y);
            let (u, v) = match info.format() {
                gst_video::VideoFormat::Nv12 => {
                    (at(1, x / 2 * 2, y / 2), at(1, x / 2 * 2 + 1, y / 2))
                }
                _ => (at(1, x / 2, y / 2), at(2, x / 2, y / 2)),
            };
            out.extend_from_slice(&bt601_to_rgb(luma, u, v));
            out.push(255);
        }
    }
    out
}

/// Every format in the sink's caps, drawn through wgnnupload, against an
/// independent reference of the same frames: videoconvert's RGBA for the RGB
/// formats (exact), floating-point BT.601 for YUV (within rounding).
#[test]
fn every_format_is_drawn_as_its_colours_say() {
    init();
    let formats = ["RGBA", "BGRA", "RGBx", "BGRx", "RGB", "NV12", "I420"];
    for format in formats {
        let yuv = format == "NV12" || format == "I420";
        let reference_branch = if yuv {
            "appsink name=ref sync=false"
        } else {
            "videoconvert ! video/x-raw,format=RGBA ! appsink name=ref sync=false"
        };
        let pipeline = launch(&format!(
            "videotestsrc num-buffers=2 pattern=smpte ! \
             video/x-raw,format={format},width=64,height=48,colorimetry=bt601 ! tee name=t \
             t. ! queue ! {reference_branch} \
             t. ! queue ! wgnnupload ! wgnnsink name=sink offscreen=true sync=false"
        ));
        let appsink = pipeline
            .by_name("ref")
            .unwrap()
            .downcast::<gst_app::AppSink>()
            .unwrap();
        pipeline.set_state(gst::State::Playing).unwrap();
        let mut reference = None;
        while let Ok(sample) = appsink.pull_sample() {
            let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
            let data = sample.buffer().unwrap().map_readable().unwrap().to_vec();
            reference = Some(if yuv {
                yuv_reference(&info, &data)
            } else {
                data
            });
        }
        let reference = reference.expect("the reference branch's frames");
        expect_eos(&pipeline, 120, format);
        let sink = pipeline.by_name("sink").unwrap();
        assert_eq!(sink.property::<u64>("frames"), 2, "{format}");
        let (w, h, pixels) = snapshot(&sink);
        assert_eq!((w, h), (64, 48));
        let tolerance = if yuv { 1 } else { 0 };
        for (i, (got, want)) in pixels
            .chunks_exact(4)
            .zip(reference.chunks_exact(4))
            .enumerate()
        {
            let diff = (0..3).map(|c| got[c].abs_diff(want[c])).max().unwrap();
            assert!(
                diff <= tolerance,
                "{format}: pixel ({},{}) is {:?}, expected {:?}",
                i % 64,
                i / 64,
                &got[..3],
                &want[..3]
            );
        }
        pipeline.set_state(gst::State::Null).unwrap();
    }
}

#[test]
fn the_picture_keeps_its_aspect_ratio() {
    init();
    let (w, h) = (64u32, 48u32);
    let frame = known_frame(w, h);
    let pipeline = launch(
        "appsrc name=src ! wgnnupload ! wgnnsink name=sink offscreen=true sync=false \
         width=64 height=64",
    );
    push_rgba_frames(&pipeline, &frame, w, h, 1);
    run_to_eos(&pipeline);
    let sink = pipeline.by_name("sink").unwrap();
    let (sw, sh, pixels) = snapshot(&sink);
    assert_eq!((sw, sh), (64, 64));
    let row = (w * 4) as usize;
    // 64x48 fits a 64x64 target with 8 black rows above and below.
    let bars = [&pixels[..8 * row], &pixels[56 * row..]];
    for bar in bars {
        assert!(
            bar.chunks_exact(4).all(|p| p[..3] == [0, 0, 0]),
            "the bars are black"
        );
    }
    let diff = max_rgb_diff(&pixels[8 * row..56 * row], &frame);
    assert!(diff <= 1, "the picture between the bars differs by {diff}");
    pipeline.set_state(gst::State::Null).unwrap();
}

fn gpu_id_of(pad: &gst::Pad) -> usize {
    let mut query = gst::query::Context::new(wgnn::gst::device::CONTEXT_TYPE);
    assert!(
        pad.query(&mut query),
        "{} answers the context query",
        pad.name()
    );
    wgnn::gst::device::gpu_from(query.context().unwrap())
        .unwrap()
        .id()
}

#[test]
fn the_sink_shares_the_pipeline_device() {
    init();
    let pipeline = launch(
        "videotestsrc num-buffers=2 ! video/x-raw,width=32,height=24 ! wgnnupload name=up ! \
         wgnnsink name=sink offscreen=true sync=false",
    );
    run_to_eos(&pipeline);
    let up = pipeline.by_name("up").unwrap();
    let sink = pipeline.by_name("sink").unwrap();
    assert_eq!(
        gpu_id_of(&sink.static_pad("sink").unwrap()),
        gpu_id_of(&up.static_pad("src").unwrap()),
        "wgnnupload and wgnnsink use one device"
    );
    pipeline.set_state(gst::State::Null).unwrap();
}

#[test]
fn state_cycles_start_afresh() {
    init();
    let pipeline = launch(
        "videotestsrc num-buffers=3 pattern=red ! video/x-raw,width=32,height=24 ! wgnnupload ! \
         wgnnsink name=sink offscreen=true",
    );
    let sink = pipeline.by_name("sink").unwrap();
    for cycle in 0..4 {
        assert!(
            sink.emit_by_name::<Option<gst::Sample>>("snapshot", &[])
                .is_none(),
            "cycle {cycle}: nothing to snapshot before a frame"
        );
        run_to_eos(&pipeline);
        assert_eq!(sink.property::<u64>("frames"), 3, "cycle {cycle}");
        let (_, _, pixels) = snapshot(&sink);
        assert!(
            pixels
                .chunks_exact(4)
                .all(|p| p[0] >= 253 && p[1] <= 2 && p[2] <= 2),
            "cycle {cycle}: red"
        );
        pipeline.set_state(gst::State::Null).unwrap();
    }
}

#[test]
fn each_frame_logs_one_debug_line() {
    init();
    let pipeline = launch(
        "videotestsrc num-buffers=4 ! video/x-raw,width=32,height=24 ! \
         wgnnsink name=logged_sink offscreen=true sync=false",
    );
    let log = LogCapture::start("wgnn*", gst::DebugLevel::Debug, "wgnnsink", "logged_sink");
    run_to_eos(&pipeline);
    pipeline.set_state(gst::State::Null).unwrap();
    let lines = log.lines_at(gst::DebugLevel::Debug);
    drop(log);
    let frames: Vec<String> = lines
        .iter()
        .filter(|l| l.starts_with("frame "))
        .cloned()
        .collect();
    assert_eq!(frames.len(), 4, "{frames:#?}");
    assert!(
        frames[0].contains("uploaded 3072 bytes, downloaded 0 bytes"),
        "{}",
        frames[0]
    );
}

#[test]
fn no_display_and_no_offscreen_is_an_error_on_the_bus() {
    // Without the display variables, in a child process: the other tests of
    // this binary share its environment, and changing it under their threads
    // is a data race.
    if !common::is_child() {
        common::run_in_child(
            module_path!(),
            "no_display_and_no_offscreen_is_an_error_on_the_bus",
            &[],
            &["DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET"],
        );
        return;
    }
    init();
    let pipeline = launch("videotestsrc num-buffers=2 ! wgnnsink name=sink");
    assert!(pipeline.set_state(gst::State::Playing).is_err());
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(gst::ClockTime::from_seconds(30), &[gst::MessageType::Error])
        .expect("an error message");
    let gst::MessageView::Error(e) = msg.view() else {
        unreachable!()
    };
    let text = e.error().to_string();
    assert!(
        text.contains("no display") && text.contains("offscreen=true"),
        "{text}"
    );
    assert!(e.src().is_some_and(|s| s.name() == "sink"));
    pipeline.set_state(gst::State::Null).unwrap();
}
