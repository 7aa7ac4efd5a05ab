//! wgnndetect as a GStreamer user meets it, on both devices: the bundled
//! face detector's ROI metas against MediaPipe 0.10.14's faces
//! (tests/data/detect/faces), in harnesses and in real pipelines (the sample
//! clip through decodebin), results as JSON lines and bus messages, metas
//! through tee and queues, and bad input failing with one clear line.

use std::path::PathBuf;

use crate::common;
use crate::common::harness::{buffer, caps, element, harness_on_shared_device, init, start_error};
use crate::face_refs::{self, agreement, plausible, RefImage};

use gst::prelude::*;
use gst_check::Harness;
use wgnn::gst::roi;
use wgnn::tasks::ObjectResult;

const DEVICES: [&str; 2] = ["gpu", "cpu"];

/// What the GPU path may read back per frame: the compacted list of
/// objects, never the frame.
const MAX_READ_BACK: u64 = 4096;
/// What the GPU decoder uploads once, when it is set up for a model input
/// size: its parameters and the SSD anchors (896 x 16 bytes for the face
/// detector). Nothing is uploaded per frame besides the frame itself.
const DECODER_SET_UP: u64 = 16 * 1024;

fn face_model() -> PathBuf {
    wgnn::models::bundled("mediapipe/face_detection_short_range.tflite")
}

fn objects(buf: &gst::BufferRef, w: u32, h: u32) -> Vec<ObjectResult> {
    roi::read(buf, w, h).into_iter().map(|r| r.object).collect()
}

/// Pushes `reference`'s image through `launch` (a harness whose element
/// `detect` is wgnndetect, on the shared device) as RGBA and returns the
/// output buffer.
fn push_reference(launch: &str, reference: &RefImage) -> (Harness, gst::Buffer) {
    let mut h = harness_on_shared_device(launch);
    h.set_src_caps_str(&caps("RGBA", reference.width, reference.height));
    let out = h.push_and_pull(buffer(&reference.rgba(), 0)).unwrap();
    (h, out)
}

