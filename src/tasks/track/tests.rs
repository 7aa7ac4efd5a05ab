//! The trackers on the committed sequences of `tests/data/track/` (made by
//! `make_sequences.py`): their outputs are the committed ones (written again
//! with `WGNN_BLESS=1`), this module's MOTA and IDF1 of those outputs are
//! py-motmetrics' (`motmetrics.json`), and each tracker holds its floors.

use std::path::{Path, PathBuf};

use super::metrics::{read_mot, score, write_mot, MotBox, Scores};
use super::{Tracker, TrackerKind, TrackerOptions};
use crate::tasks::{Detection, Rect};

const SEQUENCES: [&str; 3] = ["crossing", "occlusion", "crowd"];

/// Each run: its name in the data, the tracker, and the detector's
/// interval (3: detections on one frame in three, predictions between).
const RUNS: [(&str, TrackerKind, u32); 3] = [
    ("iou", TrackerKind::Iou, 1),
    ("bytetrack", TrackerKind::ByteTrack, 1),
    ("bytetrack-every3", TrackerKind::ByteTrack, 3),
];

/// (sequence, run, MOTA, IDF1) at least: 0.02 below what they scored
/// (motmetrics.json).
const FLOORS: [(&str, &str, f64, f64); 9] = [
    ("crossing", "iou", 0.91, 0.94),
    ("crossing", "bytetrack", 0.86, 0.92),
    ("crossing", "bytetrack-every3", 0.82, 0.89),
    ("occlusion", "iou", 0.85, 0.64),
    ("occlusion", "bytetrack", 0.84, 0.86),
    ("occlusion", "bytetrack-every3", 0.79, 0.87),
    ("crowd", "iou", 0.87, 0.92),
    ("crowd", "bytetrack", 0.87, 0.92),
    ("crowd", "bytetrack-every3", 0.82, 0.89),
];

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/track")
}

fn read(path: &Path) -> Vec<MotBox> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    read_mot(&text, &path.display().to_string()).unwrap()
}

/// The tracker's output on `detections`, frame after frame up to `frames`.
fn run(kind: TrackerKind, interval: u32, detections: &[MotBox], frames: u32) -> Vec<MotBox> {
    let mut tracker = Tracker::new(TrackerOptions {
        kind,
        ..TrackerOptions::default()
    })
    .unwrap();
    let mut out = Vec::new();
    for frame in 1..=frames {
        let tracks = if (frame - 1) % interval == 0 {
            let dets: Vec<Detection> = detections
                .iter()
                .filter(|d| d.frame == frame)
                .map(|d| Detection {
                    label: "object".into(),
                    label_id: 0,
                    confidence: d.confidence as f32,
                    rect: Rect::new(
                        d.rect[0] as f32,
                        d.rect[1] as f32,
                        d.rect[2] as f32,
                        d.rect[3] as f32,
                    ),
                    keypoints: Vec::new(),
                    extras: Default::default(),
                })
                .collect();
            tracker.update(&dets).into_iter().flatten().collect()
        } else {
            tracker.predict()
        };
        out.extend(tracks.into_iter().map(|t| MotBox {
            frame,
            id: t.id as i64,
            rect: [t.rect.x, t.rect.y, t.rect.w, t.rect.h].map(f64::from),
            confidence: f64::from(t.confidence),
        }));
    }
    out
}

