use serde_json::json;

use super::*;

/// The metadata Ultralytics 8.4.190 writes (a detect export, nms=True).
fn metadata(task: &str, nms: &str, end2end: &str) -> Vec<(String, String)> {
    [
        ("author", "Ultralytics"),
        ("stride", "32"),
        ("task", task),
        ("batch", "1"),
        ("imgsz", "[64, 96]"),
        ("names", r#"{0: 'person', 1: "it's", 2: 'say "hi"'}"#),
        (
            "args",
            &format!("{{'batch': 1, 'nms': {nms}, 'dynamic': False, 'opset': 17}}"),
        ),
        ("end2end", end2end),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[test]
fn an_ultralytics_export_implies_its_model_proc() {
    let proc = implied(&metadata("detect", "None", "False"))
        .unwrap()
        .unwrap();
    assert_eq!(
        proc,
        json!({
            "input": {"range": [0, 1], "color": "rgb", "resize": "letterbox",
                      "pad": [114, 114, 114], "size": [96, 64]},
            "decoder": {"type": "yolo", "layout": "yolov8", "task": "detect"},
            "labels": ["person", "it's", "say \"hi\""],
            "threshold": 0.25,
            "iou_threshold": 0.45,
        })
    );
    ModelProc::from_json(Path::new("m.onnx"), proc).unwrap();
    for (task, nms, end2end, layout) in [
        ("detect", "True", "False", "end2end"),
        ("pose", "False", "True", "end2end"),
        ("segment", "None", "False", "yolov8"),
    ] {
        let proc = implied(&metadata(task, nms, end2end)).unwrap().unwrap();
        assert_eq!(proc["decoder"]["layout"], layout, "{task} {nms} {end2end}");
        assert_eq!(proc["decoder"]["task"], task);
    }
    let classify = implied(&metadata("classify", "None", "False"))
        .unwrap()
        .unwrap();
    assert_eq!(classify["decoder"], json!({"type": "classification"}));
    assert_eq!(classify["input"]["resize"], "crop");
    // Another exporter's metadata implies nothing.
    let other = vec![("names".to_string(), "{0: 'a'}".to_string())];
    assert_eq!(implied(&other).unwrap(), None);
}

#[test]
fn bad_metadata_is_refused_in_one_line() {
    let with = |key: &str, value: &str| {
        let mut m = metadata("detect", "None", "False");
        m.iter_mut().find(|(k, _)| k == key).unwrap().1 = value.to_string();
        implied(&m).unwrap_err()
    };
    for (key, value, needle) in [
        (
            "names",
            "{0: 'a', 2: 'b'}",
            "names: class ids must be 0 to 1; 2 is not",
        ),
        ("names", "{0: 'a', 0: 'b'}", "names: class 0 is named twice"),
        (
            "names",
            "{0: 'a', 1: 2}",
            "names: the name of class 1 is not a string",
        ),
        ("names", "{'a': 'b'}", "names: a key is not a class id"),
        ("names", "['a', 'b']", "names: not a dict"),
        ("names", "{}", "names: no classes"),
        (
            "names",
            "{0: 'a'",
            "names: expected ',' or '}' at character 7",
        ),
        ("imgsz", "[64]", "imgsz: not an integer or a list of two"),
        ("imgsz", "[0, 64]", "imgsz: 0 is not an image size"),
        (
            "imgsz",
            "[64.5, 64]",
            "imgsz: 64.5 is not a whole number of pixels",
        ),
        ("task", "depth", "task 'depth' is not one wgnn reads"),
        ("args", "{'nms': Tru}", "args: 'Tru' is not a literal"),
    ] {
        let err = with(key, value);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{key}={value}: {err}");
    }
}

#[test]
fn a_model_proc_file_overrides_field_by_field() {
    let mut proc = implied(&metadata("detect", "None", "False"))
        .unwrap()
        .unwrap();
    overlay(
        &mut proc,
        json!({"input": {"pad": [0, 0, 0]}, "threshold": 0.5, "labels": "coco.txt",
               "decoder": {"type": "yolo", "layout": "yolov5"}}),
    );
    assert_eq!(
        proc["input"],
        json!({"range": [0, 1], "color": "rgb", "resize": "letterbox",
               "pad": [0, 0, 0], "size": [96, 64]})
    );
    assert_eq!(proc["threshold"], 0.5);
    assert_eq!(proc["iou_threshold"], 0.45);
    assert_eq!(proc["labels"], "coco.txt");
    // A decoder replaces the implied one whole.
    assert_eq!(proc["decoder"], json!({"type": "yolo", "layout": "yolov5"}));
}