#[test]
fn roi_metas_carry_mediapipes_faces_on_both_devices() {
    init();
    let mut failures = Vec::new();
    for device in DEVICES {
        for suffix in [
            "astronaut.png",
            "astronaut_100.png",
            "f072.png",
            "no_face.png",
        ] {
            let r = face_refs::reference(suffix);
            let launch = format!(
                "wgnndetect name=detect device={device} model={}",
                face_model().display()
            );
            let (h, out) = push_reference(&launch, &r);
            assert!(
                out.map_readable().unwrap().as_slice() == r.rgba().as_slice(),
                "the frame passes through unchanged"
            );
            let rois = roi::read(&out, r.width, r.height);
            for roi in &rois {
                assert_eq!(roi.parent_id, -1);
                let (x, y, w, hh) = roi.pixels;
                assert!(x + w <= r.width && y + hh <= r.height, "{:?}", roi.pixels);
            }
            match agreement(&objects(&out, r.width, r.height), &r) {
                Ok(line) => eprintln!("wgnndetect {device}: {line}"),
                Err(e) => failures.push(format!("{device}: {e}")),
            }
            let detect = element(&h, "detect");
            let (up, down) = (
                detect.property::<u64>("bytes-uploaded"),
                detect.property::<u64>("bytes-downloaded"),
            );
            assert_eq!(detect.property::<u64>("frames"), 1);
            if device == "gpu" {
                let frame = u64::from(r.width * r.height * 4);
                assert!(
                    up >= frame && up <= frame + DECODER_SET_UP,
                    "{suffix}: one upload of the frame ({frame} bytes) and the decoder's set-up: {up}"
                );
                assert!(
                    down > 0 && down <= MAX_READ_BACK,
                    "{suffix}: read back {down} bytes"
                );
            } else {
                assert_eq!((up, down), (0, 0), "system memory throughout");
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn texture_frames_are_never_downloaded() {
    init();
    let r = face_refs::reference("astronaut.png");
    let launch = format!(
        "wgnnupload ! wgnndetect device=gpu name=detect model={}",
        face_model().display()
    );
    let (h, out) = push_reference(&launch, &r);
    assert!(
        wgnn::gst::frame_meta::frame_of(&out).is_some(),
        "the frame stays a texture"
    );
    plausible(&objects(&out, r.width, r.height), &r).unwrap();
    let detect = element(&h, "detect");
    let up = detect.property::<u64>("bytes-uploaded");
    assert!(
        up <= DECODER_SET_UP,
        "only the decoder's set-up goes up: {up}"
    );
    let down = detect.property::<u64>("bytes-downloaded");
    assert!(down > 0 && down <= MAX_READ_BACK, "read back {down} bytes");
}

/// The JSON line's fields, in the documented order and no others.
fn check_line_form(line: &str) -> serde_json::Value {
    assert!(line.starts_with(r#"{"pts":"#), "{line}");
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec!["height", "objects", "pts", "width"];
    want.sort();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort();
    assert_eq!(keys_sorted, want, "{line}");
    let (width_at, objects_at) = (line.find(r#""width":"#), line.find(r#""objects":"#));
    assert!(
        width_at < objects_at,
        "pts, width, height, objects in order: {line}"
    );
    for o in v["objects"].as_array().unwrap() {
        let mut keys: Vec<&str> = o.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "confidence",
                "h",
                "keypoints",
                "label",
                "label_id",
                "w",
                "x",
                "y"
            ],
            "{line}"
        );
        let points = o["keypoints"].as_array().unwrap();
        assert_eq!(points.len(), 6, "{line}");
        assert!(points.iter().all(|p| p.as_array().unwrap().len() == 2));
    }
    v
}

fn json_objects(v: &serde_json::Value) -> Vec<ObjectResult> {
    let n = |v: &serde_json::Value| v.as_f64().unwrap() as f32;
    v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| ObjectResult {
            id: o["id"].as_u64(),
            label: o["label"].as_str().unwrap().to_string(),
            label_id: o["label_id"].as_u64().unwrap() as usize,
            confidence: n(&o["confidence"]),
            rect: wgnn::tasks::Rect::new(n(&o["x"]), n(&o["y"]), n(&o["w"]), n(&o["h"])),
            extras: Default::default(),
            keypoints: o["keypoints"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| [n(&p[0]), n(&p[1])])
                .collect(),
            classes: Vec::new(),
        })
        .collect()
}

/// The frame number of a 30 fps buffer.
fn frame_index(pts: Option<gst::ClockTime>) -> u64 {
    let ns = pts.expect("decoded frames have timestamps").nseconds();
    (ns * 30 + 500_000_000) / 1_000_000_000
}

#[test]
fn the_sample_clip_through_decodebin_on_both_devices() {
    init();
    let clip = common::root().join("assets/samples/astronaut.mp4");
    let video_refs: Vec<(u64, RefImage)> = face_refs::references()
        .into_iter()
        .filter_map(|r| {
            let n = r
                .image
                .strip_suffix(".png")?
                .rsplit_once("_mp4_f")?
                .1
                .parse()
                .ok()?;
            Some((n, r))
        })
        .collect();
    assert_eq!(video_refs.len(), 6);
    for device in DEVICES {
        let dir = common::scratch(&format!("detect-clip-{device}"));
        let results = dir.join("faces.jsonl");
        // An existing file keeps what it holds: lines are appended.
        std::fs::write(&results, "an earlier line\n").unwrap();
        // The GPU pipeline hands texture frames over; the CPU one decodes
        // into system memory (I420, converted by the element itself).
        let upload = if device == "gpu" { "wgnnupload !" } else { "" };
        let desc = format!(
            "filesrc location={} ! decodebin ! {upload} wgnndetect name=detect device={device} \
             model={} results-location={} post-messages=true ! appsink name=sink sync=false",
            clip.display(),
            face_model().display(),
            results.display()
        );
        let mut seen = Vec::new();
        let mut failures = Vec::new();
        let pipeline = common::harness::pull_samples(&desc, |sample| {
            let buf = sample.buffer().unwrap();
            let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
            let found = objects(buf, info.width(), info.height());
            let n = frame_index(buf.pts());
            if let Some((_, r)) = video_refs.iter().find(|(i, _)| *i == n) {
                // The accuracy against MediaPipe is tests/models/face_detect's
                // subject (on the same frames as PNG); here the element
                // converts the decoder's I420 itself: shown, and checked
                // loosely.
                let line = agreement(&found, r).unwrap_or_else(|e| e);
                eprintln!("clip {device} frame {n}: {line}");
                if let Err(e) = plausible(&found, r) {
                    failures.push(format!("frame {n}: {e}"));
                }
            }
            seen.push((buf.pts().unwrap().nseconds(), found.len()));
        });
        let detect = pipeline.by_name("detect").unwrap();
        let bus = pipeline.bus().unwrap();
        let messages: Vec<gst::Structure> = bus
            .iter_filtered(&[gst::MessageType::Element])
            .filter_map(|m| m.structure().map(|s| s.to_owned()))
            .filter(|s| s.name() == wgnn::gst::results::MESSAGE)
            .collect();
        let frames = detect.property::<u64>("frames");
        let down = detect.property::<u64>("bytes-downloaded");
        let up = detect.property::<u64>("bytes-uploaded");
        common::harness::stop(&pipeline);
        assert!(failures.is_empty(), "{device}:\n{}", failures.join("\n"));
        assert_eq!(seen.len(), 180, "{device}: every frame of the clip");
        assert_eq!(frames, 180);
        // Frames arrive as textures or stay in system memory: only the GPU
        // decoder's one set-up goes up, however many frames pass.
        let most = if device == "gpu" { DECODER_SET_UP } else { 0 };
        assert!(up <= most, "{device}: {up} bytes uploaded over 180 frames");
        if device == "gpu" {
            assert!(
                down > 0 && down <= 180 * MAX_READ_BACK,
                "read back {down} bytes"
            );
        } else {
            assert_eq!(down, 0);
        }

        let text = std::fs::read_to_string(&results).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "an earlier line", "the file's content is kept");
        assert_eq!(lines.len(), 181, "one line per frame appended");
        assert_eq!(messages.len(), 180, "{device}: one bus message per frame");
        for (i, line) in lines[1..].iter().enumerate() {
            let v = check_line_form(line);
            let (pts, count) = seen[i];
            assert_eq!(v["pts"].as_u64(), Some(pts), "{line}");
            assert_eq!(
                (v["width"].as_u64(), v["height"].as_u64()),
                (Some(640), Some(360))
            );
            let listed = json_objects(&v);
            assert_eq!(
                listed.len(),
                count,
                "the line lists the frame's ROIs: {line}"
            );
            let n = frame_index(Some(gst::ClockTime::from_nseconds(pts)));
            if let Some((_, r)) = video_refs.iter().find(|(k, _)| *k == n) {
                plausible(&listed, r).unwrap_or_else(|e| panic!("{device} line {i}: {e}"));
            }
            let m = &messages[i];
            assert_eq!(
                m.get::<&str>("json").unwrap(),
                *line,
                "the message holds the line"
            );
            assert_eq!(m.get::<u32>("objects").unwrap() as usize, count);
            assert_eq!(m.get::<u64>("pts").unwrap(), pts);
            assert_eq!(
                (
                    m.get::<u32>("width").unwrap(),
                    m.get::<u32>("height").unwrap()
                ),
                (640, 360)
            );
        }
    }
}

#[test]
fn roi_metas_survive_tee_and_queues() {
    init();
    let r = face_refs::reference("astronaut.png");
    let desc = format!(
        "appsrc name=src ! wgnndetect device=gpu model={} ! tee name=t \
         t. ! queue ! appsink name=a sync=false t. ! queue ! appsink name=b sync=false",
        face_model().display()
    );
    let pipeline = common::harness::launch(&desc);
    pipeline.set_state(gst::State::Playing).unwrap();
    common::harness::push_rgba_frames(&pipeline, &r.rgba(), r.width, r.height, 3);
    for sink in ["a", "b"] {
        let sink = pipeline
            .by_name(sink)
            .unwrap()
            .downcast::<gst_app::AppSink>()
            .unwrap();
        let mut n = 0;
        while let Ok(sample) = sink.pull_sample() {
            let found = objects(sample.buffer().unwrap(), r.width, r.height);
            plausible(&found, &r).unwrap_or_else(|e| panic!("branch {}: {e}", sink.name()));
            n += 1;
        }
        assert_eq!(n, 3, "branch {}", sink.name());
    }
    common::harness::stop(&pipeline);
}

#[test]
fn an_8k_frame_and_a_tiny_one_give_correct_results() {
    init();
    let big = face_refs::references()
        .into_iter()
        .find(RefImage::is_eight_k)
        .unwrap();
    let tiny = RefImage {
        image: "a flat grey 16x12 frame".into(),
        width: 16,
        height: 12,
        faces: Vec::new(),
    };
    for device in DEVICES {
        let launch = format!(
            "wgnndetect name=detect device={device} model={}",
            face_model().display()
        );
        let (_, out) = push_reference(&launch, &big);
        let found = objects(&out, big.width, big.height);
        eprintln!(
            "wgnndetect {device}: {}",
            agreement(&found, &big).unwrap_or_else(|e| e)
        );
        plausible(&found, &big).unwrap_or_else(|e| panic!("{device}: {e}"));

        let mut h = harness_on_shared_device(&launch);
        h.set_src_caps_str(&caps("RGBA", tiny.width, tiny.height));
        let out = h.push_and_pull(buffer(&[128; 16 * 12 * 4], 0)).unwrap();
        assert_eq!(
            objects(&out, 16, 12),
            [],
            "{device}: no face on a grey frame"
        );
    }
}

/// A folder holding a copy of the face model and `proc` as its model-proc.
fn model_with_proc(name: &str, proc: &serde_json::Value) -> (PathBuf, PathBuf) {
    let dir = common::scratch(&format!("detect-bad-{name}"));
    let model = dir.join("face.tflite");
    std::fs::copy(face_model(), &model).unwrap();
    let json = dir.join("face.json");
    std::fs::write(&json, serde_json::to_string_pretty(proc).unwrap()).unwrap();
    (model, json)
}

fn bundled_proc() -> serde_json::Value {
    let text = std::fs::read_to_string(face_model().with_extension("json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn launch_with(props: &str) -> String {
    format!(
        "videotestsrc num-buffers=2 ! video/x-raw,width=64,height=48 ! wgnndetect device=gpu {props} ! \
         fakesink"
    )
}

fn assert_start_error(props: &str, needles: &[&str]) {
    let text = start_error(&launch_with(props));
    for needle in needles {
        assert!(text.contains(needle), "{props}: '{needle}' not in: {text}");
    }
    assert!(!text.contains(".rs:"), "no source paths: {text}");
}

#[test]
fn bad_model_procs_fail_the_state_change_naming_the_cause() {
    init();
    // A field missing, and one unknown.
    let mut missing = bundled_proc();
    missing["decoder"]
        .as_object_mut()
        .unwrap()
        .remove("num_coords");
    let (model, _) = model_with_proc("missing", &missing);
    assert_start_error(
        &format!("model={}", model.display()),
        &["num_coords", "face.json"],
    );

    let mut unknown = bundled_proc();
    unknown["decoder"]["colour"] = 1.into();
    let (model, _) = model_with_proc("unknown", &unknown);
    assert_start_error(
        &format!("model={}", model.display()),
        &["colour", "face.json"],
    );

    // Decoders that do not fit the model's outputs: say which output.
    let mut swapped = bundled_proc();
    swapped["decoder"]["boxes"] = "classificators".into();
    swapped["decoder"]["scores"] = "regressors".into();
    let (model, _) = model_with_proc("swapped", &swapped);
    assert_start_error(&format!("model={}", model.display()), &["classificators"]);

    let mut no_keypoints = bundled_proc();
    no_keypoints["decoder"]["num_coords"] = 4.into();
    no_keypoints["decoder"]["num_keypoints"] = 0.into();
    let (model, _) = model_with_proc("coords", &no_keypoints);
    assert_start_error(&format!("model={}", model.display()), &["regressors"]);

    let mut anchors = bundled_proc();
    anchors["decoder"]["anchors"]["num_layers"] = 2.into();
    anchors["decoder"]["anchors"]["strides"] = serde_json::json!([8, 16]);
    let (model, _) = model_with_proc("anchors", &anchors);
    assert_start_error(&format!("model={}", model.display()), &["896"]);

    let mut absent = bundled_proc();
    absent["decoder"]["boxes"] = "no_such_output".into();
    let (model, _) = model_with_proc("absent", &absent);
    assert_start_error(&format!("model={}", model.display()), &["no_such_output"]);

    // An explicit model-proc that is not there; none beside the model.
    assert_start_error(
        &format!(
            "model={} model-proc=/no/such/proc.json",
            face_model().display()
        ),
        &["/no/such/proc.json"],
    );
    let dir = common::scratch("detect-bad-none");
    let lone = dir.join("lone.tflite");
    std::fs::copy(face_model(), &lone).unwrap();
    assert_start_error(
        &format!("model={}", lone.display()),
        &["no model-proc", "lone.tflite"],
    );
}

#[test]
fn bad_properties_fail_the_state_change_naming_the_cause() {
    init();
    let model = face_model();
    assert_start_error("", &["no model"]);
    let dir = common::scratch("detect-bad-props");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    assert_start_error(
        &format!("model={} labels={}", model.display(), empty.display()),
        &["empty.txt"],
    );
    assert_start_error(
        &format!("model={} labels=/no/such/labels.txt", model.display()),
        &["/no/such/labels.txt"],
    );
    assert_start_error(
        &format!(
            "model={} results-location=/no/such/dir/out.jsonl",
            model.display()
        ),
        &["/no/such/dir/out.jsonl"],
    );
}

/// `results-location` naming a file the element reads (the model, its
/// model-proc beside it or given, through a link or not) fails the state
/// change naming the property, and leaves that file as it was.
#[test]
fn results_location_refuses_the_files_the_element_reads() {
    init();
    let (model, proc) = model_with_proc("results-clash", &bundled_proc());
    let dir = model.parent().unwrap().to_path_buf();
    let link = dir.join("link.tflite");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&model, &link).unwrap();
    let given = dir.join("given.json");
    std::fs::copy(&proc, &given).unwrap();
    let sizes = |files: &[&PathBuf]| -> Vec<u64> {
        files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .collect()
    };
    let before = sizes(&[&model, &proc, &given]);
    let cases = [
        (
            format!("model={}", model.display()),
            &model,
            "the model file",
        ),
        (
            format!("model={}", model.display()),
            &link,
            "the model file",
        ),
        (
            format!("model={}", model.display()),
            &proc,
            "the model-proc file",
        ),
        (
            format!("model={} model-proc={}", model.display(), given.display()),
            &given,
            "the model-proc file",
        ),
    ];
    for (props, results, needle) in &cases {
        assert_start_error(
            &format!("{props} results-location={}", results.display()),
            &["results-location", needle],
        );
    }
    assert_eq!(sizes(&[&model, &proc, &given]), before, "nothing appended");
    // A file that does not exist yet is fine.
    let fresh = dir.join("fresh.jsonl");
    let _ = std::fs::remove_file(&fresh);
    let pipeline = gst::parse::launch(&launch_with(&format!(
        "model={} results-location={}",
        model.display(),
        fresh.display()
    )))
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = common::harness::eos_or_error(&pipeline, 120);
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
    assert_eq!(
        std::fs::read_to_string(&fresh).unwrap().lines().count(),
        2,
        "one line per frame"
    );
}
