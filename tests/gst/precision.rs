//! The `precision` property of the model elements: there on each, auto by
//! default, f32 and f16 taken, a bad value refused by gst-launch, set only
//! before the element starts; and the INFO line saying what the model ran in.

use gst::prelude::*;

use crate::common;
use crate::common::harness::{init, LogCapture};

const ELEMENTS: [&str; 5] = [
    "wgnnsegment",
    "wgnnsuperres",
    "wgnninfer",
    "wgnndetect",
    "wgnnclassify",
];

fn nick(element: &gst::Element) -> String {
    let value = element.property_value("precision");
    let (_, v) = gst::glib::EnumValue::from_value(&value).expect("an enum property");
    v.nick().to_string()
}

#[test]
fn each_model_element_takes_auto_f32_and_f16() {
    init();
    for name in ELEMENTS {
        let e = gst::ElementFactory::make(name).build().unwrap();
        let spec = e
            .find_property("precision")
            .unwrap_or_else(|| panic!("{name}: no precision"));
        assert!(
            spec.flags().contains(gst::PARAM_FLAG_MUTABLE_READY),
            "{name}: precision is set in NULL or READY, like model"
        );
        assert_eq!(nick(&e), "auto", "{name}: default");
        for value in ["f16", "f32", "auto"] {
            e.set_property_from_str("precision", value);
            assert_eq!(nick(&e), value, "{name}");
        }
        let names: Vec<String> = gst::glib::EnumClass::with_type(spec.value_type())
            .unwrap()
            .values()
            .iter()
            .map(|v| v.nick().to_string())
            .collect();
        assert_eq!(names, ["auto", "f32", "f16"], "{name}");
    }
}

#[test]
fn a_bad_value_is_refused_naming_the_property() {
    init();
    for name in ELEMENTS {
        let launch = format!("videotestsrc ! {name} precision=f8 ! fakesink");
        let Err(e) = gst::parse::launch(&launch) else {
            panic!("{launch}: accepted");
        };
        let message = e.to_string();
        assert!(
            message.contains("precision") && message.contains("f8"),
            "{launch}: {message}"
        );
        assert_eq!(message.lines().count(), 1, "{message}");
    }
}

/// Runs `launch` to EOS with `object`'s INFO lines captured; returns its
/// "precision: " lines.
fn info_lines(launch: &str, category: &'static str, object: &'static str) -> Vec<String> {
    let log = LogCapture::start("wgnn*", gst::DebugLevel::Info, category, object);
    let pipeline = gst::parse::launch(launch).unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = common::harness::eos_or_error(&pipeline, 120);
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(
        matches!(msg.view(), gst::MessageView::Eos(_)),
        "{launch}: {msg:?}"
    );
    let lines: Vec<String> = log
        .lines_at(gst::DebugLevel::Info)
        .into_iter()
        .filter(|l| l.starts_with("precision: "))
        .collect();
    drop(log);
    // `precision-used` (read-only, still there once the element stopped)
    // says what the last line said.
    let element = pipeline
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name(object)
        .unwrap();
    let spec = element.find_property("precision-used").unwrap();
    assert!(!spec.flags().contains(gst::glib::ParamFlags::WRITABLE));
    let used: String = element.property("precision-used");
    assert_eq!(lines.last(), Some(&format!("precision: {used}")));
    lines
}

