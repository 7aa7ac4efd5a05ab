//! Property values as a careless or hostile user sets them: every string
//! property of every element refuses a bad value with a GLib warning naming
//! the element, the property, the value and the accepted form, and the
//! element then fails to start with one bus error naming the property until
//! it gets a good value. Also the one-line wording of model errors, and
//! `device=auto` on a machine whose only GPU is a software one.

use std::path::Path;

use gst::prelude::*;

use crate::common;
use crate::common::harness::{init, wgnn_warnings};

/// One string property of one element, with values it must refuse and one
/// it must take.
struct Case {
    element: &'static str,
    property: &'static str,
    bad: Vec<String>,
    good: String,
    /// Words of the accepted form the warning and the bus error give.
    accepted: &'static str,
}

fn cases(dir: &Path) -> Vec<Case> {
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let png = dir.join("bg.png");
    image::RgbaImage::from_pixel(2, 2, image::Rgba([1, 2, 3, 255]))
        .save(&png)
        .unwrap();
    let png = png.display().to_string();
    let not_png = file("bg.png.txt", "not an image");
    // Header only: 20000x20000 pixels claimed in under 1 KB (a
    // decompression bomb is refused from its header, before decoding).
    let bomb = dir.join("bomb.png");
    common::png_header_only(&bomb, 20000, 20000);
    let bomb = bomb.display().to_string();
    // Opening a FIFO in the setter would hang the application's thread.
    let fifo = dir.join("bg-fifo.png");
    let _ = std::fs::remove_file(&fifo);
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.display().to_string();
    let missing = dir.join("missing.tflite").display().to_string();
    let dir_s = dir.display().to_string();
    let selfie = wgnn::models::bundled("selfie/selfie_segmentation.tflite")
        .display()
        .to_string();
    let labels = file("labels.txt", "a\nb\nc\n");
    let empty_labels = file("empty.txt", "\n\n");
    let bad_json = file("bad.json", "{ not json");
    let proc = common::root()
        .join("tests/data/classify/mean_color.json")
        .display()
        .to_string();
    let results = dir.join("results.jsonl").display().to_string();
    let results_in_missing_dir = dir.join("no/such/dir/r.jsonl").display().to_string();
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut cases = vec![
        Case {
            element: "wgnnsegment",
            property: "background",
            bad: s(&[
                "#12345",
                "#GGGGGG",
                "",
                "no-such-colour",
                &not_png,
                &dir_s,
                &bomb,
                &fifo,
            ]),
            good: png.clone(),
            accepted: "#RRGGBB",
        },
        Case {
            element: "wgnninfer",
            property: "input-range",
            bad: s(&["abc", "1,0", "0,inf", "1", "0,1,2"]),
            good: "-1,1".into(),
            accepted: "min,max",
        },
        Case {
            element: "wgnnoverlay",
            property: "colors",
            bad: s(&["GG0000", "", "FF0000,", "red"]),
            good: "FF0000,00ff00".into(),
            accepted: "RRGGBB",
        },
        Case {
            element: "wgnnanalytics",
            property: "config",
            bad: s(&[&missing, &bad_json, &dir_s]),
            good: common::root()
                .join("tests/data/analytics/door.json")
                .display()
                .to_string(),
            accepted: "JSON file of named lines",
        },
        Case {
            element: "wgnnpublish",
            property: "address",
            bad: s(&["localhost", "host:0", ""]),
            good: "127.0.0.1:1883".into(),
            accepted: "host:port",
        },
        Case {
            element: "wgnnpublish",
            property: "topic",
            bad: s(&["cameras/#", "cameras/+/door", ""]),
            good: "cameras/door".into(),
            accepted: "without wildcards",
        },
        Case {
            element: "wgnnpublish",
            property: "file-location",
            bad: s(&[&dir_s, &results_in_missing_dir]),
            good: results.clone(),
            accepted: "existing directory",
        },
        Case {
            element: "wgnnpublish",
            property: "client-id",
            bad: vec!["c".repeat(70_000)],
            good: "camera-1".into(),
            accepted: "65535 bytes",
        },
        Case {
            element: "wgnnclassify",
            property: "object-class",
            bad: s(&["   ", "fa\u{1}ce"]),
            good: "face".into(),
            accepted: "ROI label",
        },
    ];
    // Every element of the table with the property: a new element's model,
    // model-proc, labels and results-location are refused alike.
    let having = |property: &str| -> Vec<&'static str> {
        wgnn::gst::elements::ELEMENTS
            .iter()
            .filter(|e| e.has_property(property))
            .map(|e| e.name)
            .collect()
    };
    for element in having("model") {
        cases.push(Case {
            element,
            property: "model",
            bad: s(&[&missing, &dir_s]),
            good: selfie.clone(),
            accepted: "existing",
        });
    }
    for element in having("model-proc") {
        cases.push(Case {
            element,
            property: "model-proc",
            bad: s(&[&missing, &bad_json, &dir_s]),
            good: proc.clone(),
            accepted: "model-proc JSON",
        });
    }
    for element in having("labels") {
        cases.push(Case {
            element,
            property: "labels",
            bad: s(&[&missing, &empty_labels, &dir_s]),
            good: labels.clone(),
            accepted: "one class name per line",
        });
    }
    for element in having("results-location") {
        cases.push(Case {
            element,
            property: "results-location",
            bad: s(&[&dir_s, &results_in_missing_dir]),
            good: results.clone(),
            accepted: "existing directory",
        });
    }
    cases
}

