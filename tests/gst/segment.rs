//! wgnnsegment as a GStreamer user meets it: caps, properties, the real
//! model's mask on the sample photo, effects, zero-copy chains, bad input,
//! state cycling, resolution changes, latency and timestamps.

use crate::common;

use crate::common::harness::{
    buffer, bytes, caps, element, eos_or_error, init, start_error, LogCapture,
};

use gst::prelude::*;
use gst_check::Harness;

#[test]
fn mask_of_the_sample_photo_matches_mediapipe() {
    init();
    let golden = common::golden_f32("astronaut_mask.f32");
    let (rgb, w, h) = common::astronaut_rgb();
    let mut harness = Harness::new_parse("wgnnsegment device=gpu name=seg effect=mask");
    harness.set_src_caps_str(&caps("RGB", w, h));
    let out = harness.push_and_pull(buffer(&rgb, 40)).unwrap();
    assert_eq!(out.pts(), Some(gst::ClockTime::from_mseconds(40)));
    assert_eq!(out.duration(), Some(gst::ClockTime::from_mseconds(33)));
    let out_caps = harness.sinkpad().unwrap().current_caps().unwrap();
    let info = gst_video::VideoInfo::from_caps(&out_caps).unwrap();
    assert_eq!(
        (info.format(), info.width(), info.height()),
        (gst_video::VideoFormat::Rgba, w, h)
    );
    assert!(!out_caps
        .features(0)
        .unwrap()
        .contains(wgnn::gst::frame_meta::CAPS_FEATURE_WGPU_TEXTURE));
    let rgba = bytes(&out);
    let ours: Vec<f32> = rgba.chunks_exact(4).map(|p| p[0] as f32 / 255.0).collect();
    let (mean, iou) = common::mask_agreement(&ours, &golden);
    eprintln!("wgnnsegment effect=mask vs MediaPipe: mean |diff| {mean:.4}, IoU {iou:.4}");
    assert!(mean <= 0.03 && iou >= 0.97, "mean {mean}, IoU {iou}");

    // System memory in and out: one upload of the frame, one download of the result.
    let seg = element(&harness, "seg");
    assert_eq!(seg.property::<u64>("frames"), 1);
    assert_eq!(seg.property::<u64>("bytes-uploaded"), (w * h * 3) as u64);
    assert_eq!(seg.property::<u64>("bytes-downloaded"), (w * h * 4) as u64);
}

#[test]
fn texture_memory_in_and_out_moves_no_bytes_and_matches_system_memory() {
    init();
    let (w, h) = (45, 37);
    let size = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, w, h)
        .build()
        .unwrap()
        .size();
    let mut rng_state = 7u32;
    let frames: Vec<Vec<u8>> = (0..3)
        .map(|_| {
            (0..size)
                .map(|_| {
                    rng_state = rng_state.wrapping_mul(1664525).wrapping_add(1013904223);
                    (rng_state >> 24) as u8
                })
                .collect()
        })
        .collect();
    let run = |launch: &str| {
        let mut harness = Harness::new_parse(launch);
        harness.set_src_caps_str(&caps("I420", w, h));
        let out: Vec<Vec<u8>> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| bytes(&harness.push_and_pull(buffer(f, i as u64 * 33)).unwrap()))
            .collect();
        (out, harness)
    };
    let (system, _h1) = run("wgnnsegment device=gpu effect=blur blur-strength=3 smoothing=0.5");
    // With frames in flight too: the frames come out at once, the same
    // and in order (the smoothing carries each frame's mask to the next).
    let (texture, h2) = run(
        "wgnnupload name=up ! wgnnsegment device=gpu name=seg effect=blur blur-strength=3 smoothing=0.5 \
         frames-in-flight=3 ! wgnndownload name=down",
    );
    assert_eq!(system.len(), 3);
    for (i, (a, b)) in system.iter().zip(&texture).enumerate() {
        assert_eq!(a.len(), (w * h * 4) as usize);
        assert!(
            a == b,
            "frame {i}: texture path differs from system-memory path"
        );
    }
    let seg = element(&h2, "seg");
    assert_eq!(seg.property::<u64>("frames"), 3);
    assert_eq!(seg.property::<u64>("bytes-uploaded"), 0);
    assert_eq!(seg.property::<u64>("bytes-downloaded"), 0);
    let device = |e: &gst::Element| {
        e.context(wgnn::gst::device::CONTEXT_TYPE)
            .and_then(|c| wgnn::gst::device::gpu_from(&c))
            .expect("element holds a wgnn device context")
            .id()
    };
    assert_eq!(device(&element(&h2, "up")), device(&seg));
    assert_eq!(device(&seg), device(&element(&h2, "down")));
}

