//! Video analytics on tracked objects, without GStreamer: named lines
//! (tripwires) whose crossings by an object's box centre are counted in
//! each direction, named zones whose objects are counted, and the events
//! between frames (line crossed, zone entered, zone left). `wgnnanalytics`
//! is its element; docs/RESULTS.md documents the JSON.

mod config;
mod counter;
mod geometry;

pub use config::{Config, Line, Zone};
pub use counter::{Analytics, Direction, Event, FrameAnalytics, LineCount, Tracked, FORGET_AFTER};
pub use geometry::Point;

use serde_json::{Map, Value};

use crate::tasks::FrameResults;

impl FrameAnalytics {
    /// The frame's `lines`, `zones` and `events` members of the results
    /// schema: `{"lines": {"door": {"forward": n, "backward": m}}, "zones":
    /// {"left": {"count": k}}, "events": [...]}`, lines and zones in the
    /// configuration's order.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut lines = Map::new();
        for (name, c) in &self.lines {
            lines.insert(name.clone(), serde_json::json!(c));
        }
        let mut zones = Map::new();
        for (name, n) in &self.zones {
            zones.insert(name.clone(), serde_json::json!({ "count": n }));
        }
        let mut out = Map::new();
        out.insert("lines".into(), Value::Object(lines));
        out.insert("zones".into(), Value::Object(zones));
        out.insert("events".into(), serde_json::json!(self.events));
        out
    }
}

/// A frame's results as a JSON object (as `results.to_json_line()` writes
/// them), each object with its tracker id (`ids`, in object order; none
/// where untracked).
pub fn frame_object(results: &FrameResults, ids: &[Option<i64>]) -> Map<String, Value> {
    let mut frame: Map<String, Value> =
        serde_json::from_str(&results.to_json_line()).unwrap_or_default();
    if let Some(Value::Array(objects)) = frame.get_mut("objects") {
        for (o, id) in objects.iter_mut().zip(ids) {
            if let (Value::Object(o), Some(id)) = (o, id) {
                o.entry("id").or_insert_with(|| Value::from(*id));
            }
        }
    }
    frame
}

/// One JSON line of `wgnnanalytics`' `results-location`: the frame's
/// objects with their ids ([`frame_object`]) and the analytics' members.
pub fn frame_json(
    results: &FrameResults,
    ids: &[Option<i64>],
    analytics: &FrameAnalytics,
) -> String {
    let mut frame = frame_object(results, ids);
    frame.extend(analytics.to_json());
    Value::Object(frame).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{ObjectResult, Rect};

    #[test]
    fn a_frame_line_has_ids_counts_and_events() {
        let config = Config::parse(
            br#"{"lines": [{"name": "door", "points": [[50, 0], [50, 100]]}],
                 "zones": [{"name": "left", "points": [[0,0],[50,0],[50,100],[0,100]]}]}"#,
        )
        .unwrap();
        let mut a = Analytics::new(config);
        let object = |x: f32| ObjectResult {
            label: "person".into(),
            rect: Rect::new(x, 40.0, 10.0, 10.0),
            ..Default::default()
        };
        let tracked = |x: f32| Tracked {
            id: Some(7),
            rect: Rect::new(x, 40.0, 10.0, 10.0),
        };
        a.frame(&[tracked(60.0)]);
        let f = a.frame(&[tracked(20.0)]);
        let results = FrameResults {
            pts: Some(1),
            width: 100,
            height: 100,
            objects: vec![object(20.0), object(80.0)],
        };
        let line = frame_json(&results, &[Some(7), None], &f);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["objects"][0]["id"], 7);
        assert!(v["objects"][1].get("id").is_none(), "{line}");
        assert_eq!(v["lines"]["door"]["forward"], 1);
        assert_eq!(v["lines"]["door"]["backward"], 0);
        assert_eq!(v["zones"]["left"]["count"], 1);
        assert_eq!(v["events"][0]["type"], "line-crossed");
        assert_eq!(v["events"][1]["type"], "zone-entered");
        assert_eq!(v["width"], 100);
    }
}
