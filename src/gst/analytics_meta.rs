//! What `wgnnanalytics` leaves on a frame for the elements after it
//! (`wgnnpublish`): a `GstCustomMeta` named [`META`] whose structure
//! [`STRUCTURE`] holds the frame's lines, zones and events as one JSON
//! object in its `json` field (the members docs/RESULTS.md documents), and
//! the lines' and zones' geometry (for `wgnnoverlay`) in its `geometry`
//! field, as the config file writes it. A
//! custom meta travels with the buffer through queues and tees, and any
//! GStreamer application reads it with `gst_buffer_get_custom_meta`.
//!
//! Also the one reading of a tracked object's id: an ROI meta carrying a
//! `tracking` param (as `wgnntrack` attaches it) is tracked, its id the
//! param's `id` (else the meta's own); an ROI without one is untracked.

use gst::meta::CustomMeta;
use gst_video::VideoRegionOfInterestMeta;
use serde_json::{Map, Value};

use crate::tasks::analytics::{Config, Tracked};
use crate::tasks::FrameResults;

/// The custom meta's registered name.
pub const META: &str = "WgnnAnalyticsMeta";
/// The name of its structure.
pub const STRUCTURE: &str = "wgnn-analytics";
/// The ROI param that marks a tracked object.
pub const TRACKING: &str = "tracking";

fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !CustomMeta::is_registered(META) {
            CustomMeta::register(META, &[]);
        }
    });
}

/// The `geometry` field of `config`: its lines and zones as the config
/// file writes them (`{"lines": [{"name", "points"}], "zones": [...]}`).
pub fn geometry(config: &Config) -> String {
    let named =
        |name: &str, points: &[[f64; 2]]| serde_json::json!({"name": name, "points": points});
    serde_json::json!({
        "lines": config.lines.iter().map(|l| named(&l.name, &l.points)).collect::<Vec<_>>(),
        "zones": config.zones.iter().map(|z| named(&z.name, &z.points)).collect::<Vec<_>>(),
    })
    .to_string()
}

/// Attaches (or replaces) the frame's analytics members and the
/// configuration's [`geometry`].
pub fn attach(buf: &mut gst::BufferRef, members: &Map<String, Value>, geometry: &str) {
    register();
    let json = Value::Object(members.clone()).to_string();
    if let Ok(mut meta) = CustomMeta::from_mut_buffer(buf, META) {
        let s = meta.mut_structure();
        s.set("json", json);
        s.set("geometry", geometry);
        return;
    }
    if let Ok(mut meta) = CustomMeta::add(buf, META) {
        let s = meta.mut_structure();
        s.set_name(STRUCTURE);
        s.set("json", json);
        s.set("geometry", geometry);
    }
}

/// The lines and zones on `buf`, where an analytics element left them.
pub fn read_geometry(buf: &gst::BufferRef) -> Option<Config> {
    if !CustomMeta::is_registered(META) {
        return None;
    }
    let meta = CustomMeta::from_buffer(buf, META).ok()?;
    let json = meta.structure().get::<&str>("geometry").ok()?;
    serde_json::from_str(json).ok()
}

/// The analytics members on `buf`, where an analytics element left some.
pub fn read(buf: &gst::BufferRef) -> Option<Map<String, Value>> {
    if !CustomMeta::is_registered(META) {
        return None;
    }
    let meta = CustomMeta::from_buffer(buf, META).ok()?;
    let json = meta.structure().get::<&str>("json").ok()?;
    serde_json::from_str(json).ok()
}

/// The tracker's id of an ROI, `None` where it is untracked.
pub fn track_id(meta: &VideoRegionOfInterestMeta) -> Option<i64> {
    let tracking = meta.params().find(|s| s.has_name(TRACKING))?;
    let id = tracking
        .get::<i32>("id")
        .map(i64::from)
        .or_else(|_| tracking.get::<i64>("id"))
        .or_else(|_| tracking.get::<u32>("id").map(i64::from))
        .or_else(|_| tracking.get::<u64>("id").map(|v| v as i64));
    Some(id.unwrap_or_else(|_| i64::from(meta.id())))
}

/// Every ROI of a `width` x `height` frame as its results list it, and its
/// tracker id (in meta order, as [`crate::gst::roi::read`]).
pub fn objects(
    buf: &gst::BufferRef,
    pts: Option<u64>,
    width: u32,
    height: u32,
) -> (FrameResults, Vec<Option<i64>>) {
    let ids: Vec<Option<i64>> = buf
        .iter_meta::<VideoRegionOfInterestMeta>()
        .map(|m| track_id(&m))
        .collect();
    let results = FrameResults {
        pts,
        ..crate::gst::roi::frame_results(buf, width, height)
    };
    (results, ids)
}

/// The analytics' view of the same objects.
pub fn tracked(results: &FrameResults, ids: &[Option<i64>]) -> Vec<Tracked> {
    results
        .objects
        .iter()
        .zip(ids)
        .map(|(o, id)| Tracked {
            id: *id,
            rect: o.rect,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meta_round_trips_and_ids_come_from_tracking() {
        gst::init().unwrap();
        let mut buf = gst::Buffer::new();
        let b = buf.get_mut().unwrap();
        assert!(read(b).is_none());
        let mut members = Map::new();
        members.insert("events".into(), serde_json::json!([]));
        assert!(read_geometry(b).is_none());
        attach(b, &members, "{}");
        members.insert("zones".into(), serde_json::json!({}));
        let config = Config::parse(
            br#"{"lines": [{"name": "door", "points": [[5, 0], [5, 9]]}],
                 "zones": [{"name": "z", "points": [[0, 0], [4, 0], [4, 4]]}]}"#,
        )
        .unwrap();
        attach(b, &members, &geometry(&config));
        assert_eq!(read(b).unwrap(), members);
        assert_eq!(read_geometry(b).unwrap(), config);
        let copy = buf.copy();
        assert_eq!(read(&copy).unwrap(), members, "copied with the buffer");

        let mut buf = gst::Buffer::new();
        let b = buf.get_mut().unwrap();
        let mut m = VideoRegionOfInterestMeta::add(b, "person", (0, 0, 10, 10));
        m.set_id(3);
        let mut m = VideoRegionOfInterestMeta::add(b, "person", (10, 0, 10, 10));
        m.set_id(4);
        m.add_param(gst::Structure::builder(TRACKING).field("id", 42i64).build());
        let (results, ids) = objects(b, None, 100, 100);
        assert_eq!(ids, vec![None, Some(42)]);
        assert_eq!(tracked(&results, &ids)[1].rect.x, 10.0);
    }
}
