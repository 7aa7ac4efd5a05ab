//! wgnnoverlay as a GStreamer user meets it: ROI metas attached upstream
//! drawn into the frame (pixels checked), in system memory (one upload, one
//! download) and texture memory (no bytes moved), the metas kept on the
//! output, buffers without ROIs converted plainly, properties live and bad.

use crate::common::harness::{
    buffer, bytes, caps, element, expect_eos, init, launch, stop, wgnn_warnings,
};

use gst::prelude::*;
use gst_check::Harness;
use wgnn::gst::roi;
use wgnn::tasks::{Detection, Rect};

pub const W: u32 = 64;
pub const H: u32 = 48;

/// Bytes that vary by position, so that a misplaced pixel shows.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 37 + i / 7 * 11) % 251) as u8)
        .collect()
}

pub fn detection(label: &str, label_id: usize, rect: Rect) -> Detection {
    Detection {
        label: label.into(),
        label_id,
        confidence: 0.87,
        rect,
        extras: Default::default(),
        keypoints: Vec::new(),
    }
}

/// `bytes` as a buffer at `pts_ms` carrying `detections` as ROI metas.
fn with_rois(bytes: &[u8], pts_ms: u64, detections: &[Detection]) -> gst::Buffer {
    let mut b = buffer(bytes, pts_ms);
    for d in detections {
        roi::attach_detection(b.get_mut().unwrap(), d, W, H, -1);
    }
    b
}

pub fn px(rgba: &[u8], x: u32, y: u32) -> [u8; 4] {
    let i = ((y * W + x) * 4) as usize;
    rgba[i..i + 4].try_into().unwrap()
}

/// Whether (x, y) is on the `lw`-pixel outline inside [x0, x1) x [y0, y1).
fn on_outline(x: u32, y: u32, [x0, y0, x1, y1]: [i64; 4], lw: i64) -> bool {
    let (x, y) = (i64::from(x), i64::from(y));
    let inside = x >= x0 && x < x1 && y >= y0 && y < y1;
    inside && (x < x0 + lw || x >= x1 - lw || y < y0 + lw || y >= y1 - lw)
}

/// Every pixel of an RGBA output `out` of RGBA input `input`: on a listed
/// outline, its colour; elsewhere the input's colour, opaque.
fn check_boxes(out: &[u8], input: &[u8], boxes: &[([i64; 4], [u8; 3])], lw: i64) {
    assert_eq!(out.len(), (W * H * 4) as usize);
    for y in 0..H {
        for x in 0..W {
            let want = match boxes.iter().rev().find(|(b, _)| on_outline(x, y, *b, lw)) {
                Some((_, c)) => [c[0], c[1], c[2], 255],
                None => {
                    let p = px(input, x, y);
                    [p[0], p[1], p[2], 255]
                }
            };
            assert_eq!(px(out, x, y), want, "pixel ({x}, {y})");
        }
    }
}

const NO_TEXT: &str = "show-labels=false show-confidence=false";

#[test]
fn system_memory_boxes_are_drawn_with_one_upload_and_one_download() {
    init();
    let input = pattern((W * H * 4) as usize);
    let mut harness = Harness::new_parse(&format!(
        "wgnnoverlay name=ov line-width=2 colors=FF0000,00FF00,0000FF {NO_TEXT}"
    ));
    harness.set_src_caps_str(&caps("RGBA", W, H));
    let dets = [
        detection("cat", 1, Rect::new(10.0, 12.0, 20.0, 16.0)),
        // Partly off the frame: clipped.
        detection("dog", 5, Rect::new(50.0, -4.0, 30.0, 20.0)),
    ];
    let inbuf = with_rois(&input, 40, &dets);
    let rois_in = roi::read(&inbuf, W, H);
    let out = harness.push_and_pull(inbuf).unwrap();
    assert_eq!(out.pts(), Some(gst::ClockTime::from_mseconds(40)));
    let out_caps = harness.sinkpad().unwrap().current_caps().unwrap();
    let info = gst_video::VideoInfo::from_caps(&out_caps).unwrap();
    assert_eq!(info.format(), gst_video::VideoFormat::Rgba);
    check_boxes(
        &bytes(&out),
        &input,
        &[
            ([10, 12, 30, 28], [0, 255, 0]),
            // The ROI meta's rectangle is clamped to the frame, but the
            // detection param keeps the box as found: its top edge (y -4
            // and -3) and right edge are off the frame.
            ([50, -4, 80, 16], [0, 0, 255]),
        ],
        2,
    );
    assert_eq!(roi::read(&out, W, H), rois_in, "ROI metas kept");
    let ov = element(&harness, "ov");
    assert_eq!(ov.property::<u64>("frames"), 1);
    assert_eq!(ov.property::<u64>("bytes-uploaded"), u64::from(W * H * 4));
    assert_eq!(ov.property::<u64>("bytes-downloaded"), u64::from(W * H * 4));
}

