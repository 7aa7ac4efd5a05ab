//! Per-frame analytics over tracked objects: line crossings in each
//! direction, zone counts, and the events between frames.

use std::collections::HashMap;

use serde::Serialize;

use super::config::Config;
use super::geometry::{self, Point};
use crate::tasks::Rect;

/// Frames an id may be missing before it is forgotten: a tracker keeps an
/// id through short gaps, so a crossing or a zone stay is followed across
/// them; an id back after longer counts as new (it may enter a zone again).
pub const FORGET_AFTER: u64 = 30;

/// One object of a frame as the analytics see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tracked {
    /// The tracker's id; `None` for an untracked object (counted in zones,
    /// it cannot cross lines nor make events).
    pub id: Option<i64>,
    pub rect: Rect,
}

/// The direction of a crossing relative to the line's points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Towards the side a quarter turn clockwise on screen from the
    /// direction first point -> second point.
    Forward,
    Backward,
}

/// Something that happened on one frame.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Event {
    LineCrossed {
        line: String,
        id: i64,
        direction: Direction,
    },
    ZoneEntered {
        zone: String,
        id: i64,
    },
    ZoneLeft {
        zone: String,
        id: i64,
    },
}

impl Event {
    /// The event's kind as its `type` field spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::LineCrossed { .. } => "line-crossed",
            Event::ZoneEntered { .. } => "zone-entered",
            Event::ZoneLeft { .. } => "zone-left",
        }
    }
}

/// Cumulative crossings of one line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LineCount {
    pub forward: u64,
    pub backward: u64,
}

/// What one frame gave: every line's cumulative counts and every zone's
/// current count, in the configuration's order, and the frame's events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameAnalytics {
    pub lines: Vec<(String, LineCount)>,
    pub zones: Vec<(String, u64)>,
    pub events: Vec<Event>,
}

/// What is remembered of one id between frames.
#[derive(Clone, Debug)]
struct Memory {
    last_seen: u64,
    /// Per line: the last centre that was off the line, and its side.
    sides: Vec<Option<(Point, bool)>>,
    /// Per zone: inside on the last frame it was seen.
    inside: Vec<bool>,
}

/// The analytics of one stream.
#[derive(Clone, Debug)]
pub struct Analytics {
    config: Config,
    counts: Vec<LineCount>,
    ids: HashMap<i64, Memory>,
    frame: u64,
}

