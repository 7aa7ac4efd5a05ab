//! `wgnn-bench detect`: what `wgnndetect ! wgnnoverlay` does to each frame,
//! with the tasks those elements run (`wgnn::tasks::Detector`,
//! `wgnn::video::Overlay`): the frame arrives in system memory and is
//! uploaded once (as from a camera or a software decoder), the detector
//! tensorizes it, runs the model and decodes, thresholds and compacts the
//! boxes on the GPU, reads back only that short list, runs NMS on the CPU;
//! the overlay draws the boxes, labels and keypoints into an RGBA frame on
//! the GPU. Nothing else is read back.
//!
//! Reported per frame: host wall time (the detector waits for its list, so
//! this is the latency a pipeline sees), the GPU time of the detector's
//! passes and of the overlay from timestamp queries, and the bytes moved.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::{Gpu, TransferStats};
use wgnn::tasks::{DetectOptions, Detector, Device, ModelProc};
use wgnn::video::*;

use crate::cli::{fail, model_or, quick_frames_help, timed_gpu, Frames, Json, Quick, QUICK_RUNS};
use crate::stamps::{encoder, median_min, submit, Stamps};

/// `--quick`'s frame size (the face detector needs more than a thumbnail).
const QUICK_SIZE: (u32, u32) = (320, 180);
/// The model detected with by default.
const FACE_DETECTOR: &str = "mediapipe/face_detection_short_range.tflite";

/// What wgnndetect ! wgnnoverlay do to each frame: upload, tensorize,
/// detector, decode + threshold + compact on the GPU, the short list read
/// back, NMS, boxes and labels drawn on the GPU.
#[derive(clap::Args)]
#[command(mut_arg("quick", |a| a.help(quick_frames_help(QUICK_SIZE))))]
pub struct Args {
    #[command(flatten)]
    quick: Quick,
    #[command(flatten)]
    frames: Frames,
    /// Detection model with a model-proc beside it (default: the bundled
    /// MediaPipe short-range face detector).
    #[arg(long)]
    model: Option<PathBuf>,
    #[command(flatten)]
    json: Json,
}

impl Args {
    pub fn run(self) -> ExitCode {
        let format = match self.frames.video_format() {
            Ok(f) => f,
            Err(code) => return code,
        };
        let (width, height) = self.frames.size(self.quick, QUICK_SIZE);
        let options = Options {
            width,
            height,
            format,
            frames: self.quick.count(self.frames.frames, QUICK_RUNS),
            warmup: self.quick.pick(10, 1),
            model: model_or(&self.model, FACE_DETECTOR),
        };
        let gpu = match timed_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        let r = match measure(&gpu, &options) {
            Ok(r) => r,
            Err(e) => return fail("detect", e),
        };
        if self.json.json {
            println!("{}", r.to_json(&gpu.describe()));
            return ExitCode::SUCCESS;
        }
        let per = |v: u64| v as f64 / r.frames as f64;
        println!("device: {}", gpu.describe());
        println!("{}", r.what);
        println!(
            "{:>8} {:>9} {:>12} {:>11} {:>11} {:>5} {:>12} {:>5}",
            "objects",
            "wall ms",
            "detect span",
            "overlay ms",
            "up B/frame",
            "ups",
            "down B/frame",
            "downs"
        );
        println!(
            "{:>8} {:>9.3} {:>12.3} {:>11.3} {:>11.0} {:>5.1} {:>12.0} {:>5.1}",
            r.detections,
            r.wall_ms,
            r.detect_span_ms,
            r.overlay_ms,
            per(r.moved.upload_bytes),
            per(r.moved.uploads),
            per(r.moved.download_bytes),
            per(r.moved.downloads)
        );
        ExitCode::SUCCESS
    }
}

struct Options {
    width: u32,
    height: u32,
    format: VideoFormat,
    frames: usize,
    warmup: usize,
    model: PathBuf,
}

pub struct Result {
    pub what: String,
    pub frames: usize,
    pub detections: usize,
    pub wall_ms: f64,
    /// Median timestamped span from before the detector's first pass to
    /// after its last (it includes the GPU idling while the host maps the
    /// list, so it is an upper bound of the detector's GPU work).
    pub detect_span_ms: f64,
    pub overlay_ms: f64,
    pub moved: TransferStats,
}

