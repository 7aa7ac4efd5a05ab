//! wgnnoverlay on what the segment, pose, obb and analytics elements leave
//! on a buffer: masks as translucent fills, COCO skeletons between the
//! keypoints that pass `keypoint-threshold`, rotated boxes, wgnnanalytics'
//! lines and zones; on texture memory, with no frame read back. The metas
//! are made by the producers' own helpers (`roi::attach_detection`, the
//! `wgnnanalytics` element), and one chain runs a real Ultralytics segment
//! export through wgnndetect.

use gst::prelude::*;
use gst_check::Harness;
use serde_json::Value;

use crate::common;
use crate::common::harness::{buffer, bytes, caps, element, init};
use crate::detect_tasks::{data, model_proc};
use crate::overlay::{attach_on, detection, pattern, px, H, W};

use wgnn::gst::roi;
use wgnn::tasks::{Mask, Rect};

/// The default palette's colours by label id (items::DEFAULT_COLORS).
const RED: [u8; 3] = [0xFF, 0x3B, 0x30];
const GREEN: [u8; 3] = [0x34, 0xC7, 0x59];
const BLUE: [u8; 3] = [0x00, 0x7A, 0xFF];

/// The colour of pixel (x, y) (the output is opaque whatever the input's
/// alpha).
fn rgb(frame: &[u8], x: u32, y: u32) -> [u8; 3] {
    px(frame, x, y)[..3].try_into().unwrap()
}

/// Whether `got` is `color` at `alpha` over `under`, within a step of
/// rounding per channel.
fn blended(got: [u8; 3], under: [u8; 3], color: [u8; 3], alpha: f32) -> bool {
    let a = f32::from((alpha * 255.0).round() as u8) / 255.0;
    (0..3).all(|c| {
        let want = f32::from(under[c]) + (f32::from(color[c]) - f32::from(under[c])) * a;
        (f32::from(got[c]) - want).abs() <= 1.0
    })
}

