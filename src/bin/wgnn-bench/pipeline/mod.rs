//! `wgnn-bench pipeline`: frames through upload -> tensorize -> selfie model
//! -> blur composite, with the `wgnn::tasks::Segmenter` the `wgnnsegment`
//! element runs, two ways:
//!
//! - zero-copy: the segmenter's own GPU path. The frame is uploaded once;
//!   the tensorizer writes straight into the model's input tensor and the
//!   compositor reads the mask tensor, both rented with `export_to_gpu`;
//!   nothing is read back.
//! - copy: what a chain of system-memory GStreamer elements does. Element 1
//!   uploads the frame, tensorizes it and reads the tensor back; element 2
//!   uploads the tensor, runs the model and reads the mask back; element 3
//!   uploads the frame and the mask again, composites and reads the output
//!   frame back for the next element. It drives the segmenter's stages one
//!   at a time.
//!
//! Both run the same GPU kernels; GPU ms/frame is their timestamped time (the
//! copies themselves are not in it). fps and wall ms are host wall time over
//! many frames; upload ms is the host time per frame spent in upload calls
//! until the bytes are in the GPU's hands (copied into a staging buffer and
//! the copy submitted: the frame through `upload_frame` and, on the copy
//! path, the tensor and mask too); bytes moved come from the transfer
//! counters, and how many frame uploads went through the pool's staging
//! ring (or fell back to `write_texture`) from its stats.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use wgnn::ml::Precision;
use wgnn::video::VideoFormat;

use crate::cli::{
    fail, model_or, quick_frames_help, timed_gpu, Frames, Json, PrecisionArg, Quick, QUICK_RUNS,
};

mod bench;

pub use bench::{frame_bytes, Bench, Options, PathResult};

/// `--quick`'s frame size.
pub const QUICK_SIZE: (u32, u32) = (64, 48);
/// `--quick`'s largest blur sigma.
const QUICK_BLUR: f32 = 2.0;
/// What the pipeline segments with by default (the bundled square model).
const SELFIE: &str = "selfie/selfie_segmentation.tflite";

/// Frames through upload -> tensorize -> selfie -> blur composite, kept on
/// the GPU, against the copy path (read back and re-upload between stages).
#[derive(clap::Args)]
#[command(mut_arg("quick", |a| a.help(quick_frames_help(QUICK_SIZE))))]
pub struct Args {
    #[command(flatten)]
    quick: Quick,
    #[command(flatten)]
    frames: Frames,
    #[command(flatten)]
    segmentation: Segmentation,
    #[command(flatten)]
    precision: PrecisionArg,
    #[command(flatten)]
    json: Json,
}

/// The segmentation each frame goes through (`pipeline` and `soak`).
#[derive(clap::Args)]
pub struct Segmentation {
    /// Background blur sigma in frame pixels (wgnnsegment's default).
    #[arg(long, default_value_t = 12.0)]
    blur: f32,
    /// Segmentation model (default: the bundled square selfie model).
    #[arg(long)]
    model: Option<PathBuf>,
}

impl Segmentation {
    /// The pipeline's options for `frames` (--quick shrinking the frame and
    /// the blur) in float32, with no warm-up.
    pub fn options(&self, quick: Quick, frames: &Frames, format: VideoFormat) -> Options {
        let (width, height) = frames.size(quick, QUICK_SIZE);
        Options {
            width,
            height,
            format,
            frames: frames.frames,
            warmup: 0,
            blur: quick.pick(self.blur, self.blur.min(QUICK_BLUR)),
            model: model_or(&self.model, SELFIE),
            in_flight: 2,
            precision: Precision::F32,
        }
    }
}

