//! `wgnn-bench pipeline`: frames through upload -> tensorize -> selfie model
//! -> blur composite, two ways:
//!
//! - zero-copy: the frame is uploaded once; the tensorizer writes straight
//!   into the model's input tensor and the compositor reads the mask tensor,
//!   both rented with `export_to_gpu`; nothing is read back.
//! - copy: what a chain of system-memory GStreamer elements does. Element 1
//!   uploads the frame, tensorizes it and reads the tensor back; element 2
//!   uploads the tensor, runs the model and reads the mask back; element 3
//!   uploads the frame and the mask again, composites and reads the output
//!   frame back for the next element.
//!
//! Both run the same GPU kernels; GPU ms/frame is their timestamped time (the
//! copies themselves are not in it). fps is host wall time over many frames;
//! bytes moved come from the transfer counters.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::{Gpu, TransferStats};
use wgnn::ml::{Context, Graph, Tensor, TensorDescriptor};
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
}

#[derive(Clone, Debug)]
pub struct PathResult {
    pub path: &'static str,
    pub frames: usize,
    pub fps: f64,
    pub wall_ms: f64,
    /// Median GPU time of the kernels of one frame, and per stage.
    pub gpu_ms: f64,
    pub tensorize_ms: f64,
    pub model_ms: f64,
    pub composite_ms: f64,
    /// Transfers per frame.
    pub moved: TransferStats,
}

impl PathResult {
    pub fn to_json(&self) -> serde_json::Value {
        let per = |v: u64| v as f64 / self.frames as f64;
        json!({
            "path": self.path,
            "frames": self.frames,
            "fps": self.fps,
            "wall_ms_per_frame": self.wall_ms,
            "gpu_ms_per_frame": self.gpu_ms,
            "gpu_ms_tensorize": self.tensorize_ms,
            "gpu_ms_model": self.model_ms,
            "gpu_ms_blur_composite": self.composite_ms,
            "uploads_per_frame": per(self.moved.uploads),
            "upload_bytes_per_frame": per(self.moved.upload_bytes),
            "downloads_per_frame": per(self.moved.downloads),
            "download_bytes_per_frame": per(self.moved.download_bytes),
        })
    }
}

pub struct Bench {
    gpu: Gpu,
    ctx: Context,
    graph: Graph,
    names: (String, String),
    input: Tensor,
    mask: Tensor,
    tensorizer: Tensorizer,
    compositor: Compositor,
    out: wgpu::Texture,
    pool: TexturePool,
    layout: FrameLayout,
    bytes: Vec<u8>,
    // The copy path's own buffers: the tensor as element 1 writes it, and
    // the mask as element 3 uploads it.
    tensor_buf: wgpu::Buffer,
    mask_buf: wgpu::Buffer,
    mask_bytes: u64,
    stamps: Stamps,
}