#[test]
fn effects_follow_the_properties() {
    init();
    // A flat grey frame has no person in it: the background is everything.
    let (w, h) = (40, 30);
    let grey = vec![128u8; (w * h * 4) as usize];
    let background = std::env::temp_dir().join(format!("wgnn-bg-{}.png", std::process::id()));
    image::RgbaImage::from_pixel(7, 5, image::Rgba([10, 200, 30, 255]))
        .save(&background)
        .unwrap();
    let cases: [(String, [u8; 3]); 3] = [
        ("effect=replace background=#ff0000".into(), [255, 0, 0]),
        (
            format!("effect=replace background={}", background.display()),
            [10, 200, 30],
        ),
        ("effect=none".into(), [128, 128, 128]),
    ];
    for (props, want) in cases {
        let mut harness = Harness::new_parse(&format!("wgnnsegment device=gpu {props}"));
        harness.set_src_caps_str(&caps("RGBA", w, h));
        let out = bytes(&harness.push_and_pull(buffer(&grey, 0)).unwrap());
        let far = out
            .chunks_exact(4)
            .filter(|p| (0..3).any(|c| (p[c] as i32 - want[c] as i32).abs() > 8))
            .count();
        assert!(
            far * 20 < (w * h) as usize,
            "{props}: {far} of {} pixels are not {want:?}",
            w * h
        );
    }
    let _ = std::fs::remove_file(background);
}

