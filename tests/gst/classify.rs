//! wgnnclassify as a GStreamer user meets it, with a test model whose scores
//! are its input's mean colour (tests/data/classify): each ROI upstream
//! attached gets the class of its rectangle's colour with the crop's mean as
//! confidence (so the right regions were cropped), on both devices and both
//! memories; the whole frame gets one ROI of its own; ROI metas survive
//! `tee ! queue` on either side; object-class, top-k, threshold and softmax;
//! JSON results; bad input. Plus `Classifier` itself, GPU against CPU.

use crate::common;

use crate::common::harness::{buffer, caps, element, expect_eos, init, launch, start_error};

use gst::prelude::*;
use gst_check::Harness;
use wgnn::gst::roi;
use wgnn::tasks::{Classification, Detection, Rect};

const W: u32 = 64;
const H: u32 = 48;
const GREY: [u8; 3] = [128, 128, 128];

/// Three flat rectangles on grey: (rect, colour, the class it is).
const PATCHES: [([u32; 4], [u8; 3], &str); 3] = [
    ([4, 4, 20, 16], [200, 30, 10], "red"),
    ([30, 6, 24, 14], [20, 180, 40], "green"),
    ([8, 28, 40, 16], [10, 40, 220], "blue"),
];

fn data(name: &str) -> String {
    common::root()
        .join("tests/data/classify")
        .join(name)
        .display()
        .to_string()
}

/// The RGBA frame holding [`PATCHES`].
fn patches_frame() -> Vec<u8> {
    let mut out = Vec::with_capacity((W * H * 4) as usize);
    for y in 0..H {
        for x in 0..W {
            let colour = PATCHES
                .iter()
                .find(|([px, py, pw, ph], _, _)| x >= *px && x < px + pw && y >= *py && y < py + ph)
                .map_or(GREY, |(_, c, _)| *c);
            out.extend_from_slice(&colour);
            out.push(255);
        }
    }
    out
}

fn detection(label: &str, rect: Rect) -> Detection {
    Detection {
        label: label.into(),
        label_id: 0,
        confidence: 0.9,
        rect,
        extras: Default::default(),
        keypoints: Vec::new(),
    }
}

fn rect_of(r: [u32; 4]) -> Rect {
    Rect::new(r[0] as f32, r[1] as f32, r[2] as f32, r[3] as f32)
}

/// A frame buffer at `pts_ms` carrying one ROI per `(label, rect)`.
fn with_rois(bytes: &[u8], pts_ms: u64, rois: &[(&str, Rect)]) -> gst::Buffer {
    let mut b = buffer(bytes, pts_ms);
    {
        let b = b.get_mut().unwrap();
        for (label, rect) in rois {
            roi::attach_detection(b, &detection(label, *rect), W, H, -1);
        }
    }
    b
}

/// One ROI per patch, labelled "face".
fn patch_rois() -> Vec<(&'static str, Rect)> {
    PATCHES
        .iter()
        .map(|(r, _, _)| ("face", rect_of(*r)))
        .collect()
}

/// The mean colour of a patch, 0..1, as the model scores it.
fn means(colour: [u8; 3]) -> [f32; 3] {
    colour.map(|c| f32::from(c) / 255.0)
}

fn assert_class(got: &Classification, label: &str, confidence: f32, what: &str) {
    assert_eq!(got.label, label, "{what}: {got:?}");
    assert!(
        (got.confidence - confidence).abs() < 1e-3,
        "{what}: confidence {} vs the crop's mean {confidence}",
        got.confidence
    );
}

