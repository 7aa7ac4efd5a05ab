//! wgnnsuperres as a GStreamer user meets it: the real ESRGAN-slim x2 model
//! against TF.js's own output, caps at the scaled size, compare mode,
//! zero-copy texture chains and bad models.

use crate::common;

use crate::common::harness::{buffer, caps, element, init, start_error};

use gst::prelude::*;
use gst_check::Harness;

/// The 64x64 golden input as RGB bytes (its values are whole numbers).
fn golden_rgb() -> Vec<u8> {
    let v = common::golden_f32("sr_astronaut_64x64.f32");
    assert_eq!(v.len(), 64 * 64 * 3);
    v.iter()
        .map(|x| {
            assert_eq!(x.fract(), 0.0, "golden input holds whole 0..255 values");
            *x as u8
        })
        .collect()
}

fn out_info(h: &Harness) -> gst_video::VideoInfo {
    gst_video::VideoInfo::from_caps(&h.sinkpad().unwrap().current_caps().unwrap()).unwrap()
}

#[test]
fn x2_matches_tfjs_on_the_golden_input() {
    init();
    let expected = common::golden_f32("sr_astronaut_64x64_x2.f32");
    let mut h = Harness::new_parse("wgnnsuperres device=gpu name=sr scale=2");
    h.set_src_caps_str(&caps("RGB", 64, 64));
    let out = h.push_and_pull(buffer(&golden_rgb(), 100)).unwrap();
    assert_eq!(out.pts(), Some(gst::ClockTime::from_mseconds(100)));
    assert_eq!(out.duration(), Some(gst::ClockTime::from_mseconds(33)));
    let info = out_info(&h);
    assert_eq!(
        (info.format(), info.width(), info.height()),
        (gst_video::VideoFormat::Rgba, 128, 128)
    );
    let map = out.map_readable().unwrap();
    let stride = info.stride()[0] as usize;
    let mut worst = 0.0f32;
    for y in 0..128 {
        for x in 0..128 {
            for c in 0..3 {
                let ours = map[y * stride + x * 4 + c] as f32;
                // TF.js leaves the output unclamped; the element writes 8-bit pixels.
                let theirs = expected[(y * 128 + x) * 3 + c].clamp(0.0, 255.0).round();
                worst = worst.max((ours - theirs).abs());
            }
            assert_eq!(map[y * stride + x * 4 + 3], 255, "alpha at {x},{y}");
        }
    }
    eprintln!("wgnnsuperres x2 vs TF.js: max |diff| {worst} LSB");
    assert!(worst <= 1.0, "max |diff| {worst} LSB");
    let sr = element(&h, "sr");
    assert_eq!(sr.property::<u64>("frames"), 1);
    assert_eq!(sr.property::<u64>("bytes-uploaded"), 64 * 64 * 3);
    assert_eq!(sr.property::<u64>("bytes-downloaded"), 128 * 128 * 4);
}

#[test]
fn output_caps_follow_scale_and_compare() {
    init();
    for (launch, w, h, ow, oh) in [
        ("wgnnsuperres device=gpu scale=2", 21, 13, 42, 26),
        ("wgnnsuperres device=gpu scale=3", 21, 13, 63, 39),
        ("wgnnsuperres device=gpu scale=4", 9, 7, 36, 28),
        (
            "wgnnsuperres device=gpu scale=2 compare=true",
            21,
            13,
            84,
            26,
        ),
    ] {
        let mut harness = Harness::new_parse(launch);
        harness.set_src_caps_str(&caps("I420", w, h));
        let size = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, w, h)
            .build()
            .unwrap()
            .size();
        harness.push_and_pull(buffer(&vec![128; size], 0)).unwrap();
        let info = out_info(&harness);
        assert_eq!((info.width(), info.height()), (ow, oh), "{launch}");
    }
}

#[test]
fn compare_mode_puts_the_model_on_the_right() {
    init();
    let rgb = golden_rgb();
    let run = |launch: &str| {
        let mut h = Harness::new_parse(launch);
        h.set_src_caps_str(&caps("RGB", 64, 64));
        let out = h.push_and_pull(buffer(&rgb, 0)).unwrap();
        let info = out_info(&h);
        let map = out.map_readable().unwrap();
        let stride = info.stride()[0] as usize;
        let rows: Vec<Vec<u8>> = (0..info.height() as usize)
            .map(|y| map[y * stride..y * stride + info.width() as usize * 4].to_vec())
            .collect();
        rows
    };
    let model = run("wgnnsuperres device=gpu scale=2");
    let side = run("wgnnsuperres device=gpu scale=2 compare=true");
    assert_eq!(side.len(), 128);
    let mut worst = 0u8;
    for (y, (m, s)) in model.iter().zip(&side).enumerate() {
        assert_eq!(s.len(), 256 * 4);
        assert_eq!(
            &s[128 * 4..],
            &m[..],
            "row {y}: the right half is the model"
        );
        for x in 0..128 {
            let expected = bicubic_x2(&rgb, 64, x, y);
            for c in 0..3 {
                worst = worst.max(s[x * 4 + c].abs_diff(expected[c]));
            }
        }
    }
    eprintln!("compare=true: bicubic half vs CPU Keys bicubic: max |diff| {worst} LSB");
    assert!(worst <= 1, "bicubic half differs by {worst} LSB");
}

