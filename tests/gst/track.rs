//! wgnntrack as a GStreamer user meets it: ids that persist over frames on
//! ROIs from an appsrc-like harness (system memory and texture memory),
//! `inference-interval=3` on wgnndetect with the face detector on the
//! sample clip (detections on one frame in three, the ids going on through
//! the predicted frames), and bad settings refused.

use gst::prelude::*;
use gst_check::Harness;
use gst_video::VideoRegionOfInterestMeta;
use wgnn::gst::roi;
use wgnn::tasks::{Detection, Rect};

use crate::common;
use crate::common::harness::{buffer, caps, element, expect_eos, init, launch, start_error};

const W: u32 = 64;
const H: u32 = 48;

/// One RGBA frame at `pts_ms` with a detection at each `(x, y)` (12x16).
fn frame_with(boxes: &[(f32, f32)], pts_ms: u64) -> gst::Buffer {
    let mut b = buffer(&vec![0u8; (W * H * 4) as usize], pts_ms);
    for (x, y) in boxes {
        let d = Detection {
            label: "thing".into(),
            label_id: 0,
            confidence: 0.9,
            rect: Rect::new(*x, *y, 12.0, 16.0),
            keypoints: Vec::new(),
            extras: Default::default(),
        };
        roi::attach_detection(b.get_mut().unwrap(), &d, W, H, -1);
    }
    b
}

/// (meta id, tracking id, state, age) of each ROI with a `tracking` param.
fn tracks(buf: &gst::BufferRef) -> Vec<(i32, u64, String, u32)> {
    buf.iter_meta::<VideoRegionOfInterestMeta>()
        .filter_map(|m| {
            let t = m.param(roi::TRACKING)?;
            let object_id = m.param("object_id").and_then(|s| s.get::<i32>("id").ok());
            assert_eq!(object_id, Some(m.id()), "DL Streamer's object_id");
            Some((
                m.id(),
                t.get::<u64>("id").unwrap(),
                t.get::<String>("state").unwrap(),
                t.get::<u32>("age").unwrap(),
            ))
        })
        .collect()
}

#[test]
fn ids_persist_over_frames_in_both_memories() {
    init();
    for launch in [
        "wgnntrack name=track",
        "wgnnupload ! wgnntrack name=track ! wgnndownload",
    ] {
        let mut h = Harness::new_parse(launch);
        h.set_src_caps_str(&caps("RGBA", W, H));
        let mut seen = Vec::new();
        for i in 0..5u64 {
            let x = 2.0 + 3.0 * i as f32;
            let out = h
                .push_and_pull(frame_with(
                    &[(x, 4.0), (50.0 - 2.0 * i as f32, 30.0)],
                    i * 33,
                ))
                .unwrap();
            assert_eq!(roi::read(&out, W, H).len(), 2, "{launch}: the ROIs pass");
            seen.push(tracks(&out));
        }
        assert!(
            seen[0].is_empty(),
            "{launch}: no id before min-hits: {seen:?}"
        );
        for (i, frame) in seen.iter().enumerate().skip(1) {
            let ids: Vec<(i32, u64, &str)> = frame
                .iter()
                .map(|(m, t, s, _)| (*m, *t, s.as_str()))
                .collect();
            assert_eq!(
                ids,
                vec![(1, 1, "tracked"), (2, 2, "tracked")],
                "{launch}: frame {i}: the meta id is the track id"
            );
            assert_eq!(frame[0].3, i as u32 + 1, "{launch}: age in frames");
        }
        let track = element(&h, "track");
        assert_eq!(track.property::<u64>("frames"), 5);
        assert_eq!(track.property::<u64>("bytes-uploaded"), 0);
        assert_eq!(track.property::<u64>("bytes-downloaded"), 0);
    }
}

#[test]
fn detections_on_one_frame_in_three_keep_their_ids_through_predicted_frames() {
    init();
    let dir = common::scratch("track-interval");
    let (detected, tracked) = (dir.join("detect.jsonl"), dir.join("track.jsonl"));
    for f in [&detected, &tracked] {
        let _ = std::fs::remove_file(f);
    }
    let model = wgnn::models::bundled("mediapipe/face_detection_short_range.tflite");
    let clip = common::root().join("assets/samples/astronaut.mp4");
    let pipeline = launch(&format!(
        "filesrc location={} ! decodebin ! identity eos-after=10 ! videoconvert ! \
         video/x-raw,format=RGBA ! wgnndetect name=detect device=cpu model={} \
         inference-interval=3 results-location={} ! wgnntrack name=track tracker=bytetrack \
         results-location={} ! fakesink",
        clip.display(),
        model.display(),
        detected.display(),
        tracked.display()
    ));
    pipeline.set_state(gst::State::Playing).unwrap();
    expect_eos(&pipeline, 300, "detect ! track");
    let detect = pipeline.by_name("detect").unwrap();
    let ran = detect.property::<u64>("frames");
    assert_eq!(detect.property::<u32>("inference-interval"), 3);
    pipeline.set_state(gst::State::Null).unwrap();
    let lines = |p: &std::path::Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // identity's eos-after lets a frame or so more through than it names:
    // the tracker's lines count the frames.
    let frames = lines(&tracked);
    assert!(frames.len() >= 10, "the tracker writes every frame");
    let every_third = frames.len().div_ceil(3);
    assert_eq!(
        ran as usize,
        every_third,
        "frames 0, 3, 6, ... of {}",
        frames.len()
    );
    assert_eq!(
        lines(&detected).len(),
        every_third,
        "the detector wrote the frames it ran on"
    );
    let ids: Vec<Vec<u64>> = frames
        .iter()
        .map(|f| {
            f["objects"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|o| o["id"].as_u64())
                .collect()
        })
        .collect();
    // Frame 0 starts the track, frame 3 confirms it (min-hits 2); from
    // there the face has one id, predicted on the frames between.
    assert!(ids[0].is_empty() && ids[1].is_empty(), "{ids:?}");
    for (i, f) in ids.iter().enumerate().skip(3) {
        assert_eq!(f, &vec![1], "frame {i}: {ids:?}");
    }
}

#[test]
fn bad_settings_are_refused() {
    init();
    let err = start_error(
        "videotestsrc num-buffers=1 ! wgnntrack low-threshold=0.7 high-threshold=0.4 ! fakesink",
    );
    assert!(
        err.starts_with("low-threshold 0.7 is above high-threshold 0.4 "),
        "{err}"
    );
    // GLib refuses what the ranges exclude (no track without its first
    // frame; thresholds are fractions).
    let track = gst::ElementFactory::make("wgnntrack").build().unwrap();
    let max_age = track.find_property("max-age").unwrap();
    let max_age = max_age.downcast_ref::<gst::glib::ParamSpecUInt>().unwrap();
    assert_eq!((max_age.minimum(), max_age.default_value()), (1, 30));
    for name in ["iou-threshold", "high-threshold", "low-threshold"] {
        let p = track.find_property(name).unwrap();
        let p = p.downcast_ref::<gst::glib::ParamSpecDouble>().unwrap();
        assert_eq!((p.minimum(), p.maximum()), (0.0, 1.0), "{name}");
    }
    track.set_property_from_str("tracker", "iou");
    assert_eq!(
        track
            .property_value("tracker")
            .serialize()
            .unwrap()
            .as_str(),
        "iou"
    );
}