#[test]
fn trackers_score_as_motmetrics_says_and_hold_their_floors() {
    let bless = std::env::var_os("WGNN_BLESS").is_some();
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data().join("motmetrics.json")).unwrap())
            .unwrap();
    let mut ran = 0;
    let mut failures = Vec::new();
    let mut scored: Vec<(&str, &str, Scores)> = Vec::new();
    for seq in SEQUENCES {
        let dir = data().join(seq);
        let truth = read(&dir.join("gt.txt"));
        let detections = read(&dir.join("det.txt"));
        let frames = truth
            .iter()
            .chain(&detections)
            .map(|b| b.frame)
            .max()
            .unwrap();
        for (name, kind, interval) in RUNS {
            let live = write_mot(&run(kind, interval, &detections, frames));
            let path = dir.join(format!("{name}.txt"));
            if bless {
                std::fs::write(&path, &live).unwrap();
            }
            let committed = std::fs::read_to_string(&path).unwrap();
            if live != committed {
                failures.push(format!(
                    "{seq} {name}: the output differs from {} (WGNN_BLESS=1 writes it; then \
                     make_sequences.py --score)",
                    path.display()
                ));
            }
            let s = score(&truth, &read_mot(&committed, name).unwrap());
            let theirs = &reference["sequences"][seq][name];
            for (metric, ours) in [("mota", s.mota), ("idf1", s.idf1)] {
                let want = theirs[metric].as_f64().unwrap_or(f64::NAN);
                let agree = (ours - want).abs() <= 1e-3;
                if !agree {
                    failures.push(format!(
                        "{seq} {name}: {metric} {ours:.4}, motmetrics {want:.4}"
                    ));
                }
            }
            let (_, _, mota, idf1) = FLOORS.iter().find(|f| f.0 == seq && f.1 == name).unwrap();
            if s.mota < *mota || s.idf1 < *idf1 {
                failures.push(format!(
                    "{seq} {name}: MOTA {:.4} IDF1 {:.4}, floors {mota} {idf1}",
                    s.mota, s.idf1
                ));
            }
            eprintln!(
                "{seq:10} {name:17} MOTA {:.4} IDF1 {:.4} switches {} misses {} false {}",
                s.mota, s.idf1, s.switches, s.misses, s.false_positives
            );
            scored.push((seq, name, s));
            ran += 1;
        }
    }
    assert_eq!(ran, SEQUENCES.len() * RUNS.len());
    let idf1 = |seq: &str, name: &str| {
        scored
            .iter()
            .find(|(s, n, _)| *s == seq && *n == name)
            .map(|(_, _, s)| s.idf1)
            .unwrap()
    };
    assert!(
        idf1("occlusion", "bytetrack") > idf1("occlusion", "iou"),
        "ByteTrack's IDF1 on the occlusion sequence is above IoU's"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ids_persist_and_a_missed_frame_keeps_the_id() {
    let det = |x: f32, c: f32| Detection {
        label: "person".into(),
        label_id: 0,
        confidence: c,
        rect: Rect::new(x, 10.0, 20.0, 40.0),
        keypoints: Vec::new(),
        extras: Default::default(),
    };
    for kind in [TrackerKind::Iou, TrackerKind::ByteTrack] {
        let mut t = Tracker::new(TrackerOptions {
            kind,
            ..TrackerOptions::default()
        })
        .unwrap();
        // Tentative on the first frame (min-hits 2), then id 1.
        assert_eq!(t.update(&[det(0.0, 0.9)]), vec![None]);
        let first = t.update(&[det(2.0, 0.9)])[0].clone().unwrap();
        assert_eq!((first.id, first.age, first.state.name()), (1, 2, "tracked"));
        // A missed frame, then the object again: the same id.
        assert!(t.update(&[]).is_empty());
        let again = t.update(&[det(6.0, 0.9)])[0].clone().unwrap();
        assert_eq!((again.id, again.age), (1, 4), "{kind:?}");
        // A skipped frame: predicted where it is going (ByteTrack) or where
        // it was (IoU).
        let p = t.predict();
        assert_eq!((p.len(), p[0].id, p[0].state.name()), (1, 1, "predicted"));
        assert!(p[0].rect.x >= 6.0, "{kind:?}: {:?}", p[0].rect);
        // A second object far away starts its own track.
        let both = t.update(&[det(8.0, 0.9), det(200.0, 0.9)]);
        let both2 = t.update(&[det(10.0, 0.9), det(202.0, 0.9)]);
        assert_eq!(both[0].as_ref().map(|i| i.id), Some(1));
        assert_eq!(
            both2
                .iter()
                .map(|i| i.as_ref().map(|i| i.id))
                .collect::<Vec<_>>(),
            vec![Some(1), Some(2)]
        );
    }
    let bad = TrackerOptions {
        low_threshold: 0.6,
        ..TrackerOptions::default()
    };
    let err = Tracker::new(bad).unwrap_err().to_string();
    assert!(
        err.contains("low-threshold 0.6 is above high-threshold 0.5"),
        "{err}"
    );
}
