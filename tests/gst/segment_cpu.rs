//! `wgnnsegment device=cpu`: the model on the CPU context and the frame path
//! in `wgnn::video::cpu`. Its mask of the sample photo against the GPU
//! element's and MediaPipe's, every effect against the GPU element, no bytes
//! moved, texture caps refused, FLUSH_STOP, the `device=auto` fallback without
//! a GPU, and the pipelines/cpu-fallback.sh line.

use crate::common;

use crate::common::harness::{
    buffer, bytes, caps, description, element, eos_or_error, init, launch,
};

use std::time::Instant;

use gst::prelude::*;
use gst_check::Harness;

/// Mean and largest per-byte difference.
fn diff(a: &[u8], b: &[u8]) -> (f64, u8) {
    assert_eq!(a.len(), b.len());
    let sum: u64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    let max = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max().unwrap();
    (sum as f64 / a.len() as f64, max)
}

/// Runs `launch` (one element or a chain) on `frames` of `caps_str` and
/// returns the outputs and the harness.
fn run(launch: &str, caps_str: &str, frames: &[Vec<u8>]) -> (Vec<Vec<u8>>, Harness) {
    let mut h = Harness::new_parse(launch);
    h.set_src_caps_str(caps_str);
    let out = frames
        .iter()
        .enumerate()
        .map(|(i, f)| bytes(&h.push_and_pull(buffer(f, 33 * i as u64)).unwrap()))
        .collect();
    (out, h)
}

#[test]
fn mask_of_the_sample_photo_agrees_with_the_gpu_element_and_mediapipe() {
    init();
    let img = common::astronaut();
    let (w, h) = img.dimensions();
    let frame = vec![img.into_raw()];
    let started = Instant::now();
    let (cpu, cpu_h) = run(
        "wgnnsegment name=seg device=cpu effect=mask",
        &caps("RGB", w, h),
        &frame,
    );
    let cpu_ms = started.elapsed().as_secs_f64() * 1e3;
    let (gpu, _gpu_h) = run(
        // float32 on the GPU too: this compares the two back ends'
        // kernels, not precisions (auto would take float16 on lavapipe).
        "wgnnsegment device=gpu precision=f32 effect=mask",
        &caps("RGB", w, h),
        &frame,
    );

    let out_caps = cpu_h.sinkpad().unwrap().current_caps().unwrap();
    let info = gst_video::VideoInfo::from_caps(&out_caps).unwrap();
    assert_eq!(
        (info.format(), info.width(), info.height()),
        (gst_video::VideoFormat::Rgba, w, h)
    );
    let seg = element(&cpu_h, "seg");
    assert_eq!(seg.property::<u64>("frames"), 1);
    assert_eq!(
        seg.property::<u64>("bytes-uploaded"),
        0,
        "nothing crosses to a GPU"
    );
    assert_eq!(seg.property::<u64>("bytes-downloaded"), 0);

    // The same tensorize and composite on both; only the model's kernels
    // (CPU reference vs WGSL) differ, by f32 rounding.
    let mask = |rgba: &[u8]| -> Vec<u8> { rgba.chunks_exact(4).map(|p| p[0]).collect() };
    let (cpu_mask, gpu_mask) = (mask(&cpu[0]), mask(&gpu[0]));
    let (mean, max) = diff(&cpu_mask, &gpu_mask);
    eprintln!(
        "device=cpu vs device=gpu mask: mean |diff| {mean:.4} LSB, max {max} LSB; CPU frame \
         (first, with the model's set-up) {cpu_ms:.0} ms"
    );
    assert!(mean <= 0.05 && max <= 2, "mean {mean}, max {max}");
    assert!(cpu[0]
        .chunks_exact(4)
        .all(|p| p[0] == p[1] && p[1] == p[2] && p[3] == 255));

    let golden = common::golden_f32("astronaut_mask.f32");
    let ours: Vec<f32> = cpu_mask.iter().map(|&v| f32::from(v) / 255.0).collect();
    let (mean, iou) = common::mask_agreement(&ours, &golden);
    eprintln!("device=cpu effect=mask vs MediaPipe: mean |diff| {mean:.4}, IoU {iou:.4}");
    assert!(mean <= 0.03 && iou >= 0.97, "mean {mean}, IoU {iou}");
}

