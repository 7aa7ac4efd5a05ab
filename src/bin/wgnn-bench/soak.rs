//! `wgnn-bench soak`: the zero-copy segmentation pipeline of `wgnn-bench
//! pipeline` (upload -> tensorize -> selfie -> blur composite) for many
//! frames, reporting every K frames what would grow if something leaked:
//! the process's resident memory, wgpu's allocator report (bytes the device
//! allocated and reserved), and wgnn's own live-object counts. At the end a
//! verdict compares the last report with the first one after the warm-up:
//! flat (within the tolerance) or not, and the exit status says which.

use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::{live, Gpu};

use crate::cli::{fail, timed_gpu, Frames, Json, Quick, EXIT_FAILED, EXIT_USAGE};
use crate::pipeline::{Bench, Options, Segmentation, QUICK_SIZE};

/// `--quick`'s frames and the frames between its reports.
const QUICK_FRAMES: usize = 40;
const QUICK_EVERY: usize = 10;

/// The zero-copy pipeline (as `pipeline`) for many frames, reporting RSS,
/// wgpu's allocator report and wgnn's live objects every N frames; exits
/// non-zero unless the last report is within the tolerance of the first
/// one after the warm-up.
#[derive(clap::Args)]
#[command(mut_arg("quick", |a| a.help(quick_help())))]
#[command(mut_arg("frames", |a| a.default_value("100000")))]
#[command(mut_arg("json", |a| a.help("One JSON object per line instead of a table")))]
pub struct Args {
    #[command(flatten)]
    quick: Quick,
    #[command(flatten)]
    frames: Frames,
    /// Frames between reports.
    #[arg(long, default_value_t = 5_000)]
    every: usize,
    /// Frames before the reference report (default: a fifth of
    /// --frames, at least --every: allocators and drivers settle over
    /// the first thousands of frames; a leak grows on after).
    #[arg(long)]
    warmup: Option<usize>,
    /// How far the last report may be from the reference, in percent.
    #[arg(long, default_value_t = 1.0)]
    tolerance: f64,
    #[command(flatten)]
    segmentation: Segmentation,
    #[command(flatten)]
    json: Json,
}

/// `--quick`'s help, from the numbers it runs.
fn quick_help() -> String {
    let (w, h) = QUICK_SIZE;
    format!("A {w}x{h} frame, {QUICK_FRAMES} frames, a report every {QUICK_EVERY} (smoke tests)")
}

impl Args {
    pub fn run(self) -> ExitCode {
        let format = match self.frames.video_format() {
            Ok(f) => f,
            Err(code) => return code,
        };
        let frames = self.quick.pick(self.frames.frames, QUICK_FRAMES);
        let every = self.quick.pick(self.every, QUICK_EVERY);
        let options = SoakOptions {
            pipeline: Options {
                frames,
                ..self.segmentation.options(self.quick, &self.frames, format)
            },
            every,
            warmup: self.warmup.unwrap_or((frames / 5).max(every)),
            tolerance: self.tolerance,
            json: self.json.json,
        };
        if let Err(e) = options.validate() {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
        let gpu = match timed_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        match soak(&gpu, &options) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(EXIT_FAILED),
            Err(e) => fail("soak", e),
        }
    }
}

struct SoakOptions {
    pipeline: Options,
    /// Frames between reports.
    every: usize,
    /// Frames before the reference report.
    warmup: usize,
    /// How far (percent) the last report may be from the reference.
    tolerance: f64,
    json: bool,
}

/// What one report holds.
#[derive(Clone, Debug)]
struct Report {
    frames: usize,
    rss: u64,
    /// wgpu's (allocated, reserved) bytes; None where the backend keeps no
    /// report (wgpu's Metal and GL back ends, or a Vulkan/DX12 device that
    /// does not sub-allocate).
    allocator: Option<(u64, u64)>,
    live: live::Counts,
    fps: f64,
}

impl Report {
    fn to_json(&self) -> serde_json::Value {
        json!({
            "frames": self.frames,
            "rss_bytes": self.rss,
            "gpu_allocated_bytes": self.allocator.map(|a| a.0),
            "gpu_reserved_bytes": self.allocator.map(|a| a.1),
            "live_buffers": self.live.buffers,
            "live_buffer_bytes": self.live.buffer_bytes,
            "live_textures": self.live.textures,
            "live_texture_bytes": self.live.texture_bytes,
            "live_compute_pipelines": self.live.compute_pipelines,
            "live_render_pipelines": self.live.render_pipelines,
            "live_graphs": self.live.graphs,
            "fps": self.fps,
        })
    }

    fn line(&self) -> String {
        let allocator = match self.allocator {
            Some((a, r)) => format!("GPU allocated {} / reserved {} MiB", mib(a), mib(r)),
            None => "GPU allocator: no report on this backend".into(),
        };
        format!(
            "{:>9} frames  RSS {:>8} MiB  {allocator}  live: {}  {:.1} fps",
            self.frames,
            mib(self.rss),
            self.live,
            self.fps
        )
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / f64::from(1u32 << 20))
}

/// Resident set size in bytes: VmRSS of /proc/self/status (the same pages
/// as /proc/self/statm's second field, already in kB, so no page size is
/// needed). None off Linux.
pub fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

fn allocator(gpu: &Gpu) -> Option<(u64, u64)> {
    gpu.device()
        .generate_allocator_report()
        .map(|r| (r.total_allocated_bytes, r.total_reserved_bytes))
}

