//! wgnntrack as a GStreamer user meets it: ids that persist over frames on
//! ROIs from an appsrc-like harness (system memory and texture memory),
//! and bad settings refused.

use gst::prelude::*;
use gst_check::Harness;
use gst_video::VideoRegionOfInterestMeta;
use wgnn::gst::roi;
use wgnn::tasks::{Detection, Rect};

use crate::common::harness::{buffer, caps, element, init, start_error};

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