#[test]
fn every_effect_agrees_with_the_gpu_element() {
    init();
    // The photo at an odd size, as I420: a person to segment, chroma planes
    // with a half-covered last column and row.
    let (w, h) = (97u32, 83u32);
    let small = image::imageops::resize(
        &common::astronaut(),
        w,
        h,
        image::imageops::FilterType::Triangle,
    );
    let i420 = {
        let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, w, h)
            .build()
            .unwrap();
        let mut out = vec![0u8; info.size()];
        let (o, s) = (info.offset(), info.stride());
        for y in 0..h as usize {
            for x in 0..w as usize {
                let p = small.get_pixel(x as u32, y as u32).0.map(f32::from);
                // BT.601 limited range, as the caps' default colorimetry says.
                let luma = 16.0 + (65.481 * p[0] + 128.553 * p[1] + 24.966 * p[2]) / 255.0;
                out[o[0] + y * s[0] as usize + x] = luma.round() as u8;
                if x % 2 == 0 && y % 2 == 0 {
                    let cb = 128.0 + (-37.797 * p[0] - 74.203 * p[1] + 112.0 * p[2]) / 255.0;
                    let cr = 128.0 + (112.0 * p[0] - 93.786 * p[1] - 18.214 * p[2]) / 255.0;
                    out[o[1] + y / 2 * s[1] as usize + x / 2] = cb.round() as u8;
                    out[o[2] + y / 2 * s[2] as usize + x / 2] = cr.round() as u8;
                }
            }
        }
        out
    };
    let frames = vec![
        i420.clone(),
        i420.iter().map(|v| v.saturating_add(3)).collect(),
        i420,
    ];
    let background = std::env::temp_dir().join(format!("wgnn-cpu-bg-{}.png", std::process::id()));
    image::RgbaImage::from_fn(7, 5, |x, y| {
        image::Rgba([x as u8 * 30, y as u8 * 50, 90, 255])
    })
    .save(&background)
    .unwrap();
    let cases = [
        "effect=blur blur-strength=3 smoothing=0.5".to_string(),
        "effect=replace background=#ff000080 softness=0.2".to_string(),
        format!("effect=replace background={}", background.display()),
        "effect=mask threshold=0.4 softness=0".to_string(),
        "effect=none".to_string(),
    ];
    for props in cases {
        let c = caps("I420", w, h);
        let started = Instant::now();
        let (cpu, cpu_h) = run(
            &format!("wgnnsegment name=seg device=cpu {props}"),
            &c,
            &frames,
        );
        let cpu_ms = started.elapsed().as_secs_f64() * 1e3 / frames.len() as f64;
        // float32 on the GPU too, as above.
        let (gpu, _) = run(
            &format!("wgnnsegment device=gpu precision=f32 {props}"),
            &c,
            &frames,
        );
        for (i, (a, b)) in cpu.iter().zip(&gpu).enumerate() {
            let (mean, max) = diff(a, b);
            eprintln!(
                "{props}: frame {i} mean |diff| {mean:.4} LSB, max {max}; {cpu_ms:.0} ms a frame"
            );
            if props == "effect=none" {
                assert_eq!(max, 0, "{props}: no model, the same picture");
            }
            // A hard edge flips a pixel whose probability the two model
            // back ends put on either side of the threshold.
            let max_allowed = if props.contains("softness=0") { 255 } else { 2 };
            assert!(
                mean <= 0.05 && max <= max_allowed,
                "{props} frame {i}: mean {mean}, max {max}"
            );
        }
        let seg = element(&cpu_h, "seg");
        assert_eq!(seg.property::<u64>("frames"), 3);
        assert_eq!(seg.property::<u64>("bytes-uploaded"), 0);
        assert_eq!(seg.property::<u64>("bytes-downloaded"), 0);
    }
    let _ = std::fs::remove_file(background);
}

#[test]
fn flush_stop_resets_the_temporal_smoothing() {
    init();
    let img = image::imageops::resize(
        &common::astronaut(),
        64,
        64,
        image::imageops::FilterType::Triangle,
    );
    let person = image::DynamicImage::ImageRgb8(img).to_rgba8().into_raw();
    let empty = vec![128u8; person.len()];
    let launch = "wgnnsegment device=cpu effect=mask smoothing=0.9";
    let c = caps("RGBA", 64, 64);
    let (alone, _) = run(launch, &c, std::slice::from_ref(&empty));

    let mut h = Harness::new_parse(launch);
    h.set_src_caps_str(&c);
    h.push_and_pull(buffer(&person, 0)).unwrap();
    let remembered = bytes(&h.push_and_pull(buffer(&empty, 33)).unwrap());
    assert_ne!(remembered, alone[0], "smoothing carries the person over");

    assert!(h.push_event(gst::event::FlushStart::new()));
    assert!(h.push_event(gst::event::FlushStop::new(true)));
    assert!(
        h.push_event(gst::event::Segment::new(&gst::FormattedSegment::<
            gst::ClockTime,
        >::new()))
    );
    let after = bytes(&h.push_and_pull(buffer(&empty, 0)).unwrap());
    assert_eq!(
        after, alone[0],
        "after a flush the first frame stands alone"
    );
}

