//! Every processing element through many NULL -> PLAYING -> NULL cycles,
//! and through a lost device.
//!
//! **Cycles**: one pipeline per element (tiny 16x16 frames, tiny models where
//! the element takes any), its state cycled; every cycle plays a few frames
//! to EOS. The pipeline carries one device of the test's own (through the
//! context every wgnn element looks for), so its live-object counts
//! (`Gpu::live`) see exactly this pipeline. After the first cycle the
//! device keeps only its compiled pipelines (the per-device kernel cache,
//! which is meant to outlive the elements); after the last one the counts
//! are the same, the cache has not grown, and the process's resident memory
//! has grown less than a bound.
//!
//! **Lost device**: each element plays until frames flow, the device is
//! destroyed under it (as a driver reset would lose it), and the element must
//! post a bus error naming the loss; the pipeline then stops. No panic, no
//! abort, no hang.

use std::time::{Duration, Instant};

use gst::prelude::*;

use crate::common;
use crate::common::harness::{init, launch};

/// Cycles per element: 1000 as issue 18 asks; `WGNN_SOAK_CYCLES` sets
/// fewer (while working on an element) or more.
fn cycles() -> usize {
    std::env::var("WGNN_SOAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// Frames per cycle.
const FRAMES: u32 = 3;

/// Resident memory may grow this much between the end of the warm-up and
/// the last cycle. Other tests of this binary run alongside and allocate
/// too, so the bound is loose; a leak of one 16x16 frame per cycle is not
/// what it catches (the live counts do), a leak of anything per cycle that
/// the counts do not see (a model, a device) is: one selfie-sized model per
/// cycle would be 250 MB over 1000 cycles.
const RSS_BOUND: u64 = 96 << 20;

/// `name`'s minimal instance from the element table, on the GPU where it
/// has a device choice. Its frames start in system memory, so that the
/// element under test is the first that touches the GPU.
fn fragment(name: &str) -> String {
    let spec = spec(name);
    spec.minimal_launch(&common::root())
        .split(" ! ")
        .map(|part| {
            if part.split_whitespace().next() == Some(name) && spec.has_property("device") {
                format!("{part} device=gpu")
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ! ")
}

fn spec(name: &str) -> &'static wgnn::gst::elements::ElementSpec {
    wgnn::gst::elements::spec(name).unwrap_or_else(|| panic!("{name} is no wgnn element"))
}

/// `videotestsrc ! name's fragment ! sink`, where the sink is named `sink`
/// (the element itself where it is one).
fn pipeline(gpu: &wgnn::gpu::Gpu, name: &str, frames: Option<u32>) -> gst::Pipeline {
    let count = frames.map_or(-1, i64::from);
    let sink = if spec(name).is_sink() {
        " name=sink"
    } else {
        " ! fakesink name=sink sync=false"
    };
    let desc = format!(
        "videotestsrc num-buffers={count} ! video/x-raw,format=RGBA,width=16,height=16,\
         framerate=30/1 ! {}{sink}",
        fragment(name)
    );
    let pipeline = launch(&desc);
    pipeline.set_context(&wgnn::gst::device::context_for(gpu));
    pipeline
}

/// The error message's text and its debug details, on one line.
fn error_text(e: &gst::message::Error) -> String {
    format!("{} ({})", e.error(), e.debug().unwrap_or_default())
}

/// Sets `state`, failing with the error the pipeline posted if it cannot.
fn set_state(pipeline: &gst::Pipeline, state: gst::State, what: &str) {
    if pipeline.set_state(state).is_ok() {
        return;
    }
    let posted = pipeline
        .bus()
        .unwrap()
        .pop_filtered(&[gst::MessageType::Error])
        .map(|m| match m.view() {
            gst::MessageView::Error(e) => error_text(e),
            _ => unreachable!(),
        });
    panic!("{what}: {state:?} failed: {posted:?}");
}

/// Plays `pipeline` to EOS and stops it; fails on an error message.
fn cycle(pipeline: &gst::Pipeline, what: &str) {
    set_state(pipeline, gst::State::Playing, what);
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(60),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .unwrap_or_else(|| panic!("{what}: no EOS in 60 s"));
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{what}: {}", error_text(e));
    }
    set_state(pipeline, gst::State::Null, what);
}

/// Resident set size of this process in bytes (VmRSS of /proc/self/status).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// `cycles()` cycles of the element `name`.
fn soak(name: &str) {
    init();
    let gpu = common::own_gpu();
    let pipeline = pipeline(&gpu, name, Some(FRAMES));
    let n = cycles();
    let began = Instant::now();
    cycle(&pipeline, &format!("{name}, cycle 1"));
    let warm = gpu.live();
    let cached = gpu.pipelines_cached();
    assert!(
        gpu.transfers().uploads > 0,
        "{name}: the element did not use the shared device"
    );
    // What outlives the elements: the kernel cache, nothing else.
    assert_eq!(
        warm,
        wgnn::gpu::live::Counts {
            compute_pipelines: cached as i64,
            ..Default::default()
        },
        "{name}: after cycle 1, the device holds more than its kernel cache"
    );
    // A few more cycles before measuring memory: allocators settle.
    let settle = 10.min(n);
    for i in 1..settle {
        cycle(&pipeline, &format!("{name}, cycle {}", i + 1));
    }
    let rss_warm = rss();
    for i in settle..n {
        cycle(&pipeline, &format!("{name}, cycle {}", i + 1));
        if (i + 1) % 100 == 0 {
            assert_eq!(
                gpu.live(),
                warm,
                "{name}: live objects after cycle {}",
                i + 1
            );
        }
    }
    let rss_end = rss();
    let took = began.elapsed();
    eprintln!(
        "{name}: {n} cycles of {FRAMES} frames in {:.1} s ({:.1} ms a cycle); live after \
         cycle 1 and {n}: {warm} / {}; {cached} kernels cached; RSS {} -> {} MiB",
        took.as_secs_f64(),
        took.as_secs_f64() * 1000.0 / n as f64,
        gpu.live(),
        rss_warm >> 20,
        rss_end >> 20
    );
    assert_eq!(gpu.live(), warm, "{name}: live objects after {n} cycles");
    assert_eq!(
        gpu.pipelines_cached(),
        cached,
        "{name}: the kernel cache grew"
    );
    // lavapipe itself grows the heap on every submission (heaptrack: the
    // growth is allocated on lavapipe's queue thread, inside
    // libvulkan_lvp.so, Mesa 22.3; wgnn's live counts and wgpu's allocator
    // stay flat meanwhile), so on a software adapter the bound would measure
    // the driver; it is checked on hardware ones and printed everywhere.
    if !gpu.is_software() {
        assert!(
            rss_end < rss_warm + RSS_BOUND,
            "{name}: RSS grew from {} to {} MiB over {n} cycles",
            rss_warm >> 20,
            rss_end >> 20
        );
    }
    drop(pipeline);
    gpu.clear_pipeline_cache();
    assert_eq!(
        gpu.live(),
        Default::default(),
        "{name}: after the cache is emptied"
    );
}

#[test]
fn upload_download_cycles_leave_nothing_behind() {
    soak("wgnnupload");
}

#[test]
fn segment_cycles_leave_nothing_behind() {
    soak("wgnnsegment");
}

#[test]
fn superres_cycles_leave_nothing_behind() {
    // A tiny 2x model (tests/data/soak/tiny_sr.onnx): a cycle of ESRGAN-slim
    // (import, lowering, weights) costs seconds on lavapipe, which would
    // measure the network, not the element's start and stop.
    soak("wgnnsuperres");
}

#[test]
fn infer_cycles_leave_nothing_behind() {
    soak("wgnninfer");
}

#[test]
fn detect_cycles_leave_nothing_behind() {
    soak("wgnndetect");
}

#[test]
fn classify_cycles_leave_nothing_behind() {
    soak("wgnnclassify");
}

#[test]
fn track_cycles_leave_nothing_behind() {
    soak("wgnntrack");
}

#[test]
fn analytics_cycles_leave_nothing_behind() {
    soak("wgnnanalytics");
}

#[test]
fn publish_cycles_leave_nothing_behind() {
    soak("wgnnpublish");
}

#[test]
fn overlay_cycles_leave_nothing_behind() {
    soak("wgnnoverlay");
}

#[test]
fn sink_cycles_leave_nothing_behind() {
    soak("wgnnsink");
}

/// Plays `element` until frames reach the sink, destroys the device, and
/// returns the error the pipeline posts (source element and message).
fn lose_device_under(name: &str) -> (String, String) {
    let gpu = common::own_gpu();
    let pipeline = pipeline(&gpu, name, None);
    let sink = pipeline.by_name("sink").unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
    sink.static_pad("sink")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            let _ = tx.try_send(());
            gst::PadProbeReturn::Ok
        });
    set_state(&pipeline, gst::State::Playing, name);
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{name}: no frame in 60 s"));
    gpu.destroy();
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(60),
            &[gst::MessageType::Error, gst::MessageType::Eos],
        )
        .unwrap_or_else(|| panic!("{name}: no error in 60 s after the device was lost"));
    let gst::MessageView::Error(e) = msg.view() else {
        panic!("{name}: EOS, not an error, after the device was lost");
    };
    let source = msg.src().map(|s| s.name().to_string()).unwrap_or_default();
    // The element's own words: the message, or, where the message is
    // GStreamer's generic one (see `gst::element::fail`), the last line of
    // the debug details (GStreamer's source location comes before it).
    let debug = e.debug().unwrap_or_default();
    let text = match debug.rsplit_once('\n') {
        Some((_, cause)) => cause.to_string(),
        None => e.error().to_string(),
    };
    // Stopping must not hang or panic on the dead device either.
    pipeline.set_state(gst::State::Null).unwrap();
    (source, text)
}

