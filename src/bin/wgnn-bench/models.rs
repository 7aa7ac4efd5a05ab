//! `wgnn-bench models`: the bundled models end to end, on a GPU context (GPU
//! time per inference from timestamp queries, median of many) and on the CPU
//! context (wall time per inference).
//!
//! Inputs are the sample picture (assets/samples/astronaut.png) resized to
//! the model's input, in the model's value range, so that `--save-io` can hand
//! the same input and our output to the PyTorch anchor for a check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::Gpu;
use wgnn::ml::{Context, Graph, Profile, Tensor, TensorDescriptor};

use crate::stamps::median_min;

pub struct ModelCase {
    /// "selfie 256x256": the name in tables and in the PyTorch anchor.
    pub name: String,
    /// File-name-safe key for `--save-io`.
    pub key: &'static str,
    /// Relative to the bundled models directory.
    pub file: &'static str,
    /// Input (height, width); `None` takes the size the file declares.
    pub hw: Option<(usize, usize)>,
}

/// The four models; `quick` shrinks the super-resolution inputs (the
/// selfie models have fixed sizes) so that a software adapter finishes fast.
pub fn cases(quick: bool) -> Vec<ModelCase> {
    let sr = |h: usize, w: usize, qh: usize, qw: usize| {
        if quick {
            (qh, qw)
        } else {
            (h, w)
        }
    };
    let (h2, w2) = sr(540, 960, 24, 32);
    let (h4, w4) = sr(270, 480, 12, 16);
    vec![
        ModelCase {
            name: "selfie 256x256".into(),
            key: "selfie_square",
            file: "selfie/selfie_segmentation.tflite",
            hw: None,
        },
        ModelCase {
            name: "selfie landscape 144x256".into(),
            key: "selfie_landscape",
            file: "selfie/selfie_segmentation_landscape.tflite",
            hw: None,
        },
        ModelCase {
            name: format!("esrgan-slim x2 {w2}x{h2}"),
            key: "esrgan_x2",
            file: "esrgan-slim/x2/model.json",
            hw: Some((h2, w2)),
        },
        ModelCase {
            name: format!("esrgan-slim x4 {w4}x{h4}"),
            key: "esrgan_x4",
            file: "esrgan-slim/x4/model.json",
            hw: Some((h4, w4)),
        },
    ]
}

pub struct Settings {
    pub gpu_iterations: usize,
    pub cpu_iterations: usize,
    pub top: usize,
}

#[derive(Clone, Debug)]
pub struct ModelResult {
    pub name: String,
    pub context: &'static str,
    pub input: Vec<usize>,
    pub output: Vec<usize>,
    /// Graph build (compile) time, ms.
    pub build_ms: f64,
    /// GPU time of one inference as dispatched (one pass, timestamps before
    /// and after it; GPU context only): median and minimum.
    pub gpu_ms: Option<f64>,
    pub gpu_min_ms: Option<f64>,
    /// Sum of the kernels' times when each runs in its own timestamped pass
    /// (the profile behind `by_op`), median run.
    pub kernel_sum_ms: Option<f64>,
    /// Host time of dispatch + wait for one inference.
    pub wall_ms: f64,
    /// Inferences per second with dispatches queued back to back.
    pub fps: f64,
    pub kernels: usize,
    /// ms per op type in the median profiled run (GPU timestamps, or wall
    /// time per node on the CPU context), largest first.
    pub by_op: Vec<(String, f64)>,
    /// The slowest single kernels of that run: (position, op, ms).
    pub slowest: Vec<(usize, String, f64)>,
    /// Largest |ours - reference| where a reference was computed (the CPU
    /// result against the GPU one), and the reference's largest magnitude.
    pub diff: Option<(f32, f32)>,
}

impl ModelResult {
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "model": self.name,
            "context": self.context,
            "input": self.input,
            "output": self.output,
            "build_ms": self.build_ms,
            "gpu_ms": self.gpu_ms,
            "gpu_min_ms": self.gpu_min_ms,
            "gpu_kernel_sum_ms": self.kernel_sum_ms,
            "wall_ms": self.wall_ms,
            "fps": self.fps,
            "kernels": self.kernels,
            "ms_by_op": self.by_op.iter().map(|(op, ms)| json!({"op": op, "ms": ms})).collect::<Vec<_>>(),
            "slowest_kernels": self.slowest.iter().map(|(i, op, ms)| json!({"index": i, "op": op, "ms": ms})).collect::<Vec<_>>(),
            "max_abs_diff_vs_gpu": self.diff.map(|d| d.0),
            "reference_max_abs": self.diff.map(|d| d.1),
        })
    }
}

