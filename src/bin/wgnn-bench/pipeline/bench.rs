//! The pipeline's two paths over the segmenter, set up once and run for
//! many frames, with what each costs (see the module above).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use wgnn::gpu::{Gpu, StagingStats, TransferStats};
use wgnn::ml::DataType;
use wgnn::tasks::{
    Device, ModelTiming, SegmentEffect, SegmentOptions, Segmenter, Stage, StageMarks,
};
use wgnn::video::*;

use crate::stamps::{encoder, median_min, submit, Stamps};

pub struct Options {
    pub width: u32,
    pub height: u32,
    pub format: VideoFormat,
    pub frames: usize,
    pub warmup: usize,
    pub blur: f32,
    pub model: PathBuf,
    /// Zero-copy frames queued before the oldest is waited for.
    pub in_flight: usize,
    /// What the model computes in (`--precision`).
    pub precision: wgnn::ml::Precision,
}

#[derive(Clone, Debug)]
pub struct PathResult {
    pub path: &'static str,
    pub frames: usize,
    pub fps: f64,
    pub wall_ms: f64,
    /// Host time per frame in upload calls; on the zero-copy path, where
    /// `overlapped`, in the one call that uploads the frame and records its
    /// passes while the bytes are copied.
    pub upload_ms: f64,
    /// Zero-copy only: the segmenter's passes were recorded during the
    /// upload and submitted with it (`Segmenter::upload_run_gpu_into`), so
    /// `encode_ms` is zero.
    pub overlapped: bool,
    /// Zero-copy only: host time per frame in the segmenter's call
    /// (encoding and submitting tensorize, model and composite).
    pub encode_ms: Option<f64>,
    /// Zero-copy only: the frames' GPU timeline during the timed run itself.
    pub streamed: Option<Streamed>,
    /// Median GPU time of the kernels of one frame, and per stage.
    pub gpu_ms: f64,
    pub tensorize_ms: f64,
    pub model_ms: f64,
    pub composite_ms: f64,
    /// Transfers per frame.
    pub moved: TransferStats,
    /// Frame uploads through the staging ring and through write_texture.
    pub ring: StagingStats,
}

/// The GPU timeline of streamed frames, from a timestamp before each
/// frame's tensorize and after its composite, written during the timed run
/// (two empty passes per frame). `profile_path`'s stage times come from
/// frames run one at a time instead, on a GPU that idles between them.
#[derive(Clone, Copy, Debug)]
pub struct Streamed {
    /// Median time from a frame's tensorize to the end of its composite.
    pub work_ms: f64,
    /// Median time from one frame's composite end to the next frame's
    /// tensorize: the next frame's upload copy, and any idle time.
    pub between_ms: f64,
    /// Work time over the timeline from the first frame's start to the
    /// last one's end.
    pub busy: f64,
    pub frames: usize,
}

impl Streamed {
    /// From [`Stamps::read_times`] of one pair per frame.
    fn of(times: &[f64]) -> Streamed {
        let pairs: Vec<(f64, f64)> = times.chunks_exact(2).map(|t| (t[0], t[1])).collect();
        let work: Vec<f64> = pairs.iter().map(|(b, e)| e - b).collect();
        let between: Vec<f64> = pairs.windows(2).map(|w| w[1].0 - w[0].1).collect();
        let span = match (pairs.first(), pairs.last()) {
            (Some(f), Some(l)) => l.1 - f.0,
            _ => 0.0,
        };
        Streamed {
            work_ms: median_min(&work).0,
            between_ms: median_min(&between).0,
            busy: work.iter().sum::<f64>() / span,
            frames: pairs.len(),
        }
    }
}

/// Frames stamped while streaming: a query set holds at most 4096
/// timestamps (wgpu's limit), two per frame.
const MAX_STREAM_STAMPS: usize = 2048;

/// One timestamp pair per streamed frame: before tensorize, after composite.
struct FrameMarks<'a> {
    stamps: &'a Stamps,
    pair: u32,
}