#[test]
fn texture_caps_are_refused_with_a_reason() {
    init();
    // Straight from a harness: the caps event itself is refused.
    let mut h = Harness::new_parse("wgnnsegment device=cpu");
    h.set_src_caps_str(
        "video/x-raw(memory:WgpuTexture),format=RGBA,width=16,height=16,framerate=30/1",
    );
    assert_eq!(
        h.push(buffer(&[0; 16 * 16 * 4], 0)),
        Err(gst::FlowError::NotNegotiated)
    );

    // In a pipeline, textures next to device=cpu link, and negotiation
    // refuses them on the bus with the reason and the way out (issue 45:
    // the link used to fail with a bare "could not link").
    let src = "videotestsrc num-buffers=1 ! video/x-raw,width=32,height=24";
    let mut refused = 0;
    for launch in [
        format!("{src} ! wgnnupload ! wgnnsegment name=cpuseg device=cpu ! fakesink"),
        format!(
            "{src} ! wgnnsegment name=cpuseg device=cpu ! video/x-raw(memory:WgpuTexture) ! \
             fakesink"
        ),
    ] {
        let pipeline = gst::parse::launch(&launch).expect("links");
        pipeline.set_state(gst::State::Playing).unwrap();
        let msg = pipeline
            .bus()
            .unwrap()
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(60),
                &[gst::MessageType::Eos, gst::MessageType::Error],
            )
            .expect("an error");
        pipeline.set_state(gst::State::Null).unwrap();
        let gst::MessageView::Error(e) = msg.view() else {
            panic!("{launch}: {msg:?}");
        };
        let text = e.error().to_string();
        for needle in ["device=cpu", "memory:WgpuTexture", "wgnndownload"] {
            assert!(
                text.contains(needle),
                "{launch}: {needle:?} not in {text:?}"
            );
        }
        refused += 1;
    }
    assert_eq!(refused, 2);
}

/// `device=auto` where no adapter can be opened: a warning on the bus, then
/// the CPU path. Runs itself again as a child process whose environment hides
/// every adapter, so the other tests keep their GPU.
#[test]
fn device_auto_without_a_gpu_runs_on_the_cpu_with_a_warning() {
    if !common::is_child() {
        let text = common::run_in_child(
            module_path!(),
            "device_auto_without_a_gpu_runs_on_the_cpu_with_a_warning",
            &[("WGPU_ADAPTER_NAME", "no-such-gpu-anywhere")],
            &[],
        );
        assert!(text.contains("child: ran on the CPU"), "{text}");
        return;
    }
    init();
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=2 ! video/x-raw,width=32,height=24 ! \
         wgnnsegment name=seg effect=blur blur-strength=2 ! fakesink",
    )
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let mut warnings = Vec::new();
    let eos = loop {
        let msg = bus.timed_pop_filtered(
            gst::ClockTime::from_seconds(60),
            &[
                gst::MessageType::Warning,
                gst::MessageType::Error,
                gst::MessageType::Eos,
            ],
        );
        match msg.as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Warning(w)) => {
                warnings.push(format!("{} {:?}", w.error(), w.debug()))
            }
            Some(gst::MessageView::Eos(_)) => break Ok(()),
            _ => break Err(msg),
        }
    };
    pipeline.set_state(gst::State::Null).unwrap();
    eos.unwrap_or_else(|msg| panic!("expected EOS, got {msg:?}"));
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("no GPU adapter: running on the CPU")),
        "a warning on the bus says why: {warnings:?}"
    );
    let seg = pipeline
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("seg")
        .unwrap();
    assert_eq!(seg.property::<u64>("frames"), 2);
    assert_eq!(seg.property::<u64>("bytes-uploaded"), 0);
    eprintln!("child: ran on the CPU");
}

#[test]
fn the_cpu_fallback_pipeline_line_runs() {
    init();
    let text = std::fs::read_to_string(common::root().join("pipelines/cpu-fallback.sh")).unwrap();
    let line = description(&text);
    assert!(line.contains("device=cpu"), "{line}");
    // No screen here, and a few frames show the line works; the MP4 goes
    // to a temporary folder, not the working directory.
    let out = std::env::temp_dir().join(format!("wgnn-cpu-fallback-{}.mp4", std::process::id()));
    let desc = line
        .replace("autovideosink", "fakesink")
        .replace("num-buffers=30", "num-buffers=8")
        .replace(
            "location=cpu-fallback.mp4",
            &format!("location={}", out.display()),
        );
    assert!(!desc.contains("location=cpu-fallback.mp4"), "{desc}");
    let pipeline = launch(&desc);
    let started = Instant::now();
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = eos_or_error(&pipeline, 120);
    let took = started.elapsed().as_secs_f64();
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(
        matches!(msg.view(), gst::MessageView::Eos(_)),
        "{desc}: {msg:?}"
    );
    let seg = pipeline
        .iterate_elements()
        .into_iter()
        .map(Result::unwrap)
        .find(|e| e.factory().is_some_and(|f| f.name() == "wgnnsegment"))
        .expect("the line has a wgnnsegment");
    assert_eq!(seg.property::<u64>("frames"), 8);
    assert_eq!(seg.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(seg.property::<u64>("bytes-downloaded"), 0);
    let written = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&out);
    assert!(written > 0, "{desc}: no MP4 written");
    eprintln!("{desc}: 8 frames in {took:.2} s");
}

#[test]
fn a_buffer_shorter_than_its_caps_is_an_error_not_a_panic() {
    init();
    let mut h = Harness::new_parse("wgnnsegment device=cpu effect=mask");
    h.set_src_caps_str(&caps("RGBA", 16, 16));
    assert_eq!(h.push(buffer(&[0; 100], 0)), Err(gst::FlowError::Error));
    // The element goes on with the next, whole frame.
    let out = h.push_and_pull(buffer(&[0; 16 * 16 * 4], 33)).unwrap();
    assert_eq!(out.size(), 16 * 16 * 4);
}