/// Starts `videotestsrc ! element ! fakesink` and returns the error it
/// posts (the domain error and the debug text), or `None` at EOS.
fn start_result(element: &gst::Element) -> Option<(gst::glib::Error, String)> {
    let pipeline = gst::Pipeline::new();
    let src = gst::ElementFactory::make("videotestsrc")
        .property("num-buffers", 1)
        .build()
        .unwrap();
    let sink = gst::ElementFactory::make("fakesink").build().unwrap();
    pipeline.add_many([&src, element, &sink]).unwrap();
    gst::Element::link_many([&src, element, &sink]).unwrap();
    let _ = pipeline.set_state(gst::State::Playing);
    let msg = common::harness::eos_or_error(&pipeline, 120);
    pipeline.set_state(gst::State::Null).unwrap();
    pipeline.remove_many([&src, element, &sink]).unwrap();
    match msg.view() {
        gst::MessageView::Error(e) => Some((
            e.error(),
            e.debug().map(|d| d.to_string()).unwrap_or_default(),
        )),
        _ => None,
    }
}

/// The error `element` posts when started; it must not start.
fn start_error_of(element: &gst::Element) -> (gst::glib::Error, String) {
    start_result(element).unwrap_or_else(|| panic!("{}: started without an error", element.name()))
}

/// One line, no Rust source paths, no Debug formatting.
fn assert_one_clean_line(message: &str) {
    assert!(!message.contains('\n'), "one line: {message:?}");
    assert!(!message.contains(".rs"), "no source paths: {message:?}");
    assert!(
        !message.contains("{{closure}}") && !message.contains("Error {"),
        "{message:?}"
    );
}

#[test]
fn every_string_property_refuses_bad_values_until_set_to_a_good_one() {
    init();
    let dir = common::scratch("property-refusals");
    let cases = cases(&dir);
    // 9 of single elements, `model` of 5 elements, 2 files of 2,
    // results-location of 4 (wgnntrack's among them).
    assert_eq!(cases.len(), 22, "cases of this table");
    for (i, case) in cases.into_iter().enumerate() {
        let name = format!("refusing{i}");
        let element = gst::ElementFactory::make(case.element)
            .name(&name)
            .build()
            .unwrap();
        let before = element.property_value(case.property);
        for (j, bad) in case.bad.iter().enumerate() {
            let what = format!("{} {}={bad:?}", case.element, case.property);
            let seen = wgnn_warnings(&name).len();
            element.set_property(case.property, bad);
            let warnings = wgnn_warnings(&name);
            assert_eq!(
                warnings.len(),
                seen + 1,
                "{what}: one warning: {warnings:#?}"
            );
            let w = warnings.last().unwrap();
            let echoed = wgnn::gst::property::shorten(bad);
            for needle in [case.element, case.property, &echoed, case.accepted] {
                assert!(
                    w.contains(needle),
                    "{what}: {needle:?} not in the warning {w:?}"
                );
            }
            assert_one_clean_line(w);
            // The element keeps the value it had.
            assert_eq!(
                element.property_value(case.property).serialize().ok(),
                before.serialize().ok(),
                "{what}: the old value stays"
            );
            if j == 0 {
                let (error, debug) = start_error_of(&element);
                let message = error.message().to_string();
                assert!(
                    message.contains(&format!("property {}", case.property))
                        && message.contains(case.accepted),
                    "{what}: the bus error names the property and the accepted form: \
                     {message:?} ({debug})"
                );
                assert_one_clean_line(&message);
            }
        }
        // A good value is taken, without a warning, and clears the refusal.
        let seen = wgnn_warnings(&name).len();
        element.set_property(case.property, &case.good);
        assert_eq!(
            wgnn_warnings(&name).len(),
            seen,
            "{}: {}",
            case.element,
            case.good
        );
        let now: Option<String> = element.property(case.property);
        assert!(
            now.as_deref().is_some_and(|v| {
                v.eq_ignore_ascii_case(&case.good) || case.property == "background"
            }),
            "{} {} reads back {now:?}",
            case.element,
            case.property
        );
        if case.property != "model" {
            // Start may still fail (no model set here), but not for this
            // property.
            let pipeline_error = start_result(&element)
                .map(|(e, _)| e.message().to_string())
                .unwrap_or_default();
            assert!(
                !pipeline_error.contains(&format!("property {}", case.property)),
                "{}: still refused after a good value: {pipeline_error}",
                case.element
            );
        }
    }
}