/// The sample picture resized (bilinear) to `w` x `h`, NHWC, scaled to `range`.
pub fn sample_input(h: usize, w: usize, range: [f32; 2]) -> wgnn::Result<Vec<f32>> {
    let path = wgnn::assets_dir().join("samples/astronaut.png");
    let img = image::open(&path)
        .map_err(|e| wgnn::Error::Invalid(format!("{}: {e}", path.display())))?
        .to_rgb8();
    let img = image::imageops::resize(
        &img,
        w as u32,
        h as u32,
        image::imageops::FilterType::Triangle,
    );
    let [lo, hi] = range;
    Ok(img
        .into_raw()
        .iter()
        .map(|&v| lo + (hi - lo) * f32::from(v) / 255.0)
        .collect())
}

pub struct Loaded {
    pub model: wgnn::models::Model,
    pub input: Vec<f32>,
    pub hw: Option<(usize, usize)>,
}

pub fn load(case: &ModelCase) -> wgnn::Result<Loaded> {
    let model = wgnn::models::load(wgnn::models::bundled(case.file))?;
    let info = &model.inputs()[0];
    let (h, w) = match (case.hw, &info.shape[..]) {
        (Some(hw), _) => hw,
        (None, [_, Some(h), Some(w), _]) => (*h, *w),
        (None, s) => {
            return Err(wgnn::Error::Invalid(format!(
                "{}: input shape {s:?} has no fixed size",
                case.file
            )))
        }
    };
    let input = sample_input(h, w, info.range.unwrap_or([0.0, 1.0]))?;
    Ok(Loaded {
        model,
        input,
        hw: case.hw,
    })
}

struct Bound {
    graph: Graph,
    names: (String, String),
    x: Tensor,
    y: Tensor,
    input: Vec<usize>,
    output: Vec<usize>,
    build_ms: f64,
}

fn bind(ctx: &Context, loaded: &Loaded) -> wgnn::Result<Bound> {
    let t = Instant::now();
    let graph = loaded.model.build(ctx, loaded.hw)?;
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let (in_name, in_desc) = graph.inputs().remove(0);
    let (out_name, out_desc) = graph.outputs().remove(0);
    let x = ctx.create_tensor(
        TensorDescriptor::new(in_desc.data_type, in_desc.shape.clone()).writable(),
    )?;
    let y = ctx.create_tensor(
        TensorDescriptor::new(out_desc.data_type, out_desc.shape.clone()).readable(),
    )?;
    ctx.write_tensor(&x, bytemuck::cast_slice(&loaded.input))?;
    Ok(Bound {
        graph,
        names: (in_name, out_name),
        x,
        y,
        input: in_desc.shape,
        output: out_desc.shape,
        build_ms,
    })
}

impl Bound {
    fn dispatch(&self, ctx: &Context) -> wgnn::Result<()> {
        ctx.dispatch(
            &self.graph,
            &[(self.names.0.as_str(), &self.x)],
            &[(self.names.1.as_str(), &self.y)],
        )
    }

    fn gpu_time(&self, ctx: &Context) -> wgnn::Result<f64> {
        self.graph.gpu_time(
            ctx,
            &[(self.names.0.as_str(), &self.x)],
            &[(self.names.1.as_str(), &self.y)],
        )
    }

    fn profile(&self, ctx: &Context) -> wgnn::Result<Profile> {
        self.graph.profile(
            ctx,
            &[(self.names.0.as_str(), &self.x)],
            &[(self.names.1.as_str(), &self.y)],
        )
    }
}

/// GPU context: timestamps (median of `iterations` after two warm-ups), then
/// host time per inference, then back-to-back throughput. Returns the result
/// and our output for the input.
pub fn run_gpu(
    gpu: &Gpu,
    case: &ModelCase,
    loaded: &Loaded,
    s: &Settings,
) -> wgnn::Result<(ModelResult, Vec<f32>)> {
    let ctx = Context::gpu(gpu);
    let b = bind(&ctx, loaded)?;
    let n = s.gpu_iterations;
    let mut profiles = Vec::with_capacity(n);
    for i in 0..n + 2 {
        let p = b.profile(&ctx)?;
        if i >= 2 {
            profiles.push(p);
        }
    }
    profiles.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    let median = &profiles[profiles.len() / 2];
    let kernels = median.kernels.len();
    let (by_op, slowest) = breakdown(median, s.top);
    let mut spans = Vec::with_capacity(n);
    for i in 0..n + 2 {
        let ms = b.gpu_time(&ctx)?;
        if i >= 2 {
            spans.push(ms);
        }
    }
    let (gpu_ms, gpu_min_ms) = median_min(&spans);

    let mut walls = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        b.dispatch(&ctx)?;
        gpu.wait_idle()?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let t = Instant::now();
    for _ in 0..n {
        b.dispatch(&ctx)?;
    }
    gpu.wait_idle()?;
    let fps = n as f64 / t.elapsed().as_secs_f64();
    let output = ctx.read_f32(&b.y)?;
    let (wall_ms, _) = median_min(&walls);
    let result = ModelResult {
        name: case.name.clone(),
        context: "gpu",
        input: b.input.clone(),
        output: b.output.clone(),
        build_ms: b.build_ms,
        gpu_ms: Some(gpu_ms),
        gpu_min_ms: Some(gpu_min_ms),
        kernel_sum_ms: Some(median.total_ms),
        wall_ms,
        fps,
        kernels,
        by_op,
        slowest,
        diff: None,
    };
    b.graph.destroy();
    Ok((result, output))
}

