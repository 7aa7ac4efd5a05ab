//! Live statistics: frames per second, per-frame latency through
//! wgnnsegment (pad probes on its two pads), the model's GPU time where the
//! GPU's timestamps can be trusted, and bytes moved per frame over every wgnn
//! element. On the CPU or a software GPU the time through the element is the
//! host's wall-clock time for the model and the effect, and is labelled so.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gst::prelude::*;

#[derive(Default)]
struct Latencies {
    entered: VecDeque<(Option<gst::ClockTime>, Instant)>,
    samples: Vec<Duration>,
}

pub struct Stats {
    seg: gst::Element,
    wgnn: Vec<gst::Element>,
    latencies: Arc<Mutex<Latencies>>,
    last: (Instant, u64, u64, u64),
    started: Instant,
    gpu_timing: bool,
}

/// One second's worth.
pub struct Tick {
    pub fps: f64,
    pub latency_ms: Option<f64>,
    /// The model's GPU time, where the adapter has timestamp queries.
    pub gpu_ms: Option<f64>,
    /// Whether the GPU's timestamps are trusted (a hardware GPU); else the
    /// latency is shown as the wall time of model and effect.
    pub gpu_timing: bool,
    pub up_per_frame: u64,
    pub down_per_frame: u64,
}

impl std::fmt::Display for Tick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:6.1} fps", self.fps)?;
        let label = if self.gpu_timing {
            "latency"
        } else {
            "model+effect wall"
        };
        match self.latency_ms {
            Some(ms) => write!(f, "  {label} {ms:7.2} ms")?,
            None => write!(f, "  {label}       - ms")?,
        }
        if let (true, Some(ms)) = (self.gpu_timing, self.gpu_ms) {
            write!(f, "  model GPU {ms:6.2} ms")?;
        }
        write!(
            f,
            "  per frame: up {} B, down {} B",
            self.up_per_frame, self.down_per_frame
        )
    }
}

impl Stats {
    /// `gpu_timing`: whether the model's GPU time from timestamp queries
    /// means anything (a hardware GPU).
    pub fn new(pipeline: &gst::Pipeline, seg: &gst::Element, gpu_timing: bool) -> Stats {
        let seg = seg.clone();
        let wgnn = pipeline
            .iterate_elements()
            .into_iter()
            .flatten()
            .filter(|e| e.factory().is_some_and(|f| f.name().starts_with("wgnn")))
            .collect();
        let latencies = Arc::new(Mutex::new(Latencies::default()));
        let l = latencies.clone();
        seg.static_pad("sink")
            .unwrap()
            .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                if let Some(b) = info.buffer() {
                    let mut l = l.lock().unwrap();
                    l.entered.push_back((b.pts(), Instant::now()));
                    // Dropped (QoS) frames never come out: keep the queue short.
                    if l.entered.len() > 64 {
                        l.entered.pop_front();
                    }
                }
                gst::PadProbeReturn::Ok
            });
        let l = latencies.clone();
        seg.static_pad("src")
            .unwrap()
            .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                if let Some(b) = info.buffer() {
                    let mut l = l.lock().unwrap();
                    while let Some((pts, at)) = l.entered.pop_front() {
                        if pts == b.pts() {
                            l.samples.push(at.elapsed());
                            break;
                        }
                    }
                }
                gst::PadProbeReturn::Ok
            });
        let now = Instant::now();
        Stats {
            seg,
            wgnn,
            latencies,
            last: (now, 0, 0, 0),
            started: now,
            gpu_timing,
        }
    }

    fn totals(&self) -> (u64, u64, u64) {
        let sum = |p: &str| self.wgnn.iter().map(|e| e.property::<u64>(p)).sum::<u64>();
        (
            self.seg.property::<u64>("frames"),
            sum("bytes-uploaded"),
            sum("bytes-downloaded"),
        )
    }

    /// What happened since the last tick.
    pub fn tick(&mut self) -> Tick {
        let now = Instant::now();
        let (frames, up, down) = self.totals();
        let (then, f0, u0, d0) = self.last;
        self.last = (now, frames, up, down);
        let n = frames - f0;
        let samples = std::mem::take(&mut self.latencies.lock().unwrap().samples);
        Tick {
            fps: n as f64 / (now - then).as_secs_f64().max(1e-9),
            latency_ms: (!samples.is_empty()).then(|| {
                samples.iter().map(|d| d.as_secs_f64()).sum::<f64>() * 1e3 / samples.len() as f64
            }),
            gpu_ms: Some(self.seg.property::<f64>("gpu-ms")).filter(|ms| *ms >= 0.0),
            gpu_timing: self.gpu_timing,
            up_per_frame: (up - u0).checked_div(n).unwrap_or(0),
            down_per_frame: (down - d0).checked_div(n).unwrap_or(0),
        }
    }

    /// Frames, seconds, and bytes per frame over the whole run.
    pub fn summary(&self) -> String {
        let (frames, up, down) = self.totals();
        let secs = self.started.elapsed().as_secs_f64();
        format!(
            "{frames} frames in {secs:.1} s ({:.1} fps); per frame: up {} B, down {} B",
            frames as f64 / secs.max(1e-9),
            up.checked_div(frames).unwrap_or(0),
            down.checked_div(frames).unwrap_or(0)
        )
    }
}