/// A 10 MB value is echoed cut to its start and end around an ellipsis,
/// in the warning and in the bus error, for a parser that quotes the value
/// in its cause (colors) and one that does not (model).
#[test]
fn a_huge_value_is_echoed_cut() {
    init();
    let max = wgnn::gst::property::ECHO_CHARS;
    for (element, property, value) in [
        ("wgnnoverlay", "colors", "A".repeat(10 << 20)),
        (
            "wgnninfer",
            "model",
            format!("/{}/x.onnx", "d".repeat(10 << 20)),
        ),
    ] {
        let name = format!("huge{property}");
        let e = gst::ElementFactory::make(element)
            .name(&name)
            .build()
            .unwrap();
        e.set_property(property, &value);
        let warnings = wgnn_warnings(&name);
        assert_eq!(warnings.len(), 1, "{element}: {warnings:.200?}");
        let w = &warnings[0];
        assert!(w.len() < 1000, "{element}: {} bytes: {w:.300}", w.len());
        let cut = wgnn::gst::property::shorten(&value);
        assert_eq!(cut.chars().count(), max);
        assert!(w.contains(&*cut) && w.contains('…'), "{element}: {w}");
        let (error, _) = start_error_of(&e);
        let message = error.message().to_string();
        assert!(
            message.contains(&*cut) && message.len() < 1000,
            "{element}: {message:.300}"
        );
    }
}

#[test]
fn a_good_value_after_a_bad_one_lets_the_element_run() {
    init();
    assert!(
        wgnn_warnings("goodafterbad").is_empty(),
        "collecting from now on"
    );
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=1 ! video/x-raw,width=16,height=16 ! \
         wgnnsegment name=goodafterbad device=cpu effect=replace background=#12345 ! fakesink",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    assert_eq!(wgnn_warnings("goodafterbad").len(), 1);
    let seg = pipeline.by_name("goodafterbad").unwrap();
    seg.set_property("background", "#102030");
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = common::harness::eos_or_error(&pipeline, 60);
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
    assert_eq!(seg.property::<String>("background"), "#102030ff");
}

/// The processing elements' start error for `model` (set while the file
/// exists; `after_set` may then spoil it).
fn model_error(
    element: &str,
    model: &Path,
    after_set: impl FnOnce(),
) -> (gst::glib::Error, String) {
    let e = gst::ElementFactory::make(element)
        .property("device", wgnn::gst::device_choice::DeviceChoice::Cpu)
        .property("model", model.display().to_string())
        .build()
        .unwrap();
    after_set();
    start_error_of(&e)
}