#[test]
fn each_roi_gets_the_colour_of_its_crop_on_both_devices_and_memories() {
    init();
    let frame = patches_frame();
    let cases = [
        ("device=gpu", "", "GPU, system memory"),
        ("device=gpu", "wgnnupload ! ", "GPU, texture memory"),
        ("device=cpu", "", "CPU"),
    ];
    for (device, upload, what) in cases {
        let launch = format!(
            "{upload}wgnnclassify name=c {device} model={} inference-region=roi-list top-k=3",
            data("mean_color.onnx")
        );
        let mut h = Harness::new_parse(&launch);
        h.set_src_caps_str(&caps("RGBA", W, H));
        // The ROIs go on right before wgnnclassify, as an upstream detector
        // on the same memory would attach them.
        element(&h, "c").static_pad("sink").unwrap().add_probe(
            gst::PadProbeType::BUFFER,
            |_, info| {
                if let Some(gst::PadProbeData::Buffer(b)) = &mut info.data {
                    let b = b.make_mut();
                    for (label, rect) in patch_rois() {
                        roi::attach_detection(b, &detection(label, rect), W, H, -1);
                    }
                }
                gst::PadProbeReturn::Ok
            },
        );
        for i in 0..2 {
            let out = h.push_and_pull(buffer(&frame, 33 * i)).unwrap();
            let rois = roi::read(&out, W, H);
            assert_eq!(rois.len(), 3, "{what}: no ROI added or lost");
            for (r, (_, colour, class)) in rois.iter().zip(PATCHES) {
                let m = means(colour);
                let classes = &r.object.classes;
                assert_eq!(classes.len(), 3, "{what}: top-k=3 {classes:?}");
                assert_class(
                    &classes[0],
                    class,
                    m.iter().copied().fold(0.0, f32::max),
                    what,
                );
                // Every channel's mean, best first: the crop was the patch.
                let mut all: Vec<(String, f32)> = ["red", "green", "blue"]
                    .iter()
                    .zip(m)
                    .map(|(l, v)| (l.to_string(), v))
                    .collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1));
                for (c, (label, v)) in classes.iter().zip(&all) {
                    assert_class(c, label, *v, what);
                }
                assert_eq!(r.object.label, "face", "the detection stays");
            }
        }
        let c = element(&h, "c");
        assert_eq!(c.property::<u64>("frames"), 2);
        let (up, down) = (
            c.property::<u64>("bytes-uploaded"),
            c.property::<u64>("bytes-downloaded"),
        );
        eprintln!("{what}: {up} bytes up, {down} bytes down for 2 frames of 3 ROIs");
        if device == "device=cpu" {
            assert_eq!((up, down), (0, 0), "{what}");
        } else {
            // Only the scores come back: 3 regions x 3 floats a frame.
            assert_eq!(down, 2 * 3 * 3 * 4, "{what}");
            let params = 2 * 3 * wgnn::video::Tensorizer::region_upload_bytes();
            let frames = if upload.is_empty() {
                2 * u64::from(W * H * 4)
            } else {
                0
            };
            assert_eq!(up, frames + params, "{what}: region parameters only");
        }
    }
}

#[test]
fn full_frame_mode_attaches_one_roi_covering_the_frame() {
    init();
    let green: Vec<u8> = (0..W * H).flat_map(|_| [20, 180, 40, 255]).collect();
    let dir = common::scratch("classify-full");
    let json = dir.join("results.jsonl");
    let launch = format!(
        "wgnnclassify device=gpu name=c model={} results-location={}",
        data("mean_color.onnx"),
        json.display()
    );
    let mut h = Harness::new_parse(&launch);
    h.set_src_caps_str(&caps("RGBA", W, H));
    let out = h.push_and_pull(buffer(&green, 5)).unwrap();
    let rois = roi::read(&out, W, H);
    assert_eq!(rois.len(), 1);
    assert_eq!(rois[0].pixels, (0, 0, W, H));
    assert_eq!(rois[0].object.label, roi::WHOLE_FRAME);
    assert_eq!(rois[0].object.classes.len(), 1, "top-k defaults to 1");
    assert_class(
        &rois[0].object.classes[0],
        "green",
        180.0 / 255.0,
        "full frame",
    );
    drop(h);
    let text = std::fs::read_to_string(&json).unwrap();
    let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(line["pts"], 5_000_000);
    assert_eq!(line["objects"][0]["label"], "frame");
    assert_eq!(line["objects"][0]["classes"][0]["label"], "green");
    assert_eq!(line["objects"][0]["w"], f64::from(W));
}