/// Keys bicubic (a = -0.5) with half-pixel centres and clamped edges, the
/// usual "bicubic" of image libraries, at output pixel (x, y) of a 2x upscale.
fn bicubic_x2(rgb: &[u8], size: usize, x: usize, y: usize) -> [u8; 3] {
    fn weight(t: f64) -> f64 {
        let (a, t) = (-0.5, t.abs());
        if t <= 1.0 {
            (a + 2.0) * t * t * t - (a + 3.0) * t * t + 1.0
        } else if t < 2.0 {
            a * t * t * t - 5.0 * a * t * t + 8.0 * a * t - 4.0 * a
        } else {
            0.0
        }
    }
    let sx = (x as f64 + 0.5) / 2.0 - 0.5;
    let sy = (y as f64 + 0.5) / 2.0 - 0.5;
    let mut acc = [0.0f64; 3];
    for j in -1..=2 {
        let py = sy.floor() as i64 + j;
        let wy = weight(sy - py as f64);
        for i in -1..=2 {
            let px = sx.floor() as i64 + i;
            let w = wy * weight(sx - px as f64);
            let (cx, cy) = (
                px.clamp(0, size as i64 - 1) as usize,
                py.clamp(0, size as i64 - 1) as usize,
            );
            for (c, a) in acc.iter_mut().enumerate() {
                *a += w * rgb[(cy * size + cx) * 3 + c] as f64;
            }
        }
    }
    acc.map(|v| v.round().clamp(0.0, 255.0) as u8)
}

#[test]
fn textures_in_and_out_move_no_bytes_and_equal_system_memory() {
    init();
    let rgb = golden_rgb();
    let run = |launch: &str| {
        let mut h = Harness::new_parse(launch);
        h.set_src_caps_str(&caps("RGB", 64, 64));
        let out = h.push_and_pull(buffer(&rgb, 0)).unwrap();
        let bytes = out.map_readable().unwrap().to_vec();
        (bytes, h)
    };
    let (system, _) = run("wgnnsuperres device=gpu scale=2");
    let (texture, h) = run("wgnnupload ! wgnnsuperres device=gpu name=sr scale=2 ! wgnndownload");
    assert!(system == texture, "texture path differs from system memory");
    let sr = element(&h, "sr");
    assert_eq!(sr.property::<u64>("frames"), 1);
    assert_eq!(sr.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(sr.property::<u64>("bytes-downloaded"), 0);
}

#[test]
fn bad_models_fail_the_state_change_naming_the_cause() {
    init();
    let dir = std::env::temp_dir().join(format!("wgnn-sr-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x2 = common::root().join("assets/models/esrgan-slim/x2/model.json");
    let broken = dir.join("model.json");
    std::fs::write(&broken, b"{\"modelTopology\": 17").unwrap();
    let selfie = common::root().join("assets/models/selfie/selfie_segmentation.tflite");
    let src = "videotestsrc num-buffers=1 ! video/x-raw,width=16,height=16";
    let cases = [
        (
            format!("{src} ! wgnnsuperres device=gpu model=/no/such/model.json ! fakesink"),
            vec!["/no/such/model.json"],
        ),
        (
            format!(
                "{src} ! wgnnsuperres device=gpu model={} ! fakesink",
                broken.display()
            ),
            vec![broken.to_str().unwrap()],
        ),
        (
            format!(
                "{src} ! wgnnsuperres device=gpu model={} scale=3 ! fakesink",
                x2.display()
            ),
            vec!["scale=3"],
        ),
        (
            format!(
                "{src} ! wgnnsuperres device=gpu model={} ! fakesink",
                selfie.display()
            ),
            vec!["not a super-resolution model"],
        ),
    ];
    for (launch, needles) in cases {
        let text = start_error(&launch);
        for n in needles {
            assert!(text.contains(n), "{launch}: {text:?} should mention {n:?}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// ROIs attached upstream come out scaled with the frame; a compare=true
/// output (two pictures side by side) carries none.
#[test]
fn rois_are_scaled_with_the_frame() {
    use wgnn::gst::roi;
    use wgnn::tasks::{Detection, Rect};
    init();
    let face = Detection {
        label: "face".into(),
        label_id: 0,
        confidence: 0.5,
        rect: Rect::new(4.0, 2.0, 8.0, 6.0),
        extras: Default::default(),
        keypoints: vec![[6.0, 4.0]],
    };
    for (launch, scaled) in [
        ("wgnnsuperres device=gpu scale=2", true),
        ("wgnnsuperres device=gpu scale=2 compare=true", false),
    ] {
        let mut h = Harness::new_parse(launch);
        h.set_src_caps_str(&caps("RGB", 21, 13));
        let size = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgb, 21, 13)
            .build()
            .unwrap()
            .size();
        let mut b = buffer(&vec![128; size], 0);
        roi::attach_detection(b.get_mut().unwrap(), &face, 21, 13, -1);
        let out = h.push_and_pull(b).unwrap();
        let info = out_info(&h);
        let rois = roi::read(&out, info.width(), info.height());
        if !scaled {
            assert!(rois.is_empty(), "{launch}: {rois:?}");
            continue;
        }
        assert_eq!(rois.len(), 1, "{launch}");
        assert_eq!(rois[0].pixels, (8, 4, 16, 12), "{launch}");
        let o = &rois[0].object;
        assert!(
            (o.rect.x - 8.0).abs() < 1e-3 && (o.rect.w - 16.0).abs() < 1e-3,
            "{o:?}"
        );
        assert!((o.keypoints[0][0] - 12.0).abs() < 1e-3, "{o:?}");
    }
}