impl Result {
    pub fn to_json(&self, device: &str) -> serde_json::Value {
        let per = |v: u64| v as f64 / self.frames as f64;
        json!({
            "device": device,
            "frames": self.what,
            "detections_per_frame": self.detections,
            "wall_ms_per_frame": self.wall_ms,
            "gpu_ms_detect_span": self.detect_span_ms,
            "gpu_ms_overlay": self.overlay_ms,
            "uploads_per_frame": per(self.moved.uploads),
            "upload_bytes_per_frame": per(self.moved.upload_bytes),
            "downloads_per_frame": per(self.moved.downloads),
            "download_bytes_per_frame": per(self.moved.download_bytes),
        })
    }
}

struct Bench {
    gpu: Gpu,
    detector: Detector,
    overlay: Overlay,
    pool: TexturePool,
    layout: FrameLayout,
    bytes: Vec<u8>,
    stamps: Stamps,
}

impl Bench {
    fn new(gpu: &Gpu, o: &Options) -> wgnn::Result<Bench> {
        let model = Arc::new(wgnn::models::load(&o.model)?);
        let proc = ModelProc::for_model(&o.model, None)?.ok_or_else(|| {
            wgnn::Error::Invalid(format!(
                "{}: no model-proc beside it (a .json of the same name)",
                o.model.display()
            ))
        })?;
        let labels = proc.labels()?;
        let detector = Detector::new(
            &Device::Gpu(gpu.clone()),
            model,
            &proc,
            labels,
            DetectOptions::default(),
            ColorSpec::default(),
        )?;
        Ok(Bench {
            gpu: gpu.clone(),
            detector,
            overlay: Overlay::new(gpu, OverlayStyle::default())?,
            pool: TexturePool::new(),
            layout: FrameLayout::packed(o.format, o.width, o.height),
            bytes: crate::pipeline::frame_bytes(o.format, o.width, o.height)?,
            stamps: Stamps::new(gpu, 2)?,
        })
    }

    /// One frame: upload, detect, draw. With `profile`, timestamp pair 0
    /// brackets the detector and pair 1 the overlay.
    fn frame(&mut self, profile: bool) -> wgnn::Result<(usize, wgpu::SubmissionIndex)> {
        let frame = upload_frame(&self.gpu, &self.pool, &self.layout, &self.bytes)?;
        let mark = |bench: &Bench, pair: u32, begin: bool| -> wgnn::Result<()> {
            let mut enc = encoder(&bench.gpu);
            if begin {
                bench.stamps.begin(&mut enc, pair);
            } else {
                bench.stamps.end(&mut enc, pair);
            }
            submit(&bench.gpu, enc).map(|_| ())
        };
        if profile {
            mark(self, 0, true)?;
        }
        let (found, _) = self.detector.detect_gpu(&frame)?;
        if profile {
            mark(self, 0, false)?;
            mark(self, 1, true)?;
        }
        let items: Vec<OverlayItem> = found
            .iter()
            .map(|d| OverlayItem {
                rect: [d.rect.x, d.rect.y, d.rect.w, d.rect.h],
                color: [255, 64, 64],
                text: format!("{} {:.2}", d.label, d.confidence),
                keypoints: d.keypoints.clone(),
                ..Default::default()
            })
            .collect();
        let _drawn = self.overlay.draw(&frame, &items, &self.pool)?;
        let mut enc = encoder(&self.gpu);
        if profile {
            self.stamps.end(&mut enc, 1);
        }
        let last = submit(&self.gpu, enc)?;
        Ok((found.len(), last))
    }
}

fn measure(gpu: &Gpu, o: &Options) -> wgnn::Result<Result> {
    let mut bench = Bench::new(gpu, o)?;
    for _ in 0..o.warmup {
        bench.frame(false)?;
    }
    gpu.wait_idle()?;
    let before = gpu.transfers();
    let t = Instant::now();
    let mut detections = 0;
    for _ in 0..o.frames {
        detections = bench.frame(false)?.0;
    }
    gpu.wait_idle()?;
    let secs = t.elapsed().as_secs_f64();
    let moved = gpu.transfers().since(&before);
    let (mut detect, mut overlay) = (Vec::new(), Vec::new());
    for _ in 0..o.frames.clamp(1, 50) {
        bench.frame(true)?;
        let t = bench.stamps.read_ms()?;
        detect.push(t[0]);
        overlay.push(t[1]);
    }
    Ok(Result {
        what: format!(
            "{}x{} {} frames, {}",
            o.width,
            o.height,
            o.format.name(),
            o.model.display()
        ),
        frames: o.frames,
        detections,
        wall_ms: secs * 1e3 / o.frames as f64,
        detect_span_ms: median_min(&detect).0,
        overlay_ms: median_min(&overlay).0,
        moved,
    })
}