#[test]
fn roi_metas_survive_tee_and_queue_on_both_sides() {
    init();
    let frame = patches_frame();
    let desc = format!(
        "appsrc name=src format=time ! tee name=a ! queue ! wgnnclassify device=gpu model={} \
         inference-region=roi-list ! tee name=b ! queue ! appsink name=sink sync=false \
         a. ! queue ! fakesink sync=false b. ! queue ! fakesink sync=false",
        data("mean_color.onnx")
    );
    let pipeline = launch(&desc);
    let sink = pipeline
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let src = pipeline
        .by_name("src")
        .unwrap()
        .downcast::<gst_app::AppSrc>()
        .unwrap();
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, W, H)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .unwrap();
    src.set_caps(Some(&info.to_caps().unwrap()));
    pipeline.set_state(gst::State::Playing).unwrap();
    for i in 0..3 {
        src.push_buffer(with_rois(&frame, 33 * i, &patch_rois()))
            .unwrap();
    }
    src.end_of_stream().unwrap();
    let mut seen = 0;
    while let Ok(sample) = sink.pull_sample() {
        let rois = roi::read(sample.buffer().unwrap(), W, H);
        assert_eq!(rois.len(), 3);
        for (r, (_, _, class)) in rois.iter().zip(PATCHES) {
            assert_eq!(r.object.label, "face");
            assert_eq!(r.object.classes[0].label, class);
        }
        seen += 1;
    }
    expect_eos(&pipeline, 30, "tee pipeline");
    pipeline.set_state(gst::State::Null).unwrap();
    assert_eq!(seen, 3);
}

#[test]
fn object_class_top_k_threshold_and_softmax() {
    init();
    let frame = patches_frame();
    let rois = [
        ("face", rect_of(PATCHES[0].0)),
        ("car", rect_of(PATCHES[1].0)),
        ("face", rect_of(PATCHES[2].0)),
    ];
    let run = |props: &str| {
        let launch = format!(
            "wgnnclassify device=gpu model={} inference-region=roi-list {props}",
            data("mean_color.onnx")
        );
        let mut h = Harness::new_parse(&launch);
        h.set_src_caps_str(&caps("RGBA", W, H));
        let out = h.push_and_pull(with_rois(&frame, 0, &rois)).unwrap();
        roi::read(&out, W, H)
            .into_iter()
            .map(|r| r.object.classes)
            .collect::<Vec<_>>()
    };
    // Only the faces.
    let got = run("object-class=face");
    assert_eq!(got[0][0].label, "red");
    assert!(got[1].is_empty(), "the car is not classified: {:?}", got[1]);
    assert_eq!(got[2][0].label, "blue");

    // Red patch means 0.784, 0.118, 0.039.
    let got = run("top-k=2 threshold=0.1");
    let labels: Vec<&str> = got[0].iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["red", "green"]);
    let got = run("top-k=3 threshold=0.5");
    assert_eq!(got[0].len(), 1);
    assert_eq!(got[0][0].label, "red");
    let got = run("top-k=3 threshold=0.9");
    assert!(got.iter().all(|c| c.is_empty()), "{got:?}");

    // The same scores as logits: softmax per the model-proc, and its labels.
    let dir = common::scratch("classify-softmax");
    let proc = dir.join("softmax.json");
    std::fs::write(
        &proc,
        r#"{"decoder": {"type": "classification", "softmax": true},
            "labels": ["r", "g", "b"]}"#,
    )
    .unwrap();
    let got = run(&format!("model-proc={} top-k=3", proc.display()));
    let m = means(PATCHES[0].1);
    let e: Vec<f32> = m.iter().map(|v| v.exp()).collect();
    let sum: f32 = e.iter().sum();
    assert_class(&got[0][0], "r", e[0] / sum, "softmax");
    assert_class(&got[0][2], "b", e[2] / sum, "softmax");
    let total: f32 = got[0].iter().map(|c| c.confidence).sum();
    assert!((total - 1.0).abs() < 1e-4, "{total}");
}