#[test]
fn yuv_frames_get_their_boxes_and_one_counted_upload() {
    init();
    let size = (W * H * 3 / 2) as usize;
    let input = pattern(size);
    let c = [255, 255, 0];
    for format in ["NV12", "I420"] {
        let mut harness = Harness::new_parse(&format!(
            "wgnnoverlay name=ov line-width=3 colors=FFFF00 {NO_TEXT}"
        ));
        harness.set_src_caps_str(&caps(format, W, H));
        let plain = bytes(&harness.push_and_pull(buffer(&input, 0)).unwrap());
        let dets = [detection("x", 0, Rect::new(4.0, 5.0, 30.0, 20.0))];
        let out = bytes(&harness.push_and_pull(with_rois(&input, 33, &dets)).unwrap());
        // The boxed frame is the plain conversion but for the outline.
        check_boxes(&out, &plain, &[([4, 5, 34, 25], c)], 3);
        let ov = element(&harness, "ov");
        assert_eq!(
            ov.property::<u64>("bytes-uploaded"),
            2 * size as u64,
            "{format}"
        );
        assert_eq!(
            ov.property::<u64>("bytes-downloaded"),
            u64::from(2 * W * H * 4),
            "{format}"
        );
    }
}

/// Attaches `dets` to every buffer reaching `pad`: ROIs that appear after
/// wgnnupload (which makes new buffers), as a detector there would add them.
pub fn attach_on(pad: &gst::Pad, dets: Vec<Detection>) {
    pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
        if let Some(gst::PadProbeData::Buffer(b)) = info.data.as_mut() {
            let b = b.make_mut();
            for d in &dets {
                roi::attach_detection(b, d, W, H, -1);
            }
        }
        gst::PadProbeReturn::Ok
    });
}

#[test]
fn texture_memory_moves_no_bytes_and_draws_what_system_memory_draws() {
    init();
    let input = pattern((W * H * 4) as usize);
    let mut dets = vec![
        detection("face", 2, Rect::new(8.0, 20.0, 25.0, 20.0)),
        detection("", 0, Rect::new(40.0, 2.0, 10.0, 40.0)),
    ];
    dets[0].keypoints = vec![[15.0, 28.0], [25.0, 28.0]];
    let props = "line-width=2 font-size=10";

    let mut system = Harness::new_parse(&format!("wgnnoverlay {props}"));
    system.set_src_caps_str(&caps("RGBA", W, H));
    let want = bytes(&system.push_and_pull(with_rois(&input, 0, &dets)).unwrap());

    let mut harness = Harness::new_parse(&format!(
        "wgnnupload ! wgnnoverlay name=ov {props} ! wgnndownload"
    ));
    let ov = element(&harness, "ov");
    attach_on(&ov.static_pad("sink").unwrap(), dets.clone());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    ov.static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(gst::PadProbeData::Buffer(b)) = info.data.as_ref() {
                sink.lock().unwrap().push(roi::read(b, W, H));
            }
            gst::PadProbeReturn::Ok
        });
    harness.set_src_caps_str(&caps("RGBA", W, H));
    let got = bytes(&harness.push_and_pull(buffer(&input, 0)).unwrap());
    assert!(
        got == want,
        "the texture path draws what system memory draws"
    );
    // The label and keypoints were drawn: more than the box outlines differ.
    let changed = (0..W * H)
        .filter(|i| got[*i as usize * 4..][..3] != input[*i as usize * 4..][..3])
        .count();
    // (The two outlines cover about 350 pixels.)
    assert!(changed > 450, "{changed} pixels drawn");
    assert_eq!(ov.property::<u64>("frames"), 1);
    assert_eq!(ov.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(ov.property::<u64>("bytes-downloaded"), 0);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].len(), 2, "ROI metas on the drawn texture buffer");
    assert_eq!(seen[0][0].object.label, "face");
    assert_eq!(seen[0][0].object.keypoints.len(), 2);
}

#[test]
fn buffers_without_rois_are_the_plain_conversion() {
    init();
    let input = pattern((W * H * 4) as usize);
    let mut harness = Harness::new_parse("wgnnoverlay");
    harness.set_src_caps_str(&caps("RGBA", W, H));
    let out = harness.push_and_pull(buffer(&input, 0)).unwrap();
    check_boxes(&bytes(&out), &input, &[], 2);
    assert_eq!(
        out.iter_meta::<gst_video::VideoRegionOfInterestMeta>()
            .count(),
        0
    );
}