/// `harness`'s output for `input` with the overlay `ov`'s counters checked:
/// texture memory in and out, so no bytes moved.
fn drawn_on_textures(harness: &mut Harness, ov: &gst::Element, input: &[u8], pts: u64) -> Vec<u8> {
    let out = bytes(&harness.push_and_pull(buffer(input, pts)).unwrap());
    assert_eq!(ov.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(ov.property::<u64>("bytes-downloaded"), 0);
    out
}

#[test]
fn masks_rotated_boxes_and_skeletons_are_drawn_from_the_roi_params() {
    init();
    let input = pattern((W * H * 4) as usize);
    // A mask over (2, 2)..(26, 22), every third pixel set.
    let mut seg = detection("blob", 0, Rect::new(2.0, 2.0, 24.0, 20.0));
    let bits: Vec<bool> = (0..24 * 20).map(|k| k % 3 == 0).collect();
    seg.extras.mask = Some(Mask {
        x: 2,
        y: 2,
        width: 24,
        height: 20,
        bits: bits.clone(),
    });
    // A 20x10 box about (48, 12), a quarter turn: 10 wide, 20 high.
    let mut obb = detection("ship", 1, Rect::new(38.0, 7.0, 20.0, 10.0));
    obb.extras.angle = Some(std::f32::consts::FRAC_PI_2);
    // Shoulders (5, 6) on y = 32, the rest on y = 44; the left elbow (7)
    // scored under the threshold.
    let mut pose = detection("person", 2, Rect::new(0.0, 0.0, 0.0, 0.0));
    pose.keypoints = (0..17).map(|i| [4.0 + 3.0 * i as f32, 44.0]).collect();
    pose.keypoints[5] = [20.0, 32.0];
    pose.keypoints[6] = [44.0, 32.0];
    pose.keypoints[7] = [56.0, 20.0];
    pose.extras.keypoint_scores = vec![0.9; 17];
    pose.extras.keypoint_scores[7] = 0.2;
    let mut harness = Harness::new_parse(
        "wgnnupload ! wgnnoverlay name=ov line-width=2 show-labels=false show-confidence=false \
         ! wgnndownload",
    );
    let ov = element(&harness, "ov");
    attach_on(&ov.static_pad("sink").unwrap(), vec![seg, obb, pose]);
    harness.set_src_caps_str(&caps("RGBA", W, H));
    let out = drawn_on_textures(&mut harness, &ov, &input, 0);
    let (mut tinted, mut clear) = (0, 0);
    // The mask's inside, off its box outline (2 pixels).
    for y in 4..20 {
        for x in 4..24 {
            let (got, under) = (rgb(&out, x, y), rgb(&input, x, y));
            if bits[((y - 2) * 24 + x - 2) as usize] {
                assert!(
                    blended(got, under, RED, 0.45),
                    "mask at ({x}, {y}): {got:?}"
                );
                tinted += 1;
            } else {
                assert_eq!(got, under, "unset mask pixel ({x}, {y})");
                clear += 1;
            }
        }
    }
    assert!(tinted > 90 && clear > 180, "{tinted} {clear}");
    // The turned box's long edges run down x = 43 and x = 53, y 2..22;
    // its middle and where the upright box's edges would be are clear.
    for y in [6, 12, 18] {
        assert_eq!(rgb(&out, 43, y), GREEN, "left edge at y {y}");
        assert_eq!(rgb(&out, 52, y), GREEN, "right edge at y {y}");
        assert_eq!(rgb(&out, 48, y), rgb(&input, 48, y), "inside at y {y}");
    }
    assert_eq!(rgb(&out, 39, 12), rgb(&input, 39, 12), "no upright edge");
    // The shoulders' segment, and none to the elbow under the threshold.
    assert_eq!(rgb(&out, 32, 31), BLUE, "shoulder segment");
    // (27.5, 29.5) is on the segment to the elbow.
    assert_eq!(rgb(&out, 27, 29), rgb(&input, 27, 29), "no elbow segment");
    assert_eq!(rgb(&out, 56, 20), rgb(&input, 56, 20), "no elbow disc");

    // Opacity 0 draws no mask; a threshold of 0 draws the elbow.
    ov.set_property("mask-opacity", 0.0);
    ov.set_property("keypoint-threshold", 0.0);
    let out = drawn_on_textures(&mut harness, &ov, &input, 33);
    assert_eq!(rgb(&out, 5, 5), rgb(&input, 5, 5), "no mask");
    assert_eq!(rgb(&out, 27, 29), BLUE, "the elbow segment");
}

#[test]
fn wgnnanalytics_lines_and_zones_are_drawn_with_their_counts_unless_turned_off() {
    init();
    let dir = common::scratch("overlay-analytics");
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"lines": [{"name": "door", "points": [[48, 4], [48, 44]]}],
            "zones": [{"name": "left", "points": [[4, 20], [30, 20], [30, 44], [4, 44]]}]}"#,
    )
    .unwrap();
    let input = pattern((W * H * 4) as usize);
    let run = |analytics: bool| {
        let mut h = Harness::new_parse(&format!(
            "wgnnanalytics config={} ! wgnnoverlay line-width=2 font-size=8 \
             analytics={analytics}",
            config.display()
        ));
        h.set_src_caps_str(&caps("RGBA", W, H));
        bytes(&h.push_and_pull(buffer(&input, 0)).unwrap())
    };
    let out = run(true);
    // The line (palette colour 0) below its label, the zone (colour 1)
    // filled inside its outline, and nothing elsewhere.
    for y in [28, 34, 40] {
        assert_eq!(rgb(&out, 47, y), RED, "the line at y {y}");
        assert_eq!(rgb(&out, 48, y), RED, "the line at y {y}");
    }
    for (x, y) in [(8, 24), (16, 32), (26, 40)] {
        let (got, under) = (rgb(&out, x, y), rgb(&input, x, y));
        assert!(
            blended(got, under, GREEN, 0.25),
            "zone at ({x}, {y}): {got:?}"
        );
    }
    for (x, y) in [(4, 21), (29, 30), (16, 43)] {
        assert_eq!(rgb(&out, x, y), GREEN, "zone outline at ({x}, {y})");
    }
    for (x, y) in [(40, 30), (58, 40), (36, 46)] {
        assert_eq!(rgb(&out, x, y), rgb(&input, x, y), "clear at ({x}, {y})");
    }
    // The labels: the zone's above it, the line's inside the frame's top
    // edge, right of the line.
    let differs = |x0: u32, y0: u32, x1: u32, y1: u32| {
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|&(x, y)| rgb(&out, x, y) != rgb(&input, x, y))
            .count()
    };
    assert!(differs(4, 8, 30, 20) > 100, "the zone's label");
    assert!(differs(50, 4, 64, 16) > 50, "the line's label");
    let plain = run(false);
    for y in 0..H {
        for x in 0..W {
            assert_eq!(
                rgb(&plain, x, y),
                rgb(&input, x, y),
                "analytics=false: ({x}, {y})"
            );
        }
    }
}