/// Where `last` is off `first` by more than `tolerance` percent: a line
/// each. Counts of objects must be equal; byte totals within tolerance.
fn drift(first: &Report, last: &Report, tolerance: f64) -> Vec<String> {
    let mut out = Vec::new();
    let mut within = |what: &str, a: u64, b: u64| {
        let limit = a as f64 * tolerance / 100.0;
        if (b as f64 - a as f64).abs() > limit {
            out.push(format!(
                "{what}: {a} -> {b} bytes ({:+.2}%, over {tolerance}%)",
                (b as f64 - a as f64) * 100.0 / (a as f64).max(1.0)
            ));
        }
    };
    within("RSS", first.rss, last.rss);
    if let (Some(a), Some(b)) = (first.allocator, last.allocator) {
        within("GPU allocated", a.0, b.0);
        within("GPU reserved", a.1, b.1);
    }
    if first.live != last.live {
        out.push(format!("live objects: {} -> {}", first.live, last.live));
    }
    out
}

impl SoakOptions {
    /// The flags agree with each other (checked before a device is opened).
    fn validate(&self) -> Result<(), String> {
        let frames = self.pipeline.frames;
        if self.every == 0 || frames < self.every {
            return Err(format!(
                "--every {} must be between 1 and --frames {frames}",
                self.every
            ));
        }
        if self.warmup >= frames {
            return Err(format!(
                "--warmup {} leaves no frames of the {frames} to compare",
                self.warmup
            ));
        }
        if self.tolerance.is_nan() || self.tolerance < 0.0 {
            return Err(format!(
                "--tolerance {} must be a percentage >= 0",
                self.tolerance
            ));
        }
        Ok(())
    }
}

/// Runs the soak (options validated); true when flat.
fn soak(gpu: &Gpu, o: &SoakOptions) -> wgnn::Result<bool> {
    let p = &o.pipeline;
    let mut bench = Bench::new(gpu, p)?;
    let what = format!(
        "{}x{} {} frames, {}, blur sigma {}; a report every {} frames, the first after {} \
         warm-up frames is the reference",
        p.width,
        p.height,
        p.format.name(),
        p.model.display(),
        p.blur,
        o.every,
        o.warmup
    );
    if o.json {
        println!("{}", json!({ "device": gpu.describe(), "soak": what }));
    } else {
        println!("device: {}", gpu.describe());
        println!("{what}");
        if allocator(gpu).is_none() {
            println!(
                "note: wgpu keeps no allocator report on this backend; RSS and live counts only"
            );
        }
    }
    let mut reference: Option<Report> = None;
    let mut last: Option<Report> = None;
    let mut t = Instant::now();
    let mut pending = std::collections::VecDeque::new();
    for n in 1..=p.frames {
        pending.push_back(bench.zero_copy_frame()?);
        if pending.len() > p.in_flight {
            let oldest = pending.pop_front().expect("not empty");
            gpu.device()
                .poll(wgpu::PollType::Wait {
                    submission_index: Some(oldest),
                    timeout: None,
                })
                .map_err(|e| wgnn::Error::DeviceFailed(e.to_string()))?;
            gpu.check()?;
        }
        if n % o.every != 0 {
            continue;
        }
        gpu.wait_idle()?;
        pending.clear();
        let report = Report {
            frames: n,
            rss: rss().unwrap_or(0),
            allocator: allocator(gpu),
            live: gpu.live(),
            fps: o.every as f64 / t.elapsed().as_secs_f64(),
        };
        if o.json {
            println!("{}", report.to_json());
        } else {
            println!("{}", report.line());
        }
        if reference.is_none() && n >= o.warmup.max(o.every) {
            reference = Some(report.clone());
        }
        last = Some(report);
        t = Instant::now();
    }
    let (Some(first), Some(last)) = (reference, last) else {
        return Err(wgnn::Error::Invalid("no report after the warm-up".into()));
    };
    let off = drift(&first, &last, o.tolerance);
    let flat = off.is_empty();
    let verdict = if flat {
        format!(
            "flat: frames {} -> {}: RSS, GPU memory and live objects within {}%",
            first.frames, last.frames, o.tolerance
        )
    } else {
        format!(
            "NOT flat: frames {} -> {}: {}",
            first.frames,
            last.frames,
            off.join("; ")
        )
    };
    if o.json {
        println!(
            "{}",
            json!({ "verdict": if flat { "flat" } else { "growing" }, "detail": verdict })
        );
    } else {
        println!("verdict: {verdict}");
    }
    Ok(flat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rss: u64, allocated: u64, buffers: i64) -> Report {
        Report {
            frames: 0,
            rss,
            allocator: Some((allocated, allocated * 2)),
            live: live::Counts {
                buffers,
                ..Default::default()
            },
            fps: 0.0,
        }
    }

    #[test]
    fn drift_is_measured_against_the_tolerance() {
        let first = report(1000 << 20, 500 << 20, 7);
        assert!(drift(&first, &report(1005 << 20, 502 << 20, 7), 1.0).is_empty());
        let off = drift(&first, &report(1020 << 20, 500 << 20, 7), 1.0);
        assert_eq!(off.len(), 1, "{off:?}");
        assert!(
            off[0].starts_with("RSS: ") && off[0].contains("+2.00%"),
            "{off:?}"
        );
        let off = drift(&first, &report(1000 << 20, 520 << 20, 8), 1.0);
        assert_eq!(off.len(), 3, "{off:?}");
        assert!(off[2].starts_with("live objects: 7 buffers"), "{off:?}");
    }
}