impl StageMarks for FrameMarks<'_> {
    fn begin(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage) {
        if stage == Stage::Tensorize {
            self.stamps.begin(encoder, self.pair);
        }
    }

    fn end(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage) {
        if stage == Stage::Output {
            self.stamps.end(encoder, self.pair);
        }
    }
}

impl PathResult {
    pub fn to_json(&self) -> serde_json::Value {
        let per = |v: u64| v as f64 / self.frames as f64;
        let streamed = self.streamed.map(|s| {
            json!({
                "frames": s.frames,
                "gpu_ms_per_frame": s.work_ms,
                "gpu_ms_between_frames": s.between_ms,
                "gpu_busy": s.busy,
            })
        });
        json!({
            "path": self.path,
            "frames": self.frames,
            "fps": self.fps,
            "wall_ms_per_frame": self.wall_ms,
            "upload_ms_per_frame": self.upload_ms,
            "encode_ms_per_frame": self.encode_ms,
            "recorded_during_upload": self.overlapped,
            "streamed": streamed,
            "gpu_ms_per_frame": self.gpu_ms,
            "gpu_ms_tensorize": self.tensorize_ms,
            "gpu_ms_model": self.model_ms,
            "gpu_ms_blur_composite": self.composite_ms,
            "uploads_per_frame": per(self.moved.uploads),
            "upload_bytes_per_frame": per(self.moved.upload_bytes),
            "downloads_per_frame": per(self.moved.downloads),
            "download_bytes_per_frame": per(self.moved.download_bytes),
            "ring_uploads": self.ring.staged,
            "write_texture_uploads": self.ring.fallbacks,
            "planes_unpacked": self.ring.planes_unpacked,
        })
    }
}

pub struct Bench {
    gpu: Gpu,
    segmenter: Segmenter,
    out: wgnn::gpu::live::Texture,
    pool: TexturePool,
    layout: FrameLayout,
    bytes: Vec<u8>,
    // The copy path's own buffers: the tensor as element 1 writes it, and
    // the mask as element 3 uploads it, with the shapes they hold.
    tensor_buf: wgpu::Buffer,
    tensor_shape: Vec<usize>,
    mask_buf: wgpu::Buffer,
    mask_shape: Vec<usize>,
    mask_bytes: u64,
    stamps: Stamps,
    /// Host time in upload calls since the last reset.
    upload_time: Duration,
    /// Host time in the segmenter's zero-copy call since the last reset.
    encode_time: Duration,
}

/// Timestamp pair 0 around tensorize, pair 1 around the composite.
struct Marks<'a>(&'a Stamps);

impl StageMarks for Marks<'_> {
    fn begin(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage) {
        self.0.begin(encoder, pair(stage));
    }

    fn end(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage) {
        self.0.end(encoder, pair(stage));
    }
}

fn pair(stage: Stage) -> u32 {
    match stage {
        Stage::Tensorize => 0,
        Stage::Output => 1,
    }
}

/// The model's timing: its whole dispatch when profiling.
fn model_timing(profile: bool) -> ModelTiming {
    if profile {
        ModelTiming::Whole
    } else {
        ModelTiming::Off
    }
}

