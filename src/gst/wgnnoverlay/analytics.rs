//! What the element draws of `wgnnanalytics`' meta: each line with its
//! name and cumulative counts, each zone as a translucent polygon with its
//! name and count, in palette colours (lines first, zones after them).

use serde_json::Value;

use crate::gst::analytics_meta;
use crate::video::{OverlayItem, OverlayPath};

/// Opacity of a zone's fill: light enough that what is in it shows.
pub const ZONE_FILL: f32 = 0.25;

/// The items of `buf`'s analytics meta; none where it has none.
pub fn items(buf: &gst::BufferRef, colors: &[[u8; 3]]) -> Vec<OverlayItem> {
    let Some(geometry) = analytics_meta::read_geometry(buf) else {
        return Vec::new();
    };
    let members = analytics_meta::read(buf).unwrap_or_default();
    let color = |i: usize| match colors.len() {
        0 => [255, 255, 255],
        n => colors[i % n],
    };
    let count = |member: &str, name: &str, field: &str| {
        let v = members
            .get(member)
            .and_then(|m| m.get(name))
            .and_then(|v| v.get(field));
        v.and_then(Value::as_u64).unwrap_or(0)
    };
    let mut items = Vec::new();
    for (i, line) in geometry.lines.iter().enumerate() {
        let text = format!(
            "{} {} fwd {} bwd",
            line.name,
            count("lines", &line.name, "forward"),
            count("lines", &line.name, "backward")
        );
        items.push(path_item(&line.points, false, color(i), text));
    }
    for (i, zone) in geometry.zones.iter().enumerate() {
        let text = format!("{} {}", zone.name, count("zones", &zone.name, "count"));
        let c = color(geometry.lines.len() + i);
        items.push(path_item(&zone.points, true, c, text));
    }
    items
}

/// A path with its label at its topmost point (the leftmost of several).
fn path_item(points: &[[f64; 2]], closed: bool, color: [u8; 3], text: String) -> OverlayItem {
    let points: Vec<[f32; 2]> = points.iter().map(|p| p.map(|v| v as f32)).collect();
    let top = points
        .iter()
        .min_by(|a, b| a[1].total_cmp(&b[1]).then(a[0].total_cmp(&b[0])))
        .copied()
        .unwrap_or([0.0; 2]);
    OverlayItem {
        rect: [top[0], top[1], 0.0, 0.0],
        color,
        text,
        path: Some(OverlayPath {
            points,
            closed,
            fill: if closed { ZONE_FILL } else { 0.0 },
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::analytics::Config;

    #[test]
    fn lines_and_zones_become_paths_labelled_with_their_counts() {
        gst::init().unwrap();
        let mut buf = gst::Buffer::new();
        let b = buf.get_mut().unwrap();
        assert!(items(b, &[[1, 1, 1]]).is_empty(), "no meta, nothing drawn");
        let config = Config::parse(
            br#"{"lines": [{"name": "door", "points": [[30, 2], [30, 40]]}],
                 "zones": [{"name": "left", "points": [[0, 5], [20, 0], [20, 40], [0, 40]]}]}"#,
        )
        .unwrap();
        let members = serde_json::json!({
            "lines": {"door": {"forward": 3, "backward": 1}},
            "zones": {"left": {"count": 2}},
            "events": [],
        });
        let Value::Object(members) = members else {
            unreachable!()
        };
        analytics_meta::attach(b, &members, &analytics_meta::geometry(&config));
        let got = items(b, &[[1, 1, 1], [2, 2, 2]]);
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].text.as_str(), got[0].color, got[0].rect),
            ("door 3 fwd 1 bwd", [1, 1, 1], [30.0, 2.0, 0.0, 0.0])
        );
        let line = got[0].path.as_ref().unwrap();
        assert_eq!((line.closed, line.points.len()), (false, 2));
        assert_eq!(
            (got[1].text.as_str(), got[1].color, got[1].rect),
            ("left 2", [2, 2, 2], [20.0, 0.0, 0.0, 0.0])
        );
        let zone = got[1].path.as_ref().unwrap();
        assert_eq!(
            (zone.closed, zone.fill, zone.points.len()),
            (true, ZONE_FILL, 4)
        );
    }
}