#[test]
fn elements_log_what_the_model_ran_in() {
    init();
    let f16 = common::gpu().has(wgpu::Features::SHADER_F16);
    let src = "videotestsrc num-buffers=3 ! video/x-raw,width=12,height=8 ! wgnnupload";
    // Asked for, on the GPU: once, though three frames ran.
    let lines = info_lines(
        &format!("{src} ! wgnnsuperres device=gpu precision=f32 name=srprec ! fakesink"),
        "wgnnsuperres",
        "srprec",
    );
    assert_eq!(lines, ["precision: f32 (asked for)"]);
    // auto on the GPU: f16 where it has SHADER_F16 (lavapipe does), with
    // the probe's difference.
    let lines = info_lines(
        &format!("{src} ! wgnnsegment device=gpu effect=mask name=segprec ! fakesink"),
        "wgnnsegment",
        "segprec",
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    let want = if f16 {
        "precision: f16 (rms rel diff "
    } else {
        "precision: f32 (this GPU "
    };
    assert!(lines[0].starts_with(want), "{lines:?}");
    // auto on the CPU context: f32, saying why.
    let lines = info_lines(
        "videotestsrc num-buffers=2 ! video/x-raw,width=12,height=8 ! \
         wgnnsuperres device=cpu name=cpuprec ! fakesink",
        "wgnnsuperres",
        "cpuprec",
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("precision: f32 (the CPU context"),
        "{lines:?}"
    );
}

#[test]
fn f16_on_the_cpu_runs_and_says_so() {
    init();
    let lines = info_lines(
        "videotestsrc num-buffers=1 ! video/x-raw,width=12,height=8 ! \
         wgnnsuperres device=cpu precision=f16 name=cpuf16 ! fakesink",
        "wgnnsuperres",
        "cpuf16",
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("precision: f16 (asked for; the CPU context"),
        "{lines:?}"
    );
}

/// One RGB frame through `launch` (a Harness), the RGBA frame out.
fn through(launch: &str, rgb: &[u8], w: u32, h: u32) -> Vec<u8> {
    let mut harness = gst_check::Harness::new_parse(launch);
    harness.set_src_caps_str(&common::harness::caps("RGB", w, h));
    let out = harness
        .push_and_pull(common::harness::buffer(rgb, 0))
        .unwrap();
    common::harness::bytes(&out)
}

/// What `precision=auto` rests on where it picks f16 (the GPU has
/// SHADER_F16): the elements' pictures do not change visibly. The mask of
/// the sample photo stays within a few grey levels at its edge and under
/// one on average; ESRGAN-slim x2 stays above 40 dB PSNR against f32.
#[test]
fn float16_outputs_are_not_visibly_different() {
    init();
    let (rgb, w, h) = common::astronaut_rgb();
    let seg = |p: &str| {
        through(
            &format!("wgnnsegment device=gpu effect=mask precision={p}"),
            &rgb,
            w,
            h,
        )
    };
    let (a, b) = (seg("f32"), seg("f16"));
    let diffs: Vec<u8> = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .map(|(p, q)| p[0].abs_diff(q[0]))
        .collect();
    let mean = diffs.iter().map(|&d| f64::from(d)).sum::<f64>() / diffs.len() as f64;
    let worst = diffs.iter().copied().max().unwrap_or(0);
    let changed = diffs.iter().filter(|&&d| d > 1).count() as f64 / diffs.len() as f64;
    eprintln!(
        "wgnnsegment mask f16 vs f32: mean {mean:.3} grey levels, max {worst}, \
         {:.3}% of pixels by more than 1",
        changed * 100.0
    );
    assert!(
        mean < 0.5 && changed < 0.01,
        "mean {mean}, changed {changed}"
    );

    let v = common::golden_f32("sr_astronaut_64x64.f32");
    let small: Vec<u8> = v.iter().map(|x| *x as u8).collect();
    let sr = |p: &str| {
        through(
            &format!("wgnnsuperres device=gpu precision={p}"),
            &small,
            64,
            64,
        )
    };
    let (a, b) = (sr("f32"), sr("f16"));
    let mse = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .flat_map(|(p, q)| (0..3).map(move |c| (f64::from(p[c]) - f64::from(q[c])).powi(2)))
        .sum::<f64>()
        / (128.0 * 128.0 * 3.0);
    let psnr = 10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10();
    eprintln!("wgnnsuperres x2 f16 vs f32: PSNR {psnr:.1} dB (MSE {mse:.4})");
    assert!(psnr >= 40.0, "PSNR {psnr} dB");
}