/// The sample picture at `w` x `h` in `format` (RGBA-like or NV12/I420 with
/// BT.601 limited range), packed.
pub fn frame_bytes(format: VideoFormat, w: u32, h: u32) -> wgnn::Result<Vec<u8>> {
    let path = wgnn::assets_dir().join("samples/astronaut.png");
    let img = image::open(&path)
        .map_err(|e| wgnn::Error::Invalid(format!("{}: {e}", path.display())))?
        .to_rgba8();
    let img = image::imageops::resize(&img, w, h, image::imageops::FilterType::Triangle);
    let px = |x: u32, y: u32| {
        let p = img.get_pixel(x, y).0;
        [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])]
    };
    let luma = |[r, g, b]: [f32; 3]| (16.0 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0) as u8;
    let chroma = |[r, g, b]: [f32; 3]| {
        (
            (128.0 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0) as u8,
            (128.0 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0) as u8,
        )
    };
    Ok(match format {
        VideoFormat::Rgba | VideoFormat::Rgbx => img.into_raw(),
        VideoFormat::Bgra | VideoFormat::Bgrx => img
            .into_raw()
            .chunks_exact(4)
            .flat_map(|p| [p[2], p[1], p[0], p[3]])
            .collect(),
        VideoFormat::Rgb => img
            .into_raw()
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        VideoFormat::Nv12 | VideoFormat::I420 => {
            let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
            let mut y_plane = Vec::with_capacity((w * h) as usize);
            for y in 0..h {
                for x in 0..w {
                    y_plane.push(luma(px(x, y)));
                }
            }
            let mut u = Vec::new();
            let mut v = Vec::new();
            for y in 0..ch {
                for x in 0..cw {
                    let (cb, cr) = chroma(px((2 * x).min(w - 1), (2 * y).min(h - 1)));
                    u.push(cb);
                    v.push(cr);
                }
            }
            if format == VideoFormat::Nv12 {
                let uv: Vec<u8> = u.iter().zip(&v).flat_map(|(a, b)| [*a, *b]).collect();
                [y_plane, uv].concat()
            } else {
                [y_plane, u, v].concat()
            }
        }
    })
}

impl Bench {
    /// What the model computes in, and why.
    pub fn precision(&self) -> &wgnn::models::PrecisionChoice {
        self.segmenter.precision()
    }

