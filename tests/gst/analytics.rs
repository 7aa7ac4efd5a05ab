//! wgnnanalytics on a scene whose ground truth the test knows: tracked
//! objects (ROI metas with a `tracking` param, as wgnntrack attaches them)
//! crossing a line both ways and entering and leaving a zone, an untracked
//! object sitting in the zone, one that vanishes; and the bad configs of
//! issue 42, refused naming the file and the entry.

use std::path::{Path, PathBuf};

use gst::prelude::*;
use gst_video::VideoRegionOfInterestMeta;

use crate::common;
use crate::common::harness::{init, launch, wgnn_warnings};

/// The scene's frame size.
pub const SIDE: u32 = 64;
/// Frames of the scene.
pub const FRAMES: u64 = 12;

/// The door: a line down the middle of the frame; the zone: its left half.
pub fn config(dir: &Path) -> PathBuf {
    let path = dir.join("door.json");
    std::fs::write(
        &path,
        r#"{"lines": [{"name": "door", "points": [[32, 0], [32, 64]]}],
            "zones": [{"name": "left", "points": [[0, 0], [32, 0], [32, 64], [0, 64]]}]}"#,
    )
    .unwrap();
    path
}

/// Frame `i`'s objects: (tracker id, box centre x, centre y). Id 1 walks
/// right to left across the door, id 2 left to right, id 3 stays right of
/// it for four frames and vanishes, an untracked object sits on the left.
pub fn scene(i: u64) -> Vec<(Option<i64>, f64, f64)> {
    let i = i as f64;
    let mut objects = vec![
        (Some(1), 58.0 - 4.0 * i, 20.0),
        (Some(2), 6.0 + 4.0 * i, 44.0),
        (None, 16.0, 32.0),
    ];
    if i < 4.0 {
        objects.push((Some(3), 40.0, 56.0));
    }
    objects
}

/// Pushes the scene into the appsrc `src` as empty RGBA frames carrying
/// one 8x8 ROI per object, then EOS; `each` runs after each frame.
pub fn push_scene(pipeline: &gst::Pipeline, mut each: impl FnMut(u64)) {
    let src = pipeline
        .by_name("src")
        .unwrap()
        .downcast::<gst_app::AppSrc>()
        .unwrap();
    src.set_caps(Some(
        &common::harness::caps("RGBA", SIDE, SIDE)
            .parse::<gst::Caps>()
            .unwrap(),
    ));
    src.set_format(gst::Format::Time);
    let pixels = vec![0u8; (SIDE * SIDE * 4) as usize];
    for i in 0..FRAMES {
        let mut buf = common::harness::buffer(&pixels, i * 33);
        let b = buf.get_mut().unwrap();
        for (n, (id, cx, cy)) in scene(i).into_iter().enumerate() {
            let rect = ((cx - 4.0) as u32, (cy - 4.0) as u32, 8, 8);
            let mut meta = VideoRegionOfInterestMeta::add(b, "person", rect);
            meta.set_id(n as i32);
            if let Some(id) = id {
                meta.add_param(
                    gst::Structure::builder("tracking")
                        .field("id", id)
                        .field("age", i as u32)
                        .field("state", "tracked")
                        .build(),
                );
            }
        }
        src.push_buffer(buf).unwrap();
        each(i);
    }
    src.end_of_stream().unwrap();
}

/// The ground truth, by its own arithmetic: cumulative (forward, backward)
/// crossings of the door (forward: right to left, the line running down
/// the screen), the zone's count, and the number of events, per frame.
pub fn truth() -> Vec<((u64, u64), u64, usize)> {
    let mut last: std::collections::HashMap<i64, (bool, bool)> = Default::default();
    let (mut fwd, mut bwd) = (0, 0);
    (0..FRAMES)
        .map(|i| {
            let mut events = 0;
            let mut count = 0;
            for (id, cx, _) in scene(i) {
                let left = cx < 32.0;
                count += u64::from(left);
                let Some(id) = id else { continue };
                let (was_left, was_in) = last.get(&id).copied().unwrap_or((left, false));
                if was_left != left {
                    events += 1;
                    if left {
                        fwd += 1
                    } else {
                        bwd += 1
                    }
                }
                if was_in != left {
                    events += 1;
                }
                last.insert(id, (left, left));
            }
            ((fwd, bwd), count, events)
        })
        .collect()
}