#[test]
fn bad_models_and_backgrounds_fail_the_state_change_naming_the_file() {
    init();
    let dir = std::env::temp_dir().join(format!("wgnn-seg-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let corrupt = dir.join("corrupt.tflite");
    let mut bytes =
        std::fs::read(common::root().join("assets/models/selfie/selfie_segmentation.tflite"))
            .unwrap();
    bytes.truncate(bytes.len() / 3);
    std::fs::write(&corrupt, bytes).unwrap();
    let esrgan = common::root().join("assets/models/esrgan-slim/x2/model.json");
    let src = "videotestsrc num-buffers=1 ! video/x-raw,width=32,height=24";
    let cases = [
        (
            format!("{src} ! wgnnsegment device=gpu model=/no/such/model.tflite ! fakesink"),
            vec!["property model", "/no/such/model.tflite", "existing"],
        ),
        (
            format!("{src} ! wgnnsegment device=gpu model={} ! fakesink", corrupt.display()),
            vec![corrupt.to_str().unwrap()],
        ),
        (
            format!("{src} ! wgnnsegment device=gpu model={} ! fakesink", esrgan.display()),
            vec!["not a segmentation model"],
        ),
        (
            format!(
                "{src} ! wgnnsegment device=gpu effect=replace background={}/missing.png ! fakesink",
                dir.display()
            ),
            vec!["property background", "missing.png", "PNG or JPEG"],
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

#[test]
fn caps_it_cannot_handle_are_refused_with_a_reason() {
    init();
    let err = gst::parse::launch(
        "videotestsrc num-buffers=1 ! video/x-raw,format=YUY2,width=16,height=16 ! wgnnsegment device=gpu ! fakesink",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("can't handle caps"), "{err}");

    // Output is RGBA: a downstream that wants anything else cannot link.
    let err = gst::parse::launch(
        "videotestsrc num-buffers=1 ! wgnnsegment device=gpu ! video/x-raw,format=NV12 ! fakesink",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("could not link"), "{err}");
}

#[test]
fn resolution_changes_mid_stream_and_timestamps_survive() {
    init();
    let mut harness =
        Harness::new_parse("wgnnupload ! wgnnsegment device=gpu name=seg effect=mask");
    // Named, so that the frames stay textures (a peer that does not name
    // them gets system memory).
    harness.set_sink_caps_str("video/x-raw(memory:WgpuTexture)");
    for (i, (w, h)) in [(32u32, 24u32), (48, 20), (32, 24)].into_iter().enumerate() {
        harness.set_src_caps_str(&caps("RGBA", w, h));
        let out = harness
            .push_and_pull(buffer(&vec![90u8; (w * h * 4) as usize], 100 * i as u64))
            .unwrap();
        assert_eq!(
            out.pts(),
            Some(gst::ClockTime::from_mseconds(100 * i as u64))
        );
        let out_caps = harness.sinkpad().unwrap().current_caps().unwrap();
        let info = gst_video::VideoInfo::from_caps(&out_caps).unwrap();
        assert_eq!((info.width(), info.height()), (w, h), "output {i}");
        let frame = wgnn::gst::frame_meta::frame_of(&out).expect("a texture frame");
        assert_eq!((frame.width(), frame.height()), (w, h));
    }
    assert_eq!(element(&harness, "seg").property::<u64>("frames"), 3);
}

#[test]
fn state_cycles_a_hundred_times_without_growing() {
    init();
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=2 ! video/x-raw,width=24,height=16 ! wgnnupload ! \
         wgnnsegment device=gpu name=seg effect=blur blur-strength=2 ! \
         video/x-raw(memory:WgpuTexture) ! fakesink name=sink",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let bus = pipeline.bus().unwrap();
    let seg = pipeline.by_name("seg").unwrap();
    let started = std::time::Instant::now();
    for cycle in 0..100 {
        pipeline.set_state(gst::State::Playing).unwrap();
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(60),
                &[gst::MessageType::Eos, gst::MessageType::Error],
            )
            .unwrap_or_else(|| panic!("cycle {cycle}: no EOS"));
        assert!(
            matches!(msg.view(), gst::MessageView::Eos(_)),
            "cycle {cycle}: {msg:?}"
        );
        assert_eq!(seg.property::<u64>("frames"), 2, "cycle {cycle}");
        pipeline.set_state(gst::State::Null).unwrap();
    }
    eprintln!("100 cycles in {:.1} s", started.elapsed().as_secs_f64());
    // Each cycle starts afresh: the element's GPU work is all released.
    assert_eq!(seg.property::<u64>("bytes-downloaded"), 0);
}

#[test]
fn latency_query_includes_the_processing_time() {
    init();
    let pipeline = gst::parse::launch(
        "videotestsrc is-live=true num-buffers=6 ! video/x-raw,width=64,height=48,framerate=30/1 ! \
         wgnnsegment device=gpu name=seg ! fakesink sync=false",
    )
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    bus.timed_pop_filtered(gst::ClockTime::from_seconds(60), &[gst::MessageType::Eos])
        .expect("EOS");
    let seg = pipeline
        .downcast_ref::<gst::Bin>()
        .unwrap()
        .by_name("seg")
        .unwrap();
    let src_pad = seg.static_pad("src").unwrap();
    let mut q = gst::query::Latency::new();
    assert!(src_pad.query(&mut q));
    let (live, min, _max) = q.result();
    assert!(live);
    // Upstream (a live 30 fps source) says one frame; ours comes on top.
    assert!(
        min > gst::ClockTime::from_nseconds(1_000_000_000 / 30),
        "min latency {min} should exceed the source's own 33 ms"
    );
    pipeline.set_state(gst::State::Null).unwrap();
}

#[test]
fn several_pipelines_run_at_once_in_one_process() {
    init();
    let threads: Vec<_> = (0..3)
        .map(|i| {
            std::thread::spawn(move || {
                let pipeline = gst::parse::launch(&format!(
                    "videotestsrc num-buffers=4 pattern={i} ! video/x-raw,width={},height=20 ! \
                     wgnnupload ! wgnnsegment device=gpu name=seg effect=mask ! wgnndownload ! fakesink",
                    24 + 8 * i
                ))
                .unwrap();
                pipeline.set_state(gst::State::Playing).unwrap();
                let msg = eos_or_error(&pipeline, 120);
                assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
                let frames = pipeline
                    .downcast_ref::<gst::Bin>()
                    .unwrap()
                    .by_name("seg")
                    .unwrap()
                    .property::<u64>("frames");
                pipeline.set_state(gst::State::Null).unwrap();
                frames
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 4);
    }
}

#[test]
fn gst_debug_wgnn_5_logs_one_line_per_frame() {
    init();
    let log = LogCapture::start("wgnn*", gst::DebugLevel::Debug, "wgnnsegment", "seglogged");
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=3 ! video/x-raw,width=24,height=16 ! wgnnupload ! \
         wgnnsegment device=gpu name=seglogged effect=mask ! \
         video/x-raw(memory:WgpuTexture) ! fakesink",
    )
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(gst::ClockTime::from_seconds(60), &[gst::MessageType::Eos])
        .expect("EOS");
    pipeline.set_state(gst::State::Null).unwrap();
    let lines = log.lines();
    drop(log);
    let per_frame: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("frame ") && l.contains("downloaded 0 bytes"))
        .collect();
    assert_eq!(per_frame.len(), 3, "{lines:#?}");
}

#[test]
fn a_short_system_memory_buffer_is_an_error_naming_its_size() {
    init();
    let mut h = Harness::new_parse("wgnnsegment device=gpu effect=mask");
    let bus = gst::Bus::new();
    h.element().unwrap().set_bus(Some(&bus));
    h.set_src_caps_str(&caps("RGBA", 16, 16));
    assert_eq!(h.push(buffer(&[0; 100], 0)), Err(gst::FlowError::Error));
    let msg = bus
        .pop_filtered(&[gst::MessageType::Error])
        .expect("an error message");
    let gst::MessageView::Error(e) = msg.view() else {
        unreachable!()
    };
    let text = format!("{} {:?}", e.error(), e.debug());
    assert!(
        text.contains("cannot take the input frame")
            && text.contains("plane 0 needs bytes up to 1024")
            && text.contains("the data has 100"),
        "{text}"
    );
    // The element goes on with the next, whole frame, uploaded with its
    // work recorded during the copy.
    let out = h.push_and_pull(buffer(&[0; 16 * 16 * 4], 33)).unwrap();
    assert_eq!(out.size(), 16 * 16 * 4);
}