    pub fn new(gpu: &Gpu, o: &Options) -> wgnn::Result<Bench> {
        let model = wgnn::models::load(&o.model)?;
        let options = SegmentOptions {
            precision: o.precision,
            ..SegmentOptions::new(SegmentEffect::Blur { strength: o.blur })
        };
        let mut segmenter = Segmenter::new(&Device::Gpu(gpu.clone()), model.into(), &options)?;
        let stages = segmenter.gpu_stages()?;
        let tensor_shape = stages.input().shape().to_vec();
        let mask_shape = stages.mask().shape().to_vec();
        let tensor_bytes = stages.tensorizer().output_bytes();
        let mask_bytes = stages.mask().byte_length() as u64;
        let out = create_rgba_texture(gpu, o.width, o.height)?;
        let layout = FrameLayout::packed(o.format, o.width, o.height);
        let bytes = frame_bytes(o.format, o.width, o.height)?;
        let buffer = |label, size, usage| {
            gpu.scoped(label, || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            })
        };
        let tensor_buf = buffer(
            "copy path tensor",
            tensor_bytes,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        )?;
        let mask_buf = buffer(
            "copy path mask",
            mask_bytes,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        )?;
        Ok(Bench {
            gpu: gpu.clone(),
            segmenter,
            out,
            pool: TexturePool::new(),
            layout,
            bytes,
            tensor_buf,
            tensor_shape,
            mask_buf,
            mask_shape,
            mask_bytes,
            stamps: Stamps::new(gpu, 2)?,
            upload_time: Duration::ZERO,
            encode_time: Duration::ZERO,
        })
    }

    /// One zero-copy frame through the segmenter, its stages stamped when
    /// profiling or its whole work as pair `stamp` of those stamps; returns
    /// its last submission and the model's GPU ms when profiling.
    fn zero_copy(
        &mut self,
        profile: bool,
        stamp: Option<(&Stamps, u32)>,
    ) -> wgnn::Result<(wgpu::SubmissionIndex, f64)> {
        let mut marks = Marks(&self.stamps);
        let mut frame_marks = stamp.map(|(stamps, pair)| FrameMarks { stamps, pair });
        let marks: Option<&mut dyn StageMarks> = match (profile, &mut frame_marks) {
            (true, _) => Some(&mut marks),
            (false, Some(f)) => Some(f),
            (false, None) => None,
        };
        if self.overlapped(profile) {
            let t = Instant::now();
            let (_frame, run) = self.segmenter.upload_run_gpu_into(
                &self.pool,
                &self.layout,
                &self.bytes,
                &self.out,
                model_timing(profile),
                marks,
            )?;
            self.upload_time += t.elapsed();
            return Ok((run.submission, run.model_ms.unwrap_or(0.0)));
        }
        let t = Instant::now();
        let frame = upload_frame(&self.gpu, &self.pool, &self.layout, &self.bytes)?;
        self.upload_time += t.elapsed();
        let t = Instant::now();
        let run = self
            .segmenter
            .run_gpu_into(&frame, &self.out, model_timing(profile), marks)?;
        self.encode_time += t.elapsed();
        Ok((run.submission, run.model_ms.unwrap_or(0.0)))
    }

    /// Whether zero-copy frames upload and record in one call: unprofiled
    /// frames (a timed model waits, so it is not recorded), unless
    /// `WGNN_UPLOAD_OVERLAP=0` asks for the upload and the segmenter's call
    /// one after the other, as an element without the overlap would.
    fn overlapped(&self, profile: bool) -> bool {
        !profile && wgnn::gpu::upload_overlap()
    }

    /// One unprofiled zero-copy frame (for `wgnn-bench soak`); returns its
    /// last submission.
    pub fn zero_copy_frame(&mut self) -> wgnn::Result<wgpu::SubmissionIndex> {
        Ok(self.zero_copy(false, None)?.0)
    }

    /// One frame the copy way; returns the model's GPU ms when profiling.
    fn copy(&mut self, profile: bool) -> wgnn::Result<f64> {
        let gpu = self.gpu.clone();
        let mut stages = self.segmenter.gpu_stages()?;
        // Element 1: frame in system memory -> tensor in system memory.
        let t = Instant::now();
        let frame = upload_frame(&gpu, &self.pool, &self.layout, &self.bytes)?;
        let mut uploading = t.elapsed();
        let mut enc = encoder(&gpu);
        if profile {
            self.stamps.begin(&mut enc, 0);
        }
        let tensor_buf = TensorBuffer::new(&self.tensor_buf, DataType::Float32, &self.tensor_shape);
        stages.tensorizer().encode(&mut enc, &frame, tensor_buf)?;
        if profile {
            self.stamps.end(&mut enc, 0);
        }
        submit(&gpu, enc)?;
        let tensor = gpu
            .download_buffer(&self.tensor_buf, 0, stages.tensorizer().output_bytes())?
            .wait()?;
        drop(frame);
        // Element 2: tensor -> mask, both in system memory.
        let t = Instant::now();
        stages.context().write_tensor(stages.input(), &tensor)?;
        uploading += t.elapsed();
        let model_ms = stages.run_model(model_timing(profile))?.unwrap_or(0.0);
        let mask = stages.context().read_tensor_blocking(stages.mask())?;
        // Element 3: frame + mask -> output frame in system memory.
        let t = Instant::now();
        let frame = upload_frame(&gpu, &self.pool, &self.layout, &self.bytes)?;
        gpu.upload_buffer(&self.mask_buf, 0, &mask[..self.mask_bytes as usize])?;
        uploading += t.elapsed();
        self.upload_time += uploading;
        let mut enc = encoder(&gpu);
        if profile {
            self.stamps.begin(&mut enc, 1);
        }
        let mask_buf = TensorBuffer::new(&self.mask_buf, DataType::Float32, &self.mask_shape);
        stages
            .compositor()
            .encode(&mut enc, &frame, mask_buf, &self.out)?;
        if profile {
            self.stamps.end(&mut enc, 1);
        }
        submit(&gpu, enc)?;
        let _output = download_rgba(&gpu, &self.out)?;
        Ok(model_ms)
    }

    /// Median GPU ms of the segmenter's graph dispatched `runs` times back
    /// to back on its own input (no frame, no video stages between): what
    /// the model stage costs outside the frame, for comparison with the
    /// `model` column.
    /// With `evict`, a copy of 128 MB (more than an H100's or H200's L2)
    /// is queued before each dispatch, so the model starts with none of its
    /// weights or tensors cached, as after a frame's video stages.
    pub fn model_alone(&mut self, runs: usize, evict: bool) -> wgnn::Result<f64> {
        const EVICT_BYTES: u64 = 128 << 20;
        let gpu = self.gpu.clone();
        let scratch = match evict {
            true => Some([0, 1].map(|_| {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("wgnn-bench cache eviction"),
                    size: EVICT_BYTES,
                    usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })),
            false => None,
        };
        let stages = self.segmenter.gpu_stages()?;
        let times = (0..runs)
            .map(|_| {
                if let Some([a, b]) = &scratch {
                    let mut e = encoder(&gpu);
                    e.copy_buffer_to_buffer(a, 0, b, 0, EVICT_BYTES);
                    submit(&gpu, e)?;
                }
                Ok(stages.run_model(ModelTiming::Whole)?.unwrap_or(0.0))
            })
            .collect::<wgnn::Result<Vec<f64>>>()?;
        Ok(median_min(&times).0)
    }

    /// Median stage times of `frames` profiled frames of one path.
    fn profile_path(&mut self, zero_copy: bool, frames: usize) -> wgnn::Result<[f64; 4]> {
        let mut stages = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..frames {
            let model = if zero_copy {
                self.zero_copy(true, None)?.1
            } else {
                self.copy(true)?
            };
            let t = self.stamps.read_ms()?;
            for (s, v) in stages
                .iter_mut()
                .zip([t[0], model, t[1], t[0] + model + t[1]])
            {
                s.push(v);
            }
        }
        Ok(stages.map(|s| median_min(&s).0))
    }

    pub fn run(&mut self, o: &Options, zero_copy: bool) -> wgnn::Result<PathResult> {
        let gpu = self.gpu.clone();
        for _ in 0..o.warmup {
            if zero_copy {
                self.zero_copy(false, None)?;
            } else {
                self.copy(false)?;
            }
        }
        gpu.wait_idle()?;
        let before = gpu.transfers();
        let ring_before = self.pool.upload_ring().stats();
        self.upload_time = Duration::ZERO;
        self.encode_time = Duration::ZERO;
        let frame_stamps = if zero_copy {
            Some(Stamps::new(
                &gpu,
                o.frames.clamp(1, MAX_STREAM_STAMPS) as u32,
            )?)
        } else {
            None
        };
        let t = Instant::now();
        let mut pending = VecDeque::new();
        for i in 0..o.frames {
            if zero_copy {
                let stamp = frame_stamps
                    .as_ref()
                    .filter(|_| i < MAX_STREAM_STAMPS)
                    .map(|s| (s, i as u32));
                pending.push_back(self.zero_copy(false, stamp)?.0);
                if pending.len() > o.in_flight {
                    let oldest = pending.pop_front().expect("not empty");
                    gpu.device()
                        .poll(wgpu::PollType::Wait {
                            submission_index: Some(oldest),
                            timeout: None,
                        })
                        .map_err(|e| wgnn::Error::DeviceFailed(e.to_string()))?;
                }
            } else {
                self.copy(false)?;
            }
        }
        gpu.wait_idle()?;
        let secs = t.elapsed().as_secs_f64();
        let moved = gpu.transfers().since(&before);
        let ring = self.pool.upload_ring().stats().since(&ring_before);
        let upload_ms = self.upload_time.as_secs_f64() * 1e3 / o.frames as f64;
        let encode_ms = zero_copy.then(|| self.encode_time.as_secs_f64() * 1e3 / o.frames as f64);
        let streamed = match &frame_stamps {
            Some(s) => Some(Streamed::of(&s.read_times()?)),
            None => None,
        };
        let [tensorize_ms, model_ms, composite_ms, gpu_ms] =
            self.profile_path(zero_copy, o.frames.clamp(1, 50))?;
        Ok(PathResult {
            path: if zero_copy { "zero-copy" } else { "copy" },
            frames: o.frames,
            fps: o.frames as f64 / secs,
            wall_ms: secs * 1e3 / o.frames as f64,
            upload_ms,
            overlapped: zero_copy && self.overlapped(false),
            encode_ms,
            streamed,
            gpu_ms,
            tensorize_ms,
            model_ms,
            composite_ms,
            moved,
            ring,
        })
    }
}