/// The sample picture at `w` x `h` in `format` (RGBA-like or NV12/I420 with
/// BT.601 limited range), packed.
fn frame_bytes(format: VideoFormat, w: u32, h: u32) -> wgnn::Result<Vec<u8>> {
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
    pub fn new(gpu: &Gpu, o: &Options) -> wgnn::Result<Bench> {
        let ctx = Context::gpu(gpu);
        let model = wgnn::models::load(&o.model)?;
        let graph = model.build(&ctx, None)?;
        let (in_name, in_desc) = graph.inputs().remove(0);
        let (out_name, out_desc) = graph.outputs().remove(0);
        let (&[1, ih, iw, 3], &[1, mh, mw, 1]) = (&in_desc.shape[..], &out_desc.shape[..]) else {
            return Err(wgnn::Error::Invalid(format!(
                "{}: not a segmentation model (input {:?}, output {:?})",
                o.model.display(),
                in_desc.shape,
                out_desc.shape
            )));
        };
        let [lo, hi] = model.inputs()[0].range.unwrap_or([0.0, 1.0]);
        let input = ctx.create_tensor(
            TensorDescriptor::new(in_desc.data_type, in_desc.shape.clone())
                .writable()
                .exportable_to_gpu(),
        )?;
        let mask = ctx.create_tensor(
            TensorDescriptor::new(out_desc.data_type, out_desc.shape.clone())
                .readable()
                .exportable_to_gpu(),
        )?;
        let tensorizer = Tensorizer::new(
            gpu,
            TensorizeOptions {
                normalize: Normalize {
                    scale: [(hi - lo) / 255.0; 3],
                    offset: [lo; 3],
                },
                ..TensorizeOptions::new(iw as u32, ih as u32)
            },
        )?;
        let compositor = Compositor::new(
            gpu,
            CompositeOptions {
                mask: MaskOptions::new(mw as u32, mh as u32),
                effect: Effect::Blur { strength: o.blur },
                color: ColorSpec::default(),
            },
        )?;
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
            tensorizer.output_bytes(),
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        )?;
        let mask_bytes = (mh * mw * 4) as u64;
        let mask_buf = buffer(
            "copy path mask",
            mask_bytes,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        )?;
        Ok(Bench {
            gpu: gpu.clone(),
            ctx,
            graph,
            names: (in_name, out_name),
            input,
            mask,
            tensorizer,
            compositor,
            out,
            pool: TexturePool::new(),
            layout,
            bytes,
            tensor_buf,
            mask_buf,
            mask_bytes,
            stamps: Stamps::new(gpu, 2)?,
        })
    }

    /// Runs the model: a plain dispatch, or a timed one returning its GPU
    /// ms (and waiting for it).
    fn model(&self, profile: bool) -> wgnn::Result<f64> {
        let ins = [(self.names.0.as_str(), &self.input)];
        let outs = [(self.names.1.as_str(), &self.mask)];
        if profile {
            self.graph.gpu_time(&self.ctx, &ins, &outs)
        } else {
            self.ctx.dispatch(&self.graph, &ins, &outs)?;
            Ok(0.0)
        }
    }

    /// One zero-copy frame; returns the last submission and the model's GPU
    /// ms when profiling.
    fn zero_copy(&mut self, profile: bool) -> wgnn::Result<(wgpu::SubmissionIndex, f64)> {
        let gpu = self.gpu.clone();
        let frame = upload_frame(&gpu, &self.pool, &self.layout, &self.bytes)?;
        let mut enc = encoder(&gpu);
        let rented = self.ctx.export_to_gpu(&self.input)?;
        if profile {
            self.stamps.begin(&mut enc, 0);
        }
        self.tensorizer.encode(&mut enc, &frame, rented.buffer())?;
        if profile {
            self.stamps.end(&mut enc, 0);
        }
        submit(&gpu, enc)?;
        drop(rented);
        let model_ms = self.model(profile)?;
        let mut enc = encoder(&gpu);
        let rented = self.ctx.export_to_gpu(&self.mask)?;
        if profile {
            self.stamps.begin(&mut enc, 1);
        }
        self.compositor
            .encode(&mut enc, &frame, rented.buffer(), &self.out)?;
        if profile {
            self.stamps.end(&mut enc, 1);
        }
        let index = submit(&gpu, enc)?;
        drop(rented);
        Ok((index, model_ms))
    }

    /// One frame the copy way; returns the model's GPU ms when profiling.
    fn copy(&mut self, profile: bool) -> wgnn::Result<f64> {
        let gpu = self.gpu.clone();
        // Element 1: frame in system memory -> tensor in system memory.
        let frame = upload_frame(&gpu, &self.pool, &self.layout, &self.bytes)?;
        let mut enc = encoder(&gpu);
        if profile {
            self.stamps.begin(&mut enc, 0);
        }
        self.tensorizer.encode(&mut enc, &frame, &self.tensor_buf)?;
        if profile {
            self.stamps.end(&mut enc, 0);
        }
        submit(&gpu, enc)?;
        let tensor = gpu
            .download_buffer(&self.tensor_buf, 0, self.tensorizer.output_bytes())?
            .wait()?;
        drop(frame);
        // Element 2: tensor -> mask, both in system memory.
        self.ctx.write_tensor(&self.input, &tensor)?;
        let model_ms = self.model(profile)?;
        let mask = self.ctx.read_tensor_blocking(&self.mask)?;
        // Element 3: frame + mask -> output frame in system memory.
        let frame = upload_frame(&gpu, &self.pool, &self.layout, &self.bytes)?;
        gpu.upload_buffer(&self.mask_buf, 0, &mask[..self.mask_bytes as usize])?;
        let mut enc = encoder(&gpu);
        if profile {
            self.stamps.begin(&mut enc, 1);
        }
        self.compositor
            .encode(&mut enc, &frame, &self.mask_buf, &self.out)?;
        if profile {
            self.stamps.end(&mut enc, 1);
        }
        submit(&gpu, enc)?;
        let _output = download_rgba(&gpu, &self.out)?;
        Ok(model_ms)
    }

    /// Median stage times of `frames` profiled frames of one path.
    fn profile_path(&mut self, zero_copy: bool, frames: usize) -> wgnn::Result<[f64; 4]> {
        let mut stages = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..frames {
            let model = if zero_copy {
                self.zero_copy(true)?.1
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
                self.zero_copy(false)?;
            } else {
                self.copy(false)?;
            }
        }
        gpu.wait_idle()?;
        let before = gpu.transfers();
        let t = Instant::now();
        let mut pending = VecDeque::new();
        for _ in 0..o.frames {
            if zero_copy {
                pending.push_back(self.zero_copy(false)?.0);
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
        let [tensorize_ms, model_ms, composite_ms, gpu_ms] =
            self.profile_path(zero_copy, o.frames.clamp(1, 50))?;
        Ok(PathResult {
            path: if zero_copy { "zero-copy" } else { "copy" },
            frames: o.frames,
            fps: o.frames as f64 / secs,
            wall_ms: secs * 1e3 / o.frames as f64,
            gpu_ms,
            tensorize_ms,
            model_ms,
            composite_ms,
            moved,
        })
    }
}