#[test]
fn a_region_outside_the_frame_and_no_rois_give_correct_results() {
    init();
    let frame = patches_frame();
    let dir = common::scratch("classify-empty");
    let json = dir.join("results.jsonl");
    let launch = format!(
        "wgnnclassify device=gpu model={} inference-region=roi-list results-location={}",
        data("mean_color.onnx"),
        json.display()
    );
    let mut h = Harness::new_parse(&launch);
    h.set_src_caps_str(&caps("RGBA", W, H));
    // No ROI: nothing attached, an empty line of results.
    let out = h.push_and_pull(buffer(&frame, 0)).unwrap();
    assert!(roi::read(&out, W, H).is_empty());
    // One ROI wholly outside the frame: left unclassified, the others not.
    let rois = [
        ("face", Rect::new(100.0, 70.0, 10.0, 10.0)),
        ("face", rect_of(PATCHES[1].0)),
    ];
    let out = h.push_and_pull(with_rois(&frame, 33, &rois)).unwrap();
    let read = roi::read(&out, W, H);
    assert!(read[0].object.classes.is_empty());
    assert_eq!(read[1].object.classes[0].label, "green");
    drop(h);
    let text = std::fs::read_to_string(&json).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["objects"], serde_json::json!([]));
    assert_eq!(lines[1]["objects"].as_array().unwrap().len(), 2);
    assert_eq!(lines[1]["objects"][1]["classes"][0]["label"], "green");
}

#[test]
fn bad_models_labels_and_model_procs_fail_the_state_change_naming_the_cause() {
    init();
    let dir = common::scratch("classify-bad");
    let short = dir.join("two.txt");
    std::fs::write(&short, "red\ngreen\n").unwrap();
    let yolo = dir.join("yolo.json");
    std::fs::write(
        &yolo,
        r#"{"decoder": {"type": "yolo", "layout": "yolov8"}}"#,
    )
    .unwrap();
    let src = "videotestsrc num-buffers=1 ! video/x-raw,width=16,height=16";
    let model = data("mean_color.onnx");
    let cases = [
        (
            format!("{src} ! wgnnclassify device=gpu ! fakesink"),
            "no model".to_string(),
        ),
        (
            format!(
                "{src} ! wgnnclassify device=gpu model={model} labels={} ! fakesink",
                short.display()
            ),
            "has 2 labels, but the model has 3 classes".to_string(),
        ),
        (
            format!(
                "{src} ! wgnnclassify device=gpu model={} ! fakesink",
                data("mean_color_4d.onnx")
            ),
            "output 'scores' has shape [1, 3, 1, 1]; a classifier's scores must be [1, C] or [C]"
                .to_string(),
        ),
        (
            format!(
                "{src} ! wgnnclassify device=gpu model={model} model-proc={} ! fakesink",
                yolo.display()
            ),
            "decoder type 'yolo' does not classify".to_string(),
        ),
    ];
    for (launch, needle) in cases {
        let text = start_error(&launch);
        assert!(text.contains(&needle), "{launch}: {text}");
    }
}