impl Analytics {
    pub fn new(config: Config) -> Analytics {
        Analytics {
            counts: vec![LineCount::default(); config.lines.len()],
            config,
            ids: HashMap::new(),
            frame: 0,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Back to no counts and no ids (a new stream, a flush).
    pub fn reset(&mut self) {
        self.counts
            .iter_mut()
            .for_each(|c| *c = LineCount::default());
        self.ids.clear();
        self.frame = 0;
    }

    /// Counts one frame's objects.
    pub fn frame(&mut self, objects: &[Tracked]) -> FrameAnalytics {
        self.frame += 1;
        let (lines, zones) = (self.config.lines.len(), self.config.zones.len());
        let mut zone_counts = vec![0u64; zones];
        let mut events = Vec::new();
        for o in objects {
            let c = centre(&o.rect);
            let inside: Vec<bool> = self
                .config
                .zones
                .iter()
                .map(|z| geometry::inside(&z.points, c))
                .collect();
            for (n, _) in zone_counts.iter_mut().zip(&inside).filter(|(_, i)| **i) {
                *n += 1;
            }
            let Some(id) = o.id else { continue };
            let memory = self.ids.entry(id).or_insert_with(|| Memory {
                last_seen: 0,
                sides: vec![None; lines],
                inside: vec![false; zones],
            });
            memory.last_seen = self.frame;
            for (l, line) in self.config.lines.iter().enumerate() {
                let (a, b) = (line.points[0], line.points[1]);
                let s = geometry::side(a, b, c);
                if s == 0.0 {
                    continue;
                }
                let now = s > 0.0;
                if let Some((before, was)) = memory.sides[l] {
                    if was != now && geometry::segments_meet(before, c, a, b) {
                        let direction = if now {
                            self.counts[l].forward += 1;
                            Direction::Forward
                        } else {
                            self.counts[l].backward += 1;
                            Direction::Backward
                        };
                        events.push(Event::LineCrossed {
                            line: line.name.clone(),
                            id,
                            direction,
                        });
                    }
                }
                memory.sides[l] = Some((c, now));
            }
            for (z, zone) in self.config.zones.iter().enumerate() {
                let name = zone.name.clone();
                match (memory.inside[z], inside[z]) {
                    (false, true) => events.push(Event::ZoneEntered { zone: name, id }),
                    (true, false) => events.push(Event::ZoneLeft { zone: name, id }),
                    _ => {}
                }
                memory.inside[z] = inside[z];
            }
        }
        let frame = self.frame;
        self.ids.retain(|_, m| frame - m.last_seen <= FORGET_AFTER);
        FrameAnalytics {
            lines: self
                .config
                .lines
                .iter()
                .zip(&self.counts)
                .map(|(l, c)| (l.name.clone(), *c))
                .collect(),
            zones: self
                .config
                .zones
                .iter()
                .zip(zone_counts)
                .map(|(z, n)| (z.name.clone(), n))
                .collect(),
            events,
        }
    }
}

fn centre(r: &Rect) -> Point {
    [
        f64::from(r.x) + f64::from(r.w) / 2.0,
        f64::from(r.y) + f64::from(r.h) / 2.0,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::parse(
            br#"{"lines": [{"name": "door", "points": [[50, 0], [50, 100]]}],
                 "zones": [{"name": "left", "points": [[0,0],[50,0],[50,100],[0,100]]}]}"#,
        )
        .unwrap()
    }

    fn at(id: Option<i64>, cx: f32, cy: f32) -> Tracked {
        Tracked {
            id,
            rect: Rect::new(cx - 5.0, cy - 5.0, 10.0, 10.0),
        }
    }

    #[test]
    fn crossings_are_counted_by_direction_with_events() {
        let mut a = Analytics::new(config());
        // The door runs down the screen: its clockwise side is the left.
        let f = a.frame(&[at(Some(1), 70.0, 50.0), at(None, 20.0, 50.0)]);
        assert_eq!(f.zones, vec![("left".into(), 1)]);
        assert!(f.events.is_empty());
        let f = a.frame(&[at(Some(1), 30.0, 50.0), at(None, 80.0, 50.0)]);
        assert_eq!(
            f.lines[0].1,
            LineCount {
                forward: 1,
                backward: 0
            }
        );
        assert_eq!(
            f.events,
            vec![
                Event::LineCrossed {
                    line: "door".into(),
                    id: 1,
                    direction: Direction::Forward
                },
                Event::ZoneEntered {
                    zone: "left".into(),
                    id: 1
                }
            ]
        );
        // On the line itself: no crossing yet (on the zone's edge, the
        // centre counts as out of it); then back to the right.
        let f = a.frame(&[at(Some(1), 50.0, 50.0)]);
        assert!(
            f.events.iter().all(|e| e.kind() != "line-crossed"),
            "{:?}",
            f.events
        );
        let f = a.frame(&[at(Some(1), 60.0, 50.0)]);
        assert_eq!(
            f.lines[0].1,
            LineCount {
                forward: 1,
                backward: 1
            }
        );
        assert_eq!(f.events.len(), 1, "{:?}", f.events);
        assert_eq!(f.events[0].kind(), "line-crossed");
        // Passing beside the segment's end is no crossing.
        a.frame(&[at(Some(2), 70.0, 150.0)]);
        let f = a.frame(&[at(Some(2), 30.0, 150.0)]);
        assert_eq!(
            f.lines[0].1,
            LineCount {
                forward: 1,
                backward: 1
            }
        );
        // A gap shorter than FORGET_AFTER keeps the id's side.
        for _ in 0..5 {
            a.frame(&[]);
        }
        let f = a.frame(&[at(Some(1), 30.0, 20.0)]);
        assert_eq!(f.lines[0].1.forward, 2);
        a.reset();
        let f = a.frame(&[]);
        assert_eq!(f.lines[0].1, LineCount::default());
    }

    #[test]
    fn events_serialise_with_their_type() {
        let e = Event::LineCrossed {
            line: "door".into(),
            id: 3,
            direction: Direction::Backward,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"line-crossed","line":"door","id":3,"direction":"backward"}"#
        );
    }
}