#[test]
fn labels_follow_show_labels_and_sit_above_the_box() {
    init();
    let input = pattern((W * H * 4) as usize);
    let dets = [detection("person", 0, Rect::new(10.0, 30.0, 30.0, 15.0))];
    let run = |props: &str| {
        let mut harness = Harness::new_parse(&format!(
            "wgnnoverlay line-width=1 font-size=20 colors=0000FF {props}"
        ));
        harness.set_src_caps_str(&caps("RGBA", W, H));
        bytes(&harness.push_and_pull(with_rois(&input, 0, &dets)).unwrap())
    };
    let above = |out: &[u8]| -> Vec<[u8; 4]> {
        (10..30)
            .flat_map(|y| (10..40).map(move |x| (x, y)))
            .map(|(x, y)| px(out, x, y))
            .collect()
    };
    let labelled = above(&run(""));
    let blue = [0, 0, 255, 255];
    assert!(
        labelled.iter().filter(|p| **p == blue).count() > 50,
        "label background"
    );
    // Ink: white, or blended from blue towards it at glyph edges.
    assert!(
        labelled
            .iter()
            .filter(|p| p[0] >= 200 && p[2] == 255)
            .count()
            > 5,
        "white ink on blue"
    );
    // Without text nothing is drawn above the box.
    let bare = run(NO_TEXT);
    check_boxes(&bare, &input, &[([10, 30, 40, 45], [0, 0, 255])], 1);
}

#[test]
fn style_changes_while_playing_take_effect_on_the_next_frame() {
    init();
    let input = pattern((W * H * 4) as usize);
    let dets = [detection("a", 0, Rect::new(5.0, 5.0, 40.0, 30.0))];
    let mut harness = Harness::new_parse(&format!("wgnnoverlay name=ov colors=00FF00 {NO_TEXT}"));
    harness.set_src_caps_str(&caps("RGBA", W, H));
    let first = bytes(&harness.push_and_pull(with_rois(&input, 0, &dets)).unwrap());
    check_boxes(&first, &input, &[([5, 5, 45, 35], [0, 255, 0])], 2);
    let ov = element(&harness, "ov");
    ov.set_property("line-width", 5.0f64);
    ov.set_property("colors", "#FF00FF, 00ff00");
    assert_eq!(ov.property::<String>("colors"), "FF00FF,00FF00");
    let second = bytes(&harness.push_and_pull(with_rois(&input, 33, &dets)).unwrap());
    check_boxes(&second, &input, &[([5, 5, 45, 35], [255, 0, 255])], 5);
}

#[test]
fn bad_colours_keep_the_old_palette_and_say_why() {
    init();
    let seen = wgnn_warnings("badcolors").len();
    let e = gst::ElementFactory::make("wgnnoverlay")
        .name("badcolors")
        .build()
        .unwrap();
    let default = e.property::<String>("colors");
    for bad in ["nope", "", "FF00", "FF0000,12345G"] {
        e.set_property("colors", bad);
        assert_eq!(e.property::<String>("colors"), default, "{bad:?}");
    }
    // A GLib warning each (printed without GST_DEBUG), naming the value and
    // the accepted form.
    let lines = wgnn_warnings("badcolors");
    assert_eq!(lines.len() - seen, 4, "{lines:?}");
    assert!(
        lines[seen].contains("colors=\"nope\"") && lines[seen].contains("RRGGBB"),
        "{lines:?}"
    );
    assert!(lines[seen + 3].contains("12345G"), "{lines:?}");
    // Ranges are the param specs': a font size the atlas cannot make is
    // not a value the property takes.
    let spec = e.find_property("font-size").unwrap();
    let spec = spec.downcast_ref::<gst::glib::ParamSpecDouble>().unwrap();
    assert_eq!((spec.minimum(), spec.maximum()), (4.0, 200.0));
}

#[test]
fn caps_it_cannot_handle_are_refused() {
    init();
    let err = gst::parse::launch(
        "videotestsrc num-buffers=1 ! video/x-raw,format=YUY2,width=16,height=16 ! wgnnoverlay ! fakesink",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("can't handle caps"), "{err}");
}

#[test]
fn the_documented_pipeline_runs_with_detections_moving_no_frame_bytes() {
    init();
    // The element's doc line, with a sink that needs no display.
    let pipeline = launch(
        "videotestsrc num-buffers=3 ! video/x-raw,width=320,height=240 ! wgnnupload ! \
         wgnnoverlay name=ov line-width=3 font-size=16 colors=FF0000,00FF00 ! wgnndownload ! \
         videoconvert ! fakesink",
    );
    let ov = pipeline.by_name("ov").unwrap();
    let mut face = detection("face", 1, Rect::new(100.0, 80.0, 60.0, 70.0));
    face.keypoints = vec![[120.0, 100.0], [140.0, 100.0]];
    attach_on(&ov.static_pad("sink").unwrap(), vec![face]);
    pipeline.set_state(gst::State::Playing).unwrap();
    expect_eos(&pipeline, 60, "the documented wgnnoverlay pipeline");
    assert_eq!(ov.property::<u64>("frames"), 3);
    assert_eq!(ov.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(ov.property::<u64>("bytes-downloaded"), 0);
    stop(&pipeline);
}