#[test]
fn model_errors_are_one_line_naming_the_file_once_and_the_cause() {
    init();
    let dir = common::scratch("model-errors");
    let selfie = wgnn::models::bundled("selfie/selfie_segmentation.tflite");
    let bytes = std::fs::read(&selfie).unwrap();
    let vanished = dir.join("vanished.tflite");
    let corrupt = dir.join("corrupt.tflite");
    std::fs::write(&corrupt, &bytes[..bytes.len() / 3]).unwrap();
    let esrgan = wgnn::models::bundled("esrgan-slim/x2/model.json");
    for element in ["wgnnsegment", "wgnnsuperres", "wgnninfer"] {
        // Missing: the file was there when the property was set.
        std::fs::write(&vanished, &bytes).unwrap();
        let (error, debug) = model_error(element, &vanished, || {
            std::fs::remove_file(&vanished).unwrap()
        });
        let message = error.message().to_string();
        assert_eq!(
            message,
            format!("cannot load model {}: no such file", vanished.display()),
            "{element} ({debug})"
        );
        assert_eq!(
            error.kind::<gst::ResourceError>(),
            Some(gst::ResourceError::NotFound)
        );

        // Corrupt: a format error, the loader's cause after the path.
        let (error, debug) = model_error(element, &corrupt, || {});
        let message = error.message().to_string();
        assert!(
            message.starts_with(&format!("cannot load model {}: ", corrupt.display())),
            "{element}: {message:?} ({debug})"
        );
        assert_eq!(
            message.matches(corrupt.to_str().unwrap()).count(),
            1,
            "{message}"
        );
        assert_eq!(
            error.kind::<gst::StreamError>(),
            Some(gst::StreamError::Format)
        );
        assert_one_clean_line(&message);
    }
    // A model that loads but is not for the element: a settings error.
    for (element, model) in [("wgnnsegment", &esrgan), ("wgnnsuperres", &selfie)] {
        let (error, debug) = model_error(element, model, || {});
        let message = error.message().to_string();
        assert!(
            message.starts_with(&format!("cannot load model {}: ", model.display())),
            "{element}: {message:?} ({debug})"
        );
        assert_eq!(
            message.matches(model.to_str().unwrap()).count(),
            1,
            "{message}"
        );
        assert_eq!(
            error.kind::<gst::LibraryError>(),
            Some(gst::LibraryError::Settings)
        );
        assert_one_clean_line(&message);
    }
}