#[test]
fn a_lost_device_is_a_bus_error_naming_the_loss_in_every_element() {
    init();
    let mut failures = Vec::new();
    let mut ran = 0;
    for spec in wgnn::gst::elements::ELEMENTS {
        let name = spec.name;
        let (source, text) = lose_device_under(name);
        ran += 1;
        eprintln!("{name}: {source}: {text}");
        // The element or one its fragment needs beside it (wgnnupload's
        // frames are lost in wgnndownload as well).
        let fragment = fragment(name);
        let from_element = fragment
            .split(" ! ")
            .filter_map(|part| part.split_whitespace().next())
            .any(|factory| source.starts_with(factory))
            || (spec.is_sink() && source == "sink");
        if !text.contains("the GPU device was lost") || !from_element {
            failures.push(format!("{name}: {source} posted '{text}'"));
        }
        if !text.contains("the GPU device was lost: destroyed") || text.contains(".rs") {
            failures.push(format!("{name}: the cause is not one clean line: '{text}'"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(ran, wgnn::gst::elements::ELEMENTS.len());
}

/// The error a pipeline posts for one oversized frame, as the element's
/// own line (see `lose_device_under`).
fn oversized_error(element: &str, width: u32) -> String {
    let pipeline = launch(&format!(
        "videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width={width},height=16 ! \
         {element} ! fakesink"
    ));
    pipeline.set_context(&wgnn::gst::device::context_for(&common::gpu()));
    let _ = pipeline.set_state(gst::State::Playing);
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(60),
            &[gst::MessageType::Error, gst::MessageType::Eos],
        )
        .unwrap_or_else(|| panic!("{element}: nothing on the bus in 60 s"));
    pipeline.set_state(gst::State::Null).unwrap();
    let gst::MessageView::Error(e) = msg.view() else {
        panic!("{element}: a {width}x16 frame went through");
    };
    let debug = e.debug().unwrap_or_default();
    match debug.rsplit_once('\n') {
        Some((_, cause)) => cause.to_string(),
        None => e.error().to_string(),
    }
}

#[test]
fn a_frame_wider_than_the_device_allows_is_an_error_naming_size_and_limit() {
    init();
    let max = common::gpu().limits().max_texture_dimension_2d;
    let width = 20000.max(max + 1);
    for element in [fragment("wgnnupload"), fragment("wgnnsegment")] {
        let cause = oversized_error(&element, width);
        eprintln!("{element}: {cause}");
        assert!(
            cause.contains(&format!("{width}x16")) && cause.contains(&max.to_string()),
            "{element}: {cause}"
        );
        assert!(!cause.contains(".rs"), "{element}: {cause}");
    }
}
