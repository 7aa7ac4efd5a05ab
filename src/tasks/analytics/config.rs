//! `wgnnanalytics`' configuration file: named lines and zones in frame
//! pixels, checked when read so that a bad entry is named at start.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::geometry::{self, Point};
use crate::error::{Error, Result};

/// A tripwire: crossings of its segment by an object's box centre are
/// counted in each direction.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    pub name: String,
    /// Exactly two points: the line runs from the first to the second.
    pub points: Vec<Point>,
}

/// A polygon whose objects (by box centre) are counted.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zone {
    pub name: String,
    /// Three or more corners, in order; the polygon closes itself.
    pub points: Vec<Point>,
}

/// The file as a whole.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub lines: Vec<Line>,
    #[serde(default)]
    pub zones: Vec<Zone>,
}

impl Config {
    /// Reads and checks the file at `path`; the error names the file and
    /// the entry at fault.
    pub fn load(path: &Path) -> Result<Config> {
        let file_error = |message: String| Error::File {
            path: PathBuf::from(path),
            message,
        };
        let bytes = crate::files::read_regular(path)
            .map_err(|e| file_error(format!("cannot read the analytics config: {e}")))?;
        Config::parse(&bytes).map_err(file_error)
    }

    /// Parses and checks a configuration; the error names the entry.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Config, String> {
        let config: Config = serde_json::from_slice(bytes)
            .map_err(|e| format!("not an analytics config (JSON): {e}"))?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> std::result::Result<(), String> {
        if self.lines.is_empty() && self.zones.is_empty() {
            return Err("it has no lines and no zones".into());
        }
        for (i, line) in self.lines.iter().enumerate() {
            let what = format!("line {} ('{}')", i + 1, line.name);
            check_name(&what, &line.name)?;
            check_points(&what, &line.points)?;
            if line.points.len() != 2 {
                return Err(format!(
                    "{what} has {} points; a line has 2",
                    line.points.len()
                ));
            }
            if line.points[0] == line.points[1] {
                return Err(format!("{what}: its two points are the same"));
            }
            if self.lines[..i].iter().any(|l| l.name == line.name) {
                return Err(format!("{what}: another line has that name"));
            }
        }
        for (i, zone) in self.zones.iter().enumerate() {
            let what = format!("zone {} ('{}')", i + 1, zone.name);
            check_name(&what, &zone.name)?;
            check_points(&what, &zone.points)?;
            if zone.points.len() < 3 {
                return Err(format!(
                    "{what} has {} points; a zone has 3 or more",
                    zone.points.len()
                ));
            }
            if geometry::area(&zone.points) == 0.0 {
                return Err(format!("{what} encloses no area"));
            }
            if geometry::self_intersects(&zone.points) {
                return Err(format!("{what}: its edges cross each other"));
            }
            if self.zones[..i].iter().any(|z| z.name == zone.name) {
                return Err(format!("{what}: another zone has that name"));
            }
        }
        Ok(())
    }
}

fn check_name(what: &str, name: &str) -> std::result::Result<(), String> {
    if name.trim().is_empty() {
        return Err(format!("{what} has an empty name"));
    }
    Ok(())
}

fn check_points(what: &str, points: &[Point]) -> std::result::Result<(), String> {
    // serde_json refuses NaN and infinity; huge values would still
    // overflow the cross products.
    const LIMIT: f64 = 1e7;
    if points.iter().flatten().any(|v| v.abs() > LIMIT) {
        return Err(format!("{what} has a coordinate beyond {LIMIT} pixels"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_example_reads() {
        let c = Config::parse(
            br#"{"lines": [{"name": "door", "points": [[320, 0], [320, 360]]}],
                 "zones": [{"name": "left", "points": [[0,0],[320,0],[320,360],[0,360]]}]}"#,
        )
        .unwrap();
        assert_eq!(c.lines[0].points[1], [320.0, 360.0]);
        assert_eq!(c.zones[0].name, "left");
    }

    #[test]
    fn bad_configs_are_refused_naming_the_entry() {
        let cases: &[(&str, &str)] = &[
            ("{ not json", "not an analytics config (JSON)"),
            (r#"{"lines": [], "zonez": []}"#, "unknown field `zonez`"),
            ("{}", "no lines and no zones"),
            (
                r#"{"lines": [{"name": "door", "points": [[1, 2]]}]}"#,
                "line 1 ('door') has 1 points; a line has 2",
            ),
            (
                r#"{"lines": [{"name": "door", "points": [[1, 2], [1, 2]]}]}"#,
                "line 1 ('door'): its two points are the same",
            ),
            (
                r#"{"lines": [{"name": "a", "points": [[0, 0], [1, 2]]},
                              {"name": "a", "points": [[0, 0], [3, 2]]}]}"#,
                "line 2 ('a'): another line has that name",
            ),
            (
                r#"{"zones": [{"name": "z", "points": [[0, 0], [1, 1]]}]}"#,
                "zone 1 ('z') has 2 points; a zone has 3 or more",
            ),
            (
                r#"{"zones": [{"name": "z", "points": [[0, 0], [1, 1], [2, 2]]}]}"#,
                "zone 1 ('z') encloses no area",
            ),
            (
                r#"{"zones": [{"name": "bow", "points": [[0, 0], [10, 10], [10, 0], [0, 4]]}]}"#,
                "zone 1 ('bow'): its edges cross each other",
            ),
            (
                r#"{"zones": [{"name": "z", "points": [[0, 0], [9, 0], [9, 9]]},
                              {"name": "z", "points": [[0, 0], [9, 0], [0, 9]]}]}"#,
                "zone 2 ('z'): another zone has that name",
            ),
            (
                r#"{"lines": [{"name": " ", "points": [[0, 0], [1, 2]]}]}"#,
                "has an empty name",
            ),
        ];
        for (text, expected) in cases {
            let err = Config::parse(text.as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
        assert_eq!(cases.len(), 11);
    }
}