/// Runs `launch` to EOS and returns its element `name`'s counters (frames,
/// bytes uploaded) and the bus warnings.
fn run_collecting_warnings(launch: &str, name: &str) -> (u64, u64, Vec<String>) {
    let pipeline = gst::parse::launch(launch)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let mut warnings = Vec::new();
    loop {
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(120),
                &[
                    gst::MessageType::Warning,
                    gst::MessageType::Error,
                    gst::MessageType::Eos,
                ],
            )
            .unwrap_or_else(|| panic!("{launch}: no EOS"));
        match msg.view() {
            gst::MessageView::Warning(w) => warnings.push(w.error().message().to_string()),
            gst::MessageView::Eos(_) => break,
            other => panic!("{launch}: {other:?}"),
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let e = pipeline.by_name(name).unwrap();
    (e.property("frames"), e.property("bytes-uploaded"), warnings)
}

/// On a machine whose only GPU is a software one (forced in a child
/// process with `WGPU_ADAPTER_NAME=llvmpipe`: lavapipe, as in CI),
/// `device=auto` runs on the CPU and says so once; `device=gpu` still runs
/// on it; and `auto` next to an element that takes texture memory only
/// (wgnnupload) keeps the GPU, or the pipeline could not link.
#[test]
fn device_auto_picks_the_cpu_when_the_only_gpu_is_software() {
    if !common::is_child() {
        let text = common::run_in_child(
            module_path!(),
            "device_auto_picks_the_cpu_when_the_only_gpu_is_software",
            &[("WGPU_ADAPTER_NAME", "llvmpipe")],
            &[],
        );
        assert!(text.contains("child: auto took the CPU"), "{text}");
        return;
    }
    init();
    assert!(
        common::gpu().is_software(),
        "WGPU_ADAPTER_NAME=llvmpipe opens lavapipe"
    );
    let src = "videotestsrc num-buffers=2 ! video/x-raw,width=32,height=24";
    let software = |w: &[String]| {
        w.iter()
            .filter(|w| w.contains("only a software GPU") && w.contains("device=gpu forces it"))
            .count()
    };

    let (frames, up, warnings) = run_collecting_warnings(
        &format!("{src} ! wgnnsegment name=s device=auto effect=mask ! fakesink"),
        "s",
    );
    assert_eq!(
        (frames, up),
        (2, 0),
        "auto ran on the CPU: nothing uploaded"
    );
    assert_eq!(software(&warnings), 1, "{warnings:?}");
    assert_one_clean_line(&warnings[0]);

    let (frames, up, warnings) = run_collecting_warnings(
        &format!("{src} ! wgnnsegment name=s device=gpu effect=mask ! fakesink"),
        "s",
    );
    assert_eq!(frames, 2);
    assert!(up > 0, "device=gpu ran on the GPU: frames were uploaded");
    assert_eq!(software(&warnings), 0, "{warnings:?}");

    let (frames, _, warnings) = run_collecting_warnings(
        &format!(
            "{src} ! wgnnupload ! wgnnsegment name=s device=auto effect=mask ! wgnndownload ! \
             fakesink"
        ),
        "s",
    );
    assert_eq!(frames, 2, "auto beside texture memory runs on the GPU");
    assert_eq!(software(&warnings), 0, "{warnings:?}");

    // A chain after wgnnupload stays on the GPU as a whole: the last
    // element starts first, with no texture-only neighbour, yet on the CPU
    // it would make the first one download every frame.
    let pipeline = gst::parse::launch(&format!(
        "{src} ! wgnnupload ! wgnnsegment name=s effect=mask ! wgnnsuperres name=r ! \
         wgnndownload ! fakesink"
    ))
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = common::harness::eos_or_error(&pipeline, 300);
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
    let bin = pipeline.downcast_ref::<gst::Bin>().unwrap();
    for name in ["s", "r"] {
        let e = bin.by_name(name).unwrap();
        assert_eq!(e.property::<u64>("frames"), 2, "{name}");
        assert_eq!(
            e.property::<u64>("bytes-downloaded"),
            0,
            "{name} stayed on the GPU"
        );
    }

    // The analysers share the choice.
    let infer = common::root().join("tests/data/classify/mean_color.onnx");
    let (frames, up, warnings) = run_collecting_warnings(
        &format!(
            "{src} ! wgnninfer name=i model={} ! fakesink",
            infer.display()
        ),
        "i",
    );
    assert_eq!((frames, up), (2, 0));
    assert_eq!(software(&warnings), 1, "{warnings:?}");
    eprintln!("child: auto took the CPU");
}

/// A property read only when the element starts (`mutable_ready`) is
/// refused while the element runs, with a GLib warning naming the element,
/// the property and the state, and reads back the value it runs with; in
/// READY it is taken again. One rule for the base class's properties and
/// the element's own.
#[test]
fn start_time_properties_are_refused_while_playing() {
    init();
    let name = "playingdetect";
    let model = wgnn::models::bundled("mediapipe/face_detection_short_range.tflite");
    let dir = common::scratch("refused-while-playing");
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc is-live=true ! video/x-raw,width=64,height=48,framerate=10/1 ! \
         wgnndetect name={name} device=cpu model={} ! fakesink",
        model.display()
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let element = pipeline.by_name(name).unwrap();
    let other = dir.join("other.tflite");
    std::fs::copy(&model, &other).unwrap();
    let results = dir.join("results.jsonl").display().to_string();
    let other = other.display().to_string();
    let values = [
        ("model", other.as_str()),
        ("device", "gpu"),
        ("precision", "f32"),
        ("results-location", results.as_str()),
        ("batch-size", "2"),
        ("threshold", "0.9"),
    ];
    pipeline.set_state(gst::State::Playing).unwrap();
    let (done, state, _) = pipeline.state(gst::ClockTime::from_seconds(120));
    assert_eq!(
        (done, state),
        (Ok(gst::StateChangeSuccess::Success), gst::State::Playing)
    );
    let mut refused = 0;
    for (property, value) in &values {
        let before = element.property_value(property).serialize().ok();
        let seen = wgnn_warnings(name).len();
        element.set_property_from_str(property, value);
        let warnings = wgnn_warnings(name);
        assert_eq!(
            warnings.len(),
            seen + 1,
            "{property}: one warning: {warnings:#?}"
        );
        let w = warnings.last().unwrap();
        for needle in ["wgnndetect", property, "PLAYING"] {
            assert!(w.contains(needle), "{property}: {needle:?} not in {w:?}");
        }
        assert_one_clean_line(w);
        assert_eq!(
            element.property_value(property).serialize().ok(),
            before,
            "{property}: reads back the value it runs with"
        );
        refused += 1;
    }
    assert_eq!(refused, values.len());
    // One that may change while playing is taken.
    let seen = wgnn_warnings(name).len();
    element.set_property("profile", true);
    assert_eq!(wgnn_warnings(name).len(), seen);
    assert!(element.property::<bool>("profile"));
    // Once stopped, the same values are taken without a word.
    pipeline.set_state(gst::State::Ready).unwrap();
    let seen = wgnn_warnings(name).len();
    element.set_property("threshold", 0.9f64);
    element.set_property_from_str("device", "gpu");
    assert_eq!(wgnn_warnings(name).len(), seen);
    assert_eq!(element.property::<f64>("threshold"), 0.9);
    pipeline.set_state(gst::State::Null).unwrap();
}