#[test]
fn counts_crossings_zones_and_events_against_the_ground_truth() {
    init();
    let dir = common::scratch("analytics");
    let config = config(&dir);
    let results = dir.join("counts.jsonl");
    let pipeline = launch(&format!(
        "appsrc name=src ! wgnnanalytics name=a config={} results-location={} ! \
         appsink name=sink sync=false",
        config.display(),
        results.display()
    ));
    let sink = pipeline
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    push_scene(&pipeline, |_| {});
    let mut metas = Vec::new();
    while let Ok(sample) = sink.pull_sample() {
        let buf = sample.buffer().unwrap();
        let meta = gst::meta::CustomMeta::from_buffer(buf, "WgnnAnalyticsMeta").unwrap();
        let json: serde_json::Value =
            serde_json::from_str(meta.structure().get::<&str>("json").unwrap()).unwrap();
        metas.push(json);
    }
    let bus = pipeline.bus().unwrap();
    let mut posted = Vec::new();
    while let Some(msg) = bus.pop_filtered(&[gst::MessageType::Element, gst::MessageType::Error]) {
        match msg.view() {
            gst::MessageView::Element(e) => {
                let s = e.structure().unwrap();
                if s.name() == "wgnn-analytics" {
                    posted.push(s.get::<String>("event").unwrap());
                }
            }
            gst::MessageView::Error(e) => panic!("{}", e.error()),
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();

    let truth = truth();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), FRAMES as usize);
    assert_eq!(metas.len(), FRAMES as usize);
    for (i, (line, ((fwd, bwd), count, events))) in lines.iter().zip(&truth).enumerate() {
        assert_eq!(line["lines"]["door"]["forward"], *fwd, "frame {i}: {line}");
        assert_eq!(line["lines"]["door"]["backward"], *bwd, "frame {i}: {line}");
        assert_eq!(line["zones"]["left"]["count"], *count, "frame {i}: {line}");
        assert_eq!(
            line["events"].as_array().unwrap().len(),
            *events,
            "frame {i}"
        );
        assert_eq!(line["width"], SIDE);
        let objects = line["objects"].as_array().unwrap();
        assert_eq!(objects.len(), scene(i as u64).len());
        assert_eq!(objects[0]["id"], 1);
        assert!(objects[2].get("id").is_none(), "untracked: {line}");
        // The frame's analytics travel on the buffer too.
        assert_eq!(metas[i]["lines"], line["lines"]);
        assert_eq!(metas[i]["events"], line["events"]);
    }
    let ((fwd, bwd), _, _) = truth.last().unwrap();
    assert_eq!((*fwd, *bwd), (1, 1), "the scene crosses once each way");
    let total: usize = truth.iter().map(|t| t.2).sum();
    assert_eq!(posted.len(), total, "one bus message per event: {posted:?}");
    assert_eq!(posted.iter().filter(|e| *e == "line-crossed").count(), 2);
    assert!(posted.iter().any(|e| e == "zone-entered") && posted.iter().any(|e| e == "zone-left"));
}

#[test]
fn bad_configs_are_refused_naming_the_file_and_the_entry() {
    init();
    let dir = common::scratch("analytics-bad");
    let cases = [
        ("{ lines: oops", "not an analytics config (JSON)"),
        (
            r#"{"lines": [{"name": "door", "points": [[1, 2]]}]}"#,
            "line 1 ('door') has 1 points; a line has 2",
        ),
        (
            r#"{"zones": [{"name": "bow", "points": [[0, 0], [10, 10], [10, 0], [0, 4]]}]}"#,
            "zone 1 ('bow'): its edges cross each other",
        ),
        (
            r#"{"zones": [{"name": "flat", "points": [[0, 0], [4, 4], [8, 8]]}]}"#,
            "zone 1 ('flat') encloses no area",
        ),
    ];
    let good = config(&dir);
    for (n, (text, cause)) in cases.iter().enumerate() {
        let path = dir.join(format!("bad{n}.json"));
        std::fs::write(&path, text).unwrap();
        // Set while bad: a warning naming the file and the entry.
        let name = format!("badconfig{n}");
        // Installs the collecting handler before the first warning.
        wgnn_warnings(&name);
        let e = gst::ElementFactory::make("wgnnanalytics")
            .name(&name)
            .build()
            .unwrap();
        e.set_property("config", path.display().to_string());
        let warnings = wgnn_warnings(&name);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains(cause) && warnings[0].contains(&path.display().to_string()),
            "{}",
            warnings[0]
        );
        // Bad by the time it starts: the bus error names both, in one line.
        std::fs::copy(&good, &path).unwrap();
        e.set_property("config", path.display().to_string());
        std::fs::write(&path, text).unwrap();
        let pipeline = gst::Pipeline::new();
        let src = gst::ElementFactory::make("videotestsrc").build().unwrap();
        let sink = gst::ElementFactory::make("fakesink").build().unwrap();
        pipeline.add_many([&src, &e, &sink]).unwrap();
        gst::Element::link_many([&src, &e, &sink]).unwrap();
        let _ = pipeline.set_state(gst::State::Playing);
        let msg = common::harness::eos_or_error(&pipeline, 30);
        pipeline.set_state(gst::State::Null).unwrap();
        let gst::MessageView::Error(err) = msg.view() else {
            panic!("{text}: started");
        };
        let message = err.error().to_string();
        let prefix = format!("cannot use config {}: ", path.display());
        assert!(
            message.starts_with(&prefix) && message.contains(cause) && !message.contains('\n'),
            "{text}: {message}"
        );
    }
    assert_eq!(cases.len(), 4);
}
