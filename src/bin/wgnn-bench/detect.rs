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
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::{Gpu, TransferStats};
use wgnn::tasks::{DetectOptions, Detector, Device, ModelProc};
use wgnn::video::*;

use crate::stamps::{encoder, median_min, submit, Stamps};

pub struct Options {
    pub width: u32,
    pub height: u32,
    pub format: VideoFormat,
    pub frames: usize,
    pub warmup: usize,
    pub model: PathBuf,
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

pub fn run(gpu: &Gpu, o: &Options) -> wgnn::Result<Result> {
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
