//! `frames-in-flight`: a model element holding up to N frames whose GPU
//! work is submitted. Frames come out all, in order, with what N = 1 gives
//! (wgnnsegment's with three in flight: segment.rs's texture test);
//! EOS drains the parked ones; a flush drops them without a deadlock or a
//! leak; elements sharing a batching instance both finish; the latency
//! query grows by N - 1 frames; values outside 1..=16 are refused.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common;
use crate::common::harness::{buffer, caps, element, harness_on_shared_device, init};

use gst::prelude::*;
use gst_check::Harness;
use wgnn::gst::roi;
use wgnn::tasks::FrameResults;

const MODEL_ELEMENTS: [&str; 5] = [
    "wgnnsegment",
    "wgnnsuperres",
    "wgnninfer",
    "wgnndetect",
    "wgnnclassify",
];

/// The tiny YOLOv8n export (64 x 96 input, no model-proc: zero-config).
fn yolo() -> PathBuf {
    common::root().join("tests/data/detect/ultralytics/yolov8n_detect/model.onnx")
}

/// The committed Ultralytics frame (192 x 128 RGBA), rolled sideways by
/// `k` * 7 pixels so that every frame differs.
fn frame(k: usize) -> (Vec<u8>, u32, u32) {
    let dir = common::root().join("tests/data/detect/ultralytics");
    let img = image::open(dir.join("frame.png")).unwrap().to_rgba8();
    let (w, h) = img.dimensions();
    let roll = (k as u32 * 7) % w;
    let mut out = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h {
        for x in 0..w {
            out.extend_from_slice(&img.get_pixel((x + roll) % w, y).0);
        }
    }
    (out, w, h)
}

/// Every buffer the harness holds, oldest first.
fn pulled(h: &mut Harness) -> Vec<gst::Buffer> {
    std::iter::from_fn(|| h.try_pull()).collect()
}

/// What `desc` (an element named `el`) gives for `frames` frames pushed
/// then EOS: the output buffers, and whether some frame was still held
/// when its push returned.
fn run(desc: &str, frames: usize) -> (Vec<gst::Buffer>, bool) {
    let mut h = harness_on_shared_device(desc);
    let (_, w, hgt) = frame(0);
    h.set_src_caps_str(&caps("RGBA", w, hgt));
    let mut held = false;
    for k in 0..frames {
        h.push(buffer(&frame(k).0, k as u64 * 33)).unwrap();
        held |= (h.buffers_received() as usize) < k + 1;
    }
    assert!(h.push_event(gst::event::Eos::new()));
    let out = pulled(&mut h);
    let stages = element(&h, "el").property::<gst::Structure>("stage-ms");
    assert_eq!(
        stages.get::<u64>("frames").unwrap(),
        frames as u64,
        "{desc}: every frame timed once"
    );
    (out, held)
}

fn results(out: &[gst::Buffer]) -> Vec<FrameResults> {
    let (_, w, h) = frame(0);
    out.iter().map(|b| roi::frame_results(b, w, h)).collect()
}

#[test]
fn detect_with_three_in_flight_gives_every_frame_in_order_as_one_does() {
    init();
    const FRAMES: usize = 4;
    let dir = common::scratch("in-flight-detect");
    let mut ran = 0;
    for device in ["gpu", "cpu"] {
        let mut seen: Vec<(Vec<FrameResults>, String)> = Vec::new();
        for n in [1, 3] {
            let json = dir.join(format!("{device}-{n}.jsonl"));
            let desc = format!(
                "wgnndetect name=el device={device} precision=f32 model={} \
                 results-location={} frames-in-flight={n}",
                yolo().display(),
                json.display()
            );
            let (out, held) = run(&desc, FRAMES);
            assert_eq!(out.len(), FRAMES, "{desc}: EOS drained every frame");
            let pts: Vec<u64> = out.iter().map(|b| b.pts().unwrap().mseconds()).collect();
            assert_eq!(pts, [0, 33, 66, 99], "{desc}: in order");
            // On the GPU the frames wait for their read-back parked; on
            // the CPU they are done when submitted, and N = 1 holds none.
            assert_eq!(held, device == "gpu" && n > 1, "{desc}");
            let text = std::fs::read_to_string(&json).unwrap();
            assert_eq!(text.lines().count(), FRAMES, "{desc}");
            seen.push((results(&out), text));
            ran += 1;
        }
        assert!(
            seen[0].0.iter().any(|r| !r.objects.is_empty()),
            "{device}: the model finds objects"
        );
        assert_eq!(seen[0], seen[1], "{device}: N = 3 gives what N = 1 does");
    }
    assert_eq!(ran, 4);
}

