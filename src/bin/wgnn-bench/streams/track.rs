//! What `--task track` adds to `--task detect`: the analytics configuration
//! its streams count against, and the cost per stream of tracking and
//! analytics over detection alone, from a detect run and a track run at
//! the same stream count.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::live::RunReport;
use super::Task;

/// The `wgnnanalytics` config of a track run, in a temporary file removed
/// when this is dropped: one line across the frame (top to bottom through
/// its middle) and one zone (the left half), so that every object is
/// tested against both.
pub struct AnalyticsConfig {
    path: PathBuf,
}

impl AnalyticsConfig {
    pub fn write(width: u32, height: u32) -> Result<AnalyticsConfig, String> {
        let (w, h) = (f64::from(width), f64::from(height));
        let config = json!({
            "lines": [{"name": "middle", "points": [[w / 2.0, 0.0], [w / 2.0, h]]}],
            "zones": [{"name": "left", "points": [[0.0, 0.0], [w / 2.0, 0.0], [w / 2.0, h], [0.0, h]]}],
        });
        let path = std::env::temp_dir().join(format!(
            "wgnn-bench-streams-analytics-{}.json",
            std::process::id()
        ));
        std::fs::write(&path, config.to_string())
            .map_err(|e| format!("cannot write the analytics config {}: {e}", path.display()))?;
        Ok(AnalyticsConfig { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for AnalyticsConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Track over detect at one stream count: what each stream costs more.
pub struct TrackCost {
    pub streams: u32,
    /// Host CPU per stream, % of one core: track's minus detect's.
    pub cpu_percent: Option<f64>,
    /// The model's GPU ms a frame and GPU busy %: track's minus detect's
    /// (the same model, so near zero: the tracker and the analytics run on
    /// the host, and the overlay's drawing is not timed).
    pub gpu_ms_frame: Option<f64>,
    pub gpu_busy_percent: Option<f64>,
    /// Objects per frame in each run: what the tracker had to follow.
    pub objects_detect: Option<f64>,
    pub objects_track: Option<f64>,
}

/// One [`TrackCost`] per stream count that both runs measured.
pub fn track_over_detect(reports: &[RunReport]) -> Vec<TrackCost> {
    let of = |task| reports.iter().filter(move |r| r.task == task);
    let diff = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a - b);
    of(Task::Track)
        .filter_map(|t| {
            let d = of(Task::Detect).find(|d| d.streams == t.streams)?;
            Some(TrackCost {
                streams: t.streams,
                cpu_percent: diff(t.cpu_percent_per_stream, d.cpu_percent_per_stream),
                gpu_ms_frame: diff(t.gpu_ms_frame(), d.gpu_ms_frame()),
                gpu_busy_percent: diff(t.gpu_busy_percent, d.gpu_busy_percent),
                objects_detect: d.objects_per_frame,
                objects_track: t.objects_per_frame,
            })
        })
        .collect()
}

impl TrackCost {
    pub fn header() -> String {
        format!(
            "{:>7} {:>12} {:>14} {:>13} {:>15}",
            "streams", "+CPU %/strm", "+GPU ms/frame", "+GPU busy %", "obj/f det/trk"
        )
    }

    pub fn row(&self) -> String {
        let opt = |v: Option<f64>, digits: usize| {
            v.map_or("n/a".to_string(), |v| format!("{v:+.digits$}"))
        };
        let objects = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1}"));
        format!(
            "{:>7} {:>12} {:>14} {:>13} {:>15}",
            self.streams,
            opt(self.cpu_percent, 2),
            opt(self.gpu_ms_frame, 4),
            opt(self.gpu_busy_percent, 2),
            format!(
                "{}/{}",
                objects(self.objects_detect),
                objects(self.objects_track)
            ),
        )
    }

    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "streams": self.streams,
            "cpu_percent_per_stream": self.cpu_percent,
            "gpu_ms_per_frame": self.gpu_ms_frame,
            "gpu_busy_percent": self.gpu_busy_percent,
            "objects_per_frame_detect": self.objects_detect,
            "objects_per_frame_track": self.objects_track,
        })
    }
}