/// Runs the Ultralytics `task` export of tests/data/detect/ultralytics_tasks
/// through `wgnnupload ! wgnndetect ! wgnnoverlay <props> ! wgnndownload`;
/// the input, the output and its ROIs, with the overlay's counters checked
/// (texture memory both sides: nothing moved, nothing read back) and as
/// many objects as Ultralytics found.
fn real_chain(task: &str, props: &str) -> (Vec<u8>, Vec<u8>, Vec<roi::Roi>) {
    init();
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(data().join("expected.json")).unwrap())
            .unwrap();
    let size = doc["size"].as_u64().unwrap() as u32;
    assert_eq!(size, W, "the rows of `px`");
    let m = doc["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["task"] == task)
        .unwrap();
    let dir = common::scratch(&format!("overlay-{task}"));
    let proc = model_proc(&doc, m, &dir);
    let input = std::fs::read(data().join("input.rgba")).unwrap();
    let mut harness = Harness::new_parse(&format!(
        "wgnnupload ! wgnndetect precision=f32 model={} model-proc={} ! \
         wgnnoverlay name=ov {props} ! wgnndownload",
        data().join(m["model"].as_str().unwrap()).display(),
        proc.display()
    ));
    let ov = element(&harness, "ov");
    harness.set_src_caps_str(&caps("RGBA", size, size));
    let out = harness.push_and_pull(buffer(&input, 0)).unwrap();
    assert_eq!(ov.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(ov.property::<u64>("bytes-downloaded"), 0);
    let rois = roi::read(&out, size, size);
    assert_eq!(rois.len(), m["objects"].as_array().unwrap().len());
    (input, bytes(&out), rois)
}

#[test]
fn a_real_segment_model_through_wgnndetect_gets_its_masks_tinted_on_the_gpu() {
    // No outlines or labels: only the masks change pixels.
    let (input, out, rois) = real_chain(
        "segment",
        "line-width=0 show-labels=false show-confidence=false",
    );
    let size = W;
    let masks: Vec<(&Mask, [u8; 3])> = rois
        .iter()
        .map(|r| {
            let colour = [RED, GREEN, BLUE][r.object.label_id % 3];
            (r.object.extras.mask.as_ref().expect("a mask"), colour)
        })
        .collect();
    let covering = |x: u32, y: u32| -> Vec<[u8; 3]> {
        masks
            .iter()
            .filter(|(k, _)| {
                x >= k.x
                    && y >= k.y
                    && x < k.x + k.width
                    && y < k.y + k.height
                    && k.get(x - k.x, y - k.y)
            })
            .map(|(_, c)| *c)
            .collect()
    };
    let mut tinted = 0;
    for y in 0..size {
        for x in 0..size {
            let (got, under) = (rgb(&out, x, y), rgb(&input, x, y));
            match covering(x, y).as_slice() {
                [] => assert_eq!(got, under, "no mask at ({x}, {y})"),
                [c] => {
                    assert!(blended(got, under, *c, 0.45), "({x}, {y}): {got:?}");
                    tinted += 1;
                }
                _ => {}
            }
        }
    }
    assert!(tinted > 100, "{tinted} pixels tinted");
}

#[test]
fn a_real_pose_model_through_wgnndetect_gets_the_skeleton_between_points_that_pass() {
    // Every object is a person (palette colour 0); 3-pixel lines cover the
    // pixel under each segment's midpoint whole.
    let (_, out, rois) = real_chain(
        "pose",
        "line-width=3 keypoint-radius=0 show-labels=false show-confidence=false",
    );
    let mut drawn = 0;
    for r in &rois {
        let (k, s) = (&r.object.keypoints, &r.object.extras.keypoint_scores);
        assert_eq!((k.len(), s.len()), (17, 17));
        for [a, b] in wgnn::video::COCO_SKELETON {
            let mid = [(k[a][0] + k[b][0]) / 2.0, (k[a][1] + k[b][1]) / 2.0];
            let on_frame = (0.0..W as f32).contains(&mid[0]) && (0.0..W as f32).contains(&mid[1]);
            if s[a] >= 0.5 && s[b] >= 0.5 && on_frame {
                let (x, y) = (mid[0] as u32, mid[1] as u32);
                assert_eq!(rgb(&out, x, y), RED, "segment {a}-{b} at ({x}, {y})");
                drawn += 1;
            }
        }
    }
    assert!(drawn > 5, "{drawn} segments checked");
}