#[test]
fn the_classifier_gives_the_same_classes_on_the_gpu_and_the_cpu() {
    use wgnn::tasks::{Classifier, ClassifyOptions, Device, Labels, ModelProc};
    use wgnn::video::{cpu::CpuFrame, upload_frame, ColorSpec, FrameLayout, TexturePool};

    let gpu = common::own_gpu();
    let path = std::path::PathBuf::from(data("mean_color.onnx"));
    let model = std::sync::Arc::new(wgnn::models::load(&path).unwrap());
    let proc = ModelProc::for_model(&path, None).unwrap().unwrap();
    let options = ClassifyOptions {
        top_k: 3,
        threshold: 0.0,
        ..ClassifyOptions::default()
    };
    let make = |device: &Device| {
        Classifier::new(
            device,
            model.clone(),
            Some(&proc),
            proc.labels().unwrap(),
            options,
            ColorSpec::default(),
        )
        .unwrap()
    };
    let mut on_gpu = make(&Device::Gpu(gpu.clone()));
    let mut on_cpu = make(&Device::Cpu);
    assert_eq!(on_gpu.classes(), 3);
    let bytes: Vec<u8> = (0..W * H * 4).map(|i| (i * 37 % 251) as u8).collect();
    let layout = FrameLayout::packed(wgnn::video::VideoFormat::Rgba, W, H);
    let frame = upload_frame(&gpu, &TexturePool::new(), &layout, &bytes).unwrap();
    let cpu_frame = CpuFrame::from_layout(&layout, &bytes).unwrap();
    let regions = [
        Rect::new(0.0, 0.0, W as f32, H as f32),
        Rect::new(3.5, 7.25, 11.0, 5.5),
        Rect::new(-10.0, 40.0, 30.0, 30.0),
        Rect::new(63.0, 47.0, 1.0, 1.0),
    ];
    // The first call builds the model (weights uploaded); the second is a
    // steady frame.
    on_gpu.classify_gpu(&frame, &regions).unwrap();
    let before = gpu.transfers();
    let (got, moved) = on_gpu.classify_gpu(&frame, &regions).unwrap();
    assert_eq!(
        gpu.transfers().since(&before),
        moved,
        "the stats are what moved"
    );
    assert_eq!(moved.downloads, 1, "one read-back for every region");
    let want = on_cpu.classify_cpu(&cpu_frame, &regions).unwrap();
    assert_eq!(got.len(), regions.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.len(), 3);
        for (a, b) in g.iter().zip(w) {
            assert_eq!(a.label, b.label, "region {i}: {g:?} vs {w:?}");
            assert!((a.confidence - b.confidence).abs() < 1e-4, "region {i}");
        }
    }
    assert!(on_gpu.classify_gpu(&frame, &[]).unwrap().0.is_empty());
    let err = on_cpu
        .classify_cpu(&cpu_frame, &[Rect::new(70.0, 0.0, 5.0, 5.0)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("no area inside the 64x48 frame"), "{err}");
    let err = Classifier::new(
        &Device::Cpu,
        model.clone(),
        None,
        Labels::none(),
        ClassifyOptions {
            top_k: 0,
            threshold: 0.0,
            ..ClassifyOptions::default()
        },
        ColorSpec::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("top-k is 0"), "{err}");
}

#[test]
fn the_documented_line_runs() {
    init();
    // The line in wgnnclassify's documentation, with fewer frames.
    let desc = format!(
        "videotestsrc num-buffers=3 ! video/x-raw,width=320,height=240 ! wgnnupload ! \
         wgnnclassify device=gpu name=c model={} top-k=2 post-messages=true ! fakesink",
        data("mean_color.onnx")
    );
    let pipeline = launch(&desc);
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let mut messages = 0;
    loop {
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(60),
                &[
                    gst::MessageType::Element,
                    gst::MessageType::Eos,
                    gst::MessageType::Error,
                ],
            )
            .expect("EOS within a minute");
        match msg.view() {
            gst::MessageView::Element(e) => {
                let s = e.structure().unwrap();
                if s.name() == wgnn::gst::results::MESSAGE {
                    let json: serde_json::Value =
                        serde_json::from_str(s.get::<&str>("json").unwrap()).unwrap();
                    assert_eq!(json["objects"][0]["classes"].as_array().unwrap().len(), 2);
                    messages += 1;
                }
            }
            gst::MessageView::Eos(_) => break,
            _ => panic!("{desc}: {msg:?}"),
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    assert_eq!(messages, 3, "one results message a frame");
}