/// Per op type, largest first, and the slowest single kernels (at least 3)
/// of one profiled run.
type Breakdown = (Vec<(String, f64)>, Vec<(usize, String, f64)>);

fn breakdown(p: &Profile, top: usize) -> Breakdown {
    let mut by_op: BTreeMap<String, f64> = BTreeMap::new();
    for (label, ms) in &p.kernels {
        *by_op.entry(label.clone()).or_default() += ms;
    }
    let mut by_op: Vec<(String, f64)> = by_op.into_iter().collect();
    by_op.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut slowest: Vec<(usize, String, f64)> = p
        .kernels
        .iter()
        .enumerate()
        .map(|(i, (l, ms))| (i, l.clone(), *ms))
        .collect();
    slowest.sort_by(|a, b| b.2.total_cmp(&a.2));
    slowest.truncate(top.max(3));
    (by_op, slowest)
}

/// CPU context: host time of dispatch + read per inference (median of
/// `iterations`). With `--top`, as many profiled runs again, timing each
/// node on the context's worker. Returns the result and the output.
pub fn run_cpu(
    case: &ModelCase,
    loaded: &Loaded,
    s: &Settings,
) -> wgnn::Result<(ModelResult, Vec<f32>)> {
    let ctx = Context::cpu();
    let b = bind(&ctx, loaded)?;
    let mut walls = Vec::new();
    let mut output = Vec::new();
    // No warm-up: the CPU context compiles nothing, and a large model can
    // take seconds per inference there.
    for _ in 0..s.cpu_iterations {
        let t = Instant::now();
        b.dispatch(&ctx)?;
        output = ctx.read_f32(&b.y)?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (wall_ms, _) = median_min(&walls);
    let (by_op, slowest) = match s.top {
        0 => Default::default(),
        _ => {
            let mut profiles = (0..s.cpu_iterations.max(1))
                .map(|_| b.profile(&ctx))
                .collect::<wgnn::Result<Vec<Profile>>>()?;
            profiles.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
            breakdown(&profiles[profiles.len() / 2], s.top)
        }
    };
    let result = ModelResult {
        name: case.name.clone(),
        context: "cpu",
        input: b.input.clone(),
        output: b.output.clone(),
        build_ms: b.build_ms,
        gpu_ms: None,
        kernel_sum_ms: None,
        gpu_min_ms: None,
        wall_ms,
        fps: 1e3 / wall_ms,
        kernels: b.graph.node_count(),
        by_op,
        slowest,
        diff: None,
    };
    ctx.destroy();
    Ok((result, output))
}

fn write_f32(path: &Path, values: &[f32]) -> wgnn::Result<()> {
    std::fs::write(path, bytemuck::cast_slice::<f32, u8>(values))
        .map_err(|e| wgnn::Error::Invalid(format!("{}: {e}", path.display())))
}

/// Writes `<key>.in.f32` and `<key>.out.f32` (little-endian float32, NHWC)
/// and returns the manifest entry describing them.
pub fn save_io(
    dir: &Path,
    case: &ModelCase,
    result: &ModelResult,
    input: &[f32],
    output: &[f32],
) -> wgnn::Result<serde_json::Value> {
    std::fs::create_dir_all(dir)
        .map_err(|e| wgnn::Error::Invalid(format!("{}: {e}", dir.display())))?;
    let in_file: PathBuf = format!("{}.in.f32", case.key).into();
    let out_file: PathBuf = format!("{}.out.f32", case.key).into();
    write_f32(&dir.join(&in_file), input)?;
    write_f32(&dir.join(&out_file), output)?;
    Ok(json!({
        "model": case.name,
        "key": case.key,
        "file": case.file,
        "input": in_file,
        "input_shape": result.input,
        "output": out_file,
        "output_shape": result.output,
        "context": result.context,
    }))
}