/// Bytes whose drop is counted: a frame's memory freed.
struct Counted(Vec<u8>, Arc<AtomicUsize>);

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_flush_drops_the_parked_frames_and_the_stream_goes_on() {
    init();
    let freed = Arc::new(AtomicUsize::new(0));
    let desc = format!(
        "wgnndetect name=el device=gpu precision=f32 model={} frames-in-flight=3",
        yolo().display()
    );
    let mut h = harness_on_shared_device(&desc);
    let (_, w, hgt) = frame(0);
    h.set_src_caps_str(&caps("RGBA", w, hgt));
    let counted = |k: usize| {
        let mut b = gst::Buffer::from_slice(Counted(frame(k).0, freed.clone()));
        b.get_mut()
            .unwrap()
            .set_pts(gst::ClockTime::from_mseconds(k as u64 * 33));
        b
    };
    for k in 0..2 {
        h.push(counted(k)).unwrap();
    }
    let before: Vec<u64> = pulled(&mut h)
        .iter()
        .map(|b| b.pts().unwrap().mseconds())
        .collect();
    assert!(h.push_event(gst::event::FlushStart::new()));
    assert!(h.push_event(gst::event::FlushStop::new(true)));
    let segment = gst::FormattedSegment::<gst::ClockTime>::new();
    assert!(h.push_event(gst::event::Segment::new(&segment)));
    for k in 2..5 {
        h.push(counted(k)).unwrap();
    }
    assert!(h.push_event(gst::event::Eos::new()));
    let after: Vec<u64> = pulled(&mut h)
        .iter()
        .map(|b| b.pts().unwrap().mseconds())
        .collect();
    assert_eq!(
        after,
        [66, 99, 132],
        "every frame after the flush, in order"
    );
    // Those whose result was in before the flush came out; a parked one
    // would come out after it, out of order, if the flush kept it.
    assert_eq!(before, [0, 33][..before.len()], "in order before the flush");
    drop(h);
    assert_eq!(freed.load(Ordering::Relaxed), 5, "every frame freed");
}

#[test]
fn two_elements_sharing_a_batching_instance_with_two_in_flight_both_finish() {
    init();
    const FRAMES: usize = 3;
    let id = format!("in-flight-{}", std::process::id());
    let outs: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let id = id.clone();
                s.spawn(move || {
                    let desc = format!(
                        "wgnndetect name=el device=gpu precision=f32 model={} \
                         model-instance-id={id} batch-size=2 max-batch-latency=200 \
                         frames-in-flight=2",
                        yolo().display()
                    );
                    run(&desc, FRAMES).0.len()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(outs, [FRAMES, FRAMES]);
}

/// The latency the element `el` of `h` reports, asked on its source pad.
fn latency(h: &Harness) -> gst::ClockTime {
    let mut q = gst::query::Latency::new();
    assert!(element(h, "el").static_pad("src").unwrap().query(&mut q));
    q.result().1
}

#[test]
fn the_latency_grows_by_the_frames_held_and_bad_values_are_refused() {
    init();
    let at = |n: u32| {
        let desc = format!(
            "wgnndetect name=el device=gpu model={} frames-in-flight={n}",
            yolo().display()
        );
        let mut h = harness_on_shared_device(&desc);
        // 30 fps caps, no frame yet: the element adds only what it holds.
        h.set_src_caps_str(&caps("RGBA", 192, 128));
        latency(&h)
    };
    let (one, three) = (at(1), at(3));
    assert_eq!(three - one, gst::ClockTime::from_nseconds(66_666_667));
    for factory in MODEL_ELEMENTS {
        let e = gst::ElementFactory::make(factory).build().unwrap();
        let spec = e.find_property("frames-in-flight").unwrap();
        let spec = spec.downcast::<gst::glib::ParamSpecUInt>().unwrap();
        assert_eq!(
            (spec.minimum(), spec.maximum(), spec.default_value()),
            (1, 16, 1)
        );
        for bad in [0u32, 17] {
            let set = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                e.set_property("frames-in-flight", bad)
            }));
            assert!(set.is_err(), "{factory}: {bad} was taken");
            assert_eq!(e.property::<u32>("frames-in-flight"), 1, "{factory}");
        }
    }
}