impl Args {
    pub fn run(self) -> ExitCode {
        let format = match self.frames.video_format() {
            Ok(f) => f,
            Err(code) => return code,
        };
        let o = Options {
            frames: self.quick.count(self.frames.frames, QUICK_RUNS),
            warmup: self.quick.pick(10, 1),
            precision: self.precision.precision,
            ..self.segmentation.options(self.quick, &self.frames, format)
        };
        let gpu = match timed_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        let mut bench = match Bench::new(&gpu, &o) {
            Ok(b) => b,
            Err(e) => return fail("pipeline set-up", e),
        };
        let mut rows = Vec::new();
        for zero_copy in [true, false] {
            match bench.run(&o, zero_copy) {
                Ok(r) => rows.push(r),
                Err(e) => return fail(if zero_copy { "zero-copy" } else { "copy" }, e),
            }
        }
        let ratio = rows[0].fps / rows[1].fps;
        let (model_alone, model_evicted) =
            match (bench.model_alone(50, false), bench.model_alone(50, true)) {
                (Ok(alone), Ok(evicted)) => (alone, evicted),
                (Err(e), _) | (_, Err(e)) => return fail("model alone", e),
            };
        let what = format!(
            "{}x{} {} frames, {}, blur sigma {}, precision {}",
            o.width,
            o.height,
            o.format.name(),
            o.model.display(),
            o.blur,
            bench.precision()
        );
        if self.json.json {
            println!(
                "{}",
                json!({
                    "device": gpu.describe(),
                    "frames": what,
                    "precision": bench.precision().precision.name(),
                    "paths": rows.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                    "fps_ratio": ratio,
                    "gpu_ms_model_alone": model_alone,
                    "gpu_ms_model_after_eviction": model_evicted,
                })
            );
            return ExitCode::SUCCESS;
        }
        println!("device: {}", gpu.describe());
        println!("{what}");
        print_table(&rows, ratio, (model_alone, model_evicted));
        ExitCode::SUCCESS
    }
}

/// The paths' table and what each path's frames did, under the device and
/// frame lines.
fn print_table(rows: &[PathResult], ratio: f64, (model_alone, model_evicted): (f64, f64)) {
    println!(
        "{:<10} {:>8} {:>9} {:>9} {:>9} {:>10} {:>8} {:>10} {:>8} {:>11} {:>5} {:>11} {:>5}",
        "path",
        "fps",
        "wall ms",
        "GPU ms",
        "upload ms",
        "tensorize",
        "model",
        "composite",
        "frames",
        "up B/frame",
        "ups",
        "down B/frame",
        "downs"
    );
    for r in rows {
        let per = |v: u64| v as f64 / r.frames as f64;
        println!(
            "{:<10} {:>8.1} {:>9.3} {:>9.3} {:>9.3} {:>10.3} {:>8.3} {:>10.3} {:>8} {:>11.0} {:>5.1} {:>11.0} {:>5.1}",
            r.path,
            r.fps,
            r.wall_ms,
            r.gpu_ms,
            r.upload_ms,
            r.tensorize_ms,
            r.model_ms,
            r.composite_ms,
            r.frames,
            per(r.moved.upload_bytes),
            per(r.moved.uploads),
            per(r.moved.download_bytes),
            per(r.moved.downloads),
        );
    }
    println!("zero-copy / copy fps: {ratio:.2}x");
    println!(
        "model alone (its graph dispatched back to back, no frame): {model_alone:.3} GPU ms; \
         after 128 MB of other copies each time: {model_evicted:.3}"
    );
    for r in rows {
        if let (Some(encode), Some(s)) = (r.encode_ms, r.streamed) {
            // One frame has no time between frames.
            let between = if s.between_ms.is_finite() {
                format!("{:.3}", s.between_ms)
            } else {
                "-".to_string()
            };
            let host = if r.overlapped {
                format!(
                    "{:.3} ms upload with the passes recorded meanwhile, one submission,",
                    r.upload_ms
                )
            } else {
                format!(
                    "{:.3} ms upload + {encode:.3} ms encode and submit",
                    r.upload_ms
                )
            };
            println!(
                "{} per frame while streaming: host {host} of {:.3} ms wall; GPU {:.3} ms \
                 work + {between} ms between frames (the next upload's copy and idle), busy \
                 {:.0}% ({} frames stamped)",
                r.path,
                r.wall_ms,
                s.work_ms,
                100.0 * s.busy,
                s.frames
            );
        }
    }
    for r in rows {
        println!(
            "{} frame uploads: {} through the staging ring ({} planes unpacked by compute, \
             the rest copied), {} through write_texture",
            r.path, r.ring.staged, r.ring.planes_unpacked, r.ring.fallbacks
        );
    }
}
