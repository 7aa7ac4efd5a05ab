//! The models loaded, bound and run on each context, and what their
//! `--save-io` files hold (see the module above).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::Gpu;
use wgnn::ml::{
    Context, DataType, Graph, HostTensor, Precision, Profile, Tensor, TensorDescriptor,
};
use wgnn::tasks::ImageInput;
use wgnn::video::TensorLayout;

use crate::stamps::median_min;

pub struct ModelCase {
    /// "selfie 256x256": the name in tables and in the PyTorch anchor.
    pub name: String,
    /// File-name-safe key for `--save-io`.
    pub key: String,
    pub path: PathBuf,
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
            key: "selfie_square".into(),
            path: wgnn::models::bundled("selfie/selfie_segmentation.tflite"),
            hw: None,
        },
        ModelCase {
            name: "selfie landscape 144x256".into(),
            key: "selfie_landscape".into(),
            path: wgnn::models::bundled("selfie/selfie_segmentation_landscape.tflite"),
            hw: None,
        },
        ModelCase {
            name: format!("esrgan-slim x2 {w2}x{h2}"),
            key: "esrgan_x2".into(),
            path: wgnn::models::bundled("esrgan-slim/x2/model.json"),
            hw: Some((h2, w2)),
        },
        ModelCase {
            name: format!("esrgan-slim x4 {w4}x{h4}"),
            key: "esrgan_x4".into(),
            path: wgnn::models::bundled("esrgan-slim/x4/model.json"),
            hw: Some((h4, w4)),
        },
    ]
}

/// A model file a user names, at `hw` where it takes any size.
pub fn user_case(path: PathBuf, hw: Option<(usize, usize)>) -> ModelCase {
    // "x2/model.json" rather than "model.json": TF.js files (and many ONNX
    // exports) share one name.
    let file = |p: &std::path::Path| p.file_name().map(|s| s.to_string_lossy().into_owned());
    let stem = match (path.parent().and_then(file), file(&path)) {
        (Some(dir), Some(f)) if f.starts_with("model.") => format!("{dir}/{f}"),
        (_, Some(f)) => f,
        _ => "model".into(),
    };
    let key: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let name = match hw {
        Some((h, w)) => format!("{stem} {w}x{h}"),
        None => stem,
    };
    ModelCase {
        name,
        key,
        path,
        hw,
    }
}

pub struct Settings {
    pub precision: Precision,
    pub gpu_iterations: usize,
    pub cpu_iterations: usize,
    pub top: usize,
}

#[derive(Clone, Debug)]
pub struct ModelResult {
    pub name: String,
    pub context: &'static str,
    /// What the graph computed in ("f32" or "f16").
    pub precision: &'static str,
    /// Items per run (the leading dimension of the inputs).
    pub batch: usize,
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
    /// Runs per second with dispatches queued back to back (images per
    /// second is this times `batch`).
    pub fps: f64,
    /// Operators in the file, nodes wgnn wrote for them, nodes after fusion.
    pub file_ops: usize,
    pub written: usize,
    pub fused: usize,
    /// Kernels dispatched per run of the whole graph (whatever the batch);
    /// on the CPU context, the nodes run.
    pub kernels: usize,
    /// ms per op type in the median profiled run (GPU timestamps, or wall
    /// time per node on the CPU context), largest first.
    pub by_op: Vec<(String, f64)>,
    /// Every kernel of that run in execution order (with `--top`; on the
    /// CPU context, every node).
    pub kernel_list: Vec<KernelRow>,
    /// The slowest single kernels of that run, slowest first.
    pub slowest: Vec<KernelRow>,
    /// Largest |ours - reference| where a reference was computed (the CPU
    /// result against the GPU one), and the reference's largest magnitude.
    pub diff: Option<(f32, f32)>,
    /// A float16 graph's outputs against the float32 graph's on the same
    /// input and context: PSNR in dB against the float32 outputs' largest
    /// magnitude (the bar `auto` holds float16 to is 40 dB).
    pub psnr_vs_f32: Option<f64>,
}

/// One kernel of a profiled run.
#[derive(Clone, Debug)]
pub struct KernelRow {
    /// Its position in execution order.
    pub index: usize,
    pub op: String,
    /// Shapes, options, fusions and workgroups (`Profile::details`).
    pub detail: String,
    pub ms: f64,
}

impl KernelRow {
    fn to_json(&self) -> serde_json::Value {
        json!({"index": self.index, "op": self.op, "detail": self.detail, "ms": self.ms})
    }
}

impl ModelResult {
    /// GPU ms per run (wall ms on the CPU context) over the batch.
    pub fn ms_per_image(&self) -> f64 {
        self.gpu_ms.unwrap_or(self.wall_ms) / self.batch as f64
    }

    /// Images per second with runs queued back to back.
    pub fn images_per_s(&self) -> f64 {
        self.fps * self.batch as f64
    }

    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "model": self.name,
            "context": self.context,
            "precision": self.precision,
            "batch": self.batch,
            "ms_per_image": self.ms_per_image(),
            "images_per_s": self.images_per_s(),
            "input": self.input,
            "output": self.output,
            "build_ms": self.build_ms,
            "gpu_ms": self.gpu_ms,
            "gpu_min_ms": self.gpu_min_ms,
            "gpu_kernel_sum_ms": self.kernel_sum_ms,
            "wall_ms": self.wall_ms,
            "fps": self.fps,
            "file_operators": self.file_ops,
            "wgnn_nodes_written": self.written,
            "wgnn_nodes_after_fusion": self.fused,
            "kernels": self.kernels,
            "ms_by_op": self.by_op.iter().map(|(op, ms)| json!({"op": op, "ms": ms})).collect::<Vec<_>>(),
            "slowest_kernels": self.slowest.iter().map(KernelRow::to_json).collect::<Vec<_>>(),
            "kernel_list": self.kernel_list.iter().map(KernelRow::to_json).collect::<Vec<_>>(),
            "max_abs_diff_vs_gpu": self.diff.map(|d| d.0),
            "psnr_vs_f32_db": self.psnr_vs_f32,
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
    /// Every input, by name; the image input (if any) first.
    pub inputs: Vec<(String, HostTensor)>,
    pub hw: Option<(usize, usize)>,
}

/// Seeded values in [0, 1) (a small LCG: the same input on every machine).
fn seeded(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 8) as f32 / (1u32 << 24) as f32
        })
        .collect()
}

pub fn load(case: &ModelCase) -> wgnn::Result<Loaded> {
    let model = wgnn::models::load(&case.path)?;
    // The shapes the graph will have at this size (symbolic dimensions
    // resolved), without building it on a context.
    let shapes = model.input_shapes(case.hw)?;
    let image = ImageInput::of(&model).ok();
    let mut inputs = Vec::new();
    for (k, (info, shape)) in model.inputs().iter().zip(shapes).enumerate() {
        let count: usize = shape.iter().product();
        let value = match (&image, info.data_type) {
            (Some(img), DataType::Float32 | DataType::Float16) if img.name == info.name => {
                let (h, w) = match img.layout {
                    TensorLayout::Nhwc => (shape[1], shape[2]),
                    TensorLayout::Nchw => (shape[2], shape[3]),
                };
                let mut v = sample_input(h, w, img.range)?;
                if img.layout == TensorLayout::Nchw {
                    v = (0..3)
                        .flat_map(|c| v.iter().skip(c).step_by(3).copied().collect::<Vec<_>>())
                        .collect();
                }
                typed(info.data_type, shape, v)
            }
            (_, DataType::Int32) => HostTensor::i32(shape, vec![0; count]),
            (_, DataType::Uint8) => HostTensor::u8(shape, vec![0; count]),
            (_, dt) => typed(dt, shape, seeded(count, k as u32)),
        };
        inputs.push((info.name.clone(), value));
    }
    Ok(Loaded {
        model,
        inputs,
        hw: case.hw,
    })
}

fn typed(dt: DataType, shape: Vec<usize>, v: Vec<f32>) -> HostTensor {
    match dt {
        DataType::Float16 => {
            HostTensor::f16(shape, v.into_iter().map(half::f16::from_f32).collect())
        }
        _ => HostTensor::f32(shape, v),
    }
}

struct Bound {
    graph: Graph,
    inputs: Vec<(String, Tensor)>,
    outputs: Vec<(String, Tensor)>,
    input: Vec<usize>,
    output: Vec<usize>,
    build_ms: f64,
}

/// How many items a run takes: `build` is what the graph is built for
/// ([`wgnn::models::Model::build_batched`]: a leading dimension the file
/// leaves open becomes it), `items` what the inputs' leading dimension is
/// then (the file's own where it fixes one).
#[derive(Clone, Copy, Debug)]
pub struct Batch {
    pub build: usize,
    pub items: usize,
}

impl Batch {
    /// For `--batch n` (`None`: the model's own batch, 1 where it leaves
    /// the batch open). A model whose file fixes a batch other than `n`
    /// is refused: measuring another batch than asked would mislead.
    pub fn resolve(model: &wgnn::models::Model, n: Option<usize>) -> Result<Batch, String> {
        let fixed = model
            .inputs()
            .first()
            .and_then(|i| i.shape.first().copied().flatten());
        match (fixed, n) {
            (None, n) => Ok(Batch {
                build: n.unwrap_or(1),
                items: n.unwrap_or(1),
            }),
            (Some(f), Some(n)) if n != f => Err(format!(
                "has a fixed batch of {f}: export it with a dynamic batch axis to run --batch {n}"
            )),
            (Some(f), _) => Ok(Batch { build: 1, items: f }),
        }
    }
}

/// `value` (one item's worth, as [`load`] made it) repeated along the
/// leading axis to `shape`, where the batched graph wants more items.
fn repeated(value: &HostTensor, shape: &[usize]) -> wgnn::Result<HostTensor> {
    let have = &value.descriptor().shape;
    let items = match (have.first(), shape.first()) {
        (Some(&h), Some(&w)) if h > 0 && w % h == 0 && have[1..] == shape[1..] => w / h,
        _ => {
            return Err(wgnn::Error::Invalid(format!(
                "an input of shape {have:?} cannot fill {shape:?}"
            )))
        }
    };
    let desc = TensorDescriptor::new(value.data_type(), shape.to_vec()).operand();
    HostTensor::from_bytes(&desc, &value.bytes().repeat(items))
}

fn bind(ctx: &Context, loaded: &Loaded, precision: Precision, batch: Batch) -> wgnn::Result<Bound> {
    let t = Instant::now();
    let graph = loaded
        .model
        .build_batched(ctx, loaded.hw, precision, batch.build)?;
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut inputs = Vec::new();
    for (name, desc) in graph.inputs() {
        let value = loaded
            .inputs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| wgnn::Error::Invalid(format!("no value for input '{name}'")))?;
        let batched;
        let value = match value.descriptor().shape == desc.shape {
            true => value,
            false => {
                batched = repeated(value, &desc.shape)?;
                &batched
            }
        };
        let x = ctx.create_tensor(TensorDescriptor::new(desc.data_type, desc.shape).writable())?;
        ctx.write_host(&x, value)?;
        inputs.push((name, x));
    }
    let outputs = graph
        .outputs()
        .into_iter()
        .map(|(name, desc)| {
            let y =
                ctx.create_tensor(TensorDescriptor::new(desc.data_type, desc.shape).readable())?;
            Ok((name, y))
        })
        .collect::<wgnn::Result<Vec<_>>>()?;
    Ok(Bound {
        input: inputs[0].1.shape().to_vec(),
        output: outputs[0].1.shape().to_vec(),
        graph,
        inputs,
        outputs,
        build_ms,
    })
}

type Named<'a> = Vec<(&'a str, &'a Tensor)>;

fn named(v: &[(String, Tensor)]) -> Named<'_> {
    v.iter().map(|(n, t)| (n.as_str(), t)).collect()
}

impl Bound {
    fn named(&self) -> (Named<'_>, Named<'_>) {
        (named(&self.inputs), named(&self.outputs))
    }

    fn dispatch(&self, ctx: &Context) -> wgnn::Result<()> {
        let (i, o) = self.named();
        ctx.dispatch(&self.graph, &i, &o)
    }

    fn gpu_time(&self, ctx: &Context) -> wgnn::Result<f64> {
        let (i, o) = self.named();
        self.graph.gpu_time(ctx, &i, &o)
    }

    fn profile(&self, ctx: &Context) -> wgnn::Result<Profile> {
        let (i, o) = self.named();
        self.graph.profile(ctx, &i, &o)
    }

    /// Every output's values, in order, as f32: the first for `--save-io`,
    /// all of them for comparing the contexts.
    fn read(&self, ctx: &Context) -> wgnn::Result<Vec<Vec<f32>>> {
        self.outputs
            .iter()
            .map(|(_, t)| Ok(ctx.read_host(t)?.to_f32()))
            .collect()
    }

    fn counts(&self, loaded: &Loaded) -> (usize, usize, usize) {
        (
            loaded.model.operator_count(),
            self.graph.written_node_count(),
            self.graph.node_count(),
        )
    }
}

/// GPU context: timestamps (median of `iterations` after 200 ms of warm-up), then
/// host time per inference, then back-to-back throughput. Returns the result
/// and our output for the input.
pub fn run_gpu(
    gpu: &Gpu,
    case: &ModelCase,
    loaded: &Loaded,
    s: &Settings,
    batch: Batch,
) -> wgnn::Result<(ModelResult, Vec<Vec<f32>>)> {
    let ctx = Context::gpu(gpu);
    let b = bind(&ctx, loaded, s.precision, batch)?;
    let n = s.gpu_iterations;
    // Warm up for a fixed time, as `ops` does: after a long build (the
    // float16 probe takes seconds of CPU) the GPU has clocked down, and two
    // runs did not bring it back (selfie f16 on an H100 read 1.07-1.42 ms
    // after a 4-6 s build, 0.52 ms otherwise).
    let warm = Instant::now();
    let mut warmups = 0;
    while warmups < 2 || warm.elapsed() < std::time::Duration::from_millis(200) {
        b.profile(&ctx)?;
        warmups += 1;
    }
    let mut profiles = Vec::with_capacity(n);
    for _ in 0..n {
        profiles.push(b.profile(&ctx)?);
    }
    profiles.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    let median = &profiles[profiles.len() / 2];
    let kernels = median.kernels.len();
    let (by_op, kernel_list, slowest) = breakdown(median, s.top);
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
    let output = b.read(&ctx)?;
    let psnr_vs_f32 = if b.graph.precision() == Precision::F16 {
        let reference = bind(&ctx, loaded, Precision::F32, batch)?;
        reference.dispatch(&ctx)?;
        let r = reference.read(&ctx)?;
        reference.graph.destroy();
        Some(psnr(&r.concat(), &output.concat()))
    } else {
        None
    };
    let (file_ops, written, fused) = b.counts(loaded);
    let (wall_ms, _) = median_min(&walls);
    let result = ModelResult {
        name: case.name.clone(),
        context: "gpu",
        precision: b.graph.precision().name(),
        batch: batch.items,
        input: b.input.clone(),
        output: b.output.clone(),
        build_ms: b.build_ms,
        gpu_ms: Some(gpu_ms),
        gpu_min_ms: Some(gpu_min_ms),
        kernel_sum_ms: Some(median.total_ms),
        wall_ms,
        fps,
        file_ops,
        written,
        fused,
        kernels,
        by_op,
        kernel_list,
        slowest,
        diff: None,
        psnr_vs_f32,
    };
    b.graph.destroy();
    Ok((result, output))
}

/// PSNR of `other` against `reference` in dB, the peak being the largest
/// magnitude of `reference`; infinite where they are equal.
fn psnr(reference: &[f32], other: &[f32]) -> f64 {
    let peak = reference.iter().fold(0f64, |m, v| m.max((*v as f64).abs()));
    let mse = reference
        .iter()
        .zip(other)
        .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
        .sum::<f64>()
        / reference.len().max(1) as f64;
    10.0 * (peak * peak / mse).log10()
}

/// Per op type, largest first; every kernel in execution order (with
/// `top` above 0); and the slowest single kernels (at least 3) of one
/// profiled run.
type Breakdown = (Vec<(String, f64)>, Vec<KernelRow>, Vec<KernelRow>);

fn breakdown(p: &Profile, top: usize) -> Breakdown {
    let mut by_op: BTreeMap<String, f64> = BTreeMap::new();
    for (label, ms) in &p.kernels {
        *by_op.entry(label.clone()).or_default() += ms;
    }
    let mut by_op: Vec<(String, f64)> = by_op.into_iter().collect();
    by_op.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rows: Vec<KernelRow> = p
        .kernels
        .iter()
        .enumerate()
        .map(|(index, (op, ms))| KernelRow {
            index,
            op: op.clone(),
            detail: p.details.get(index).cloned().unwrap_or_default(),
            ms: *ms,
        })
        .collect();
    let mut slowest = rows.clone();
    slowest.sort_by(|a, b| b.ms.total_cmp(&a.ms));
    slowest.truncate(top.max(3));
    let list = if top > 0 { rows } else { Vec::new() };
    (by_op, list, slowest)
}

/// CPU context: host time of dispatch + read per inference (median of
/// `iterations`). With `--top`, as many profiled runs again, timing each
/// node on the context's worker. Returns the result and the output.
pub fn run_cpu(
    case: &ModelCase,
    loaded: &Loaded,
    s: &Settings,
    batch: Batch,
) -> wgnn::Result<(ModelResult, Vec<Vec<f32>>)> {
    let ctx = Context::cpu();
    let b = bind(&ctx, loaded, s.precision, batch)?;
    let mut walls = Vec::new();
    let mut output = Vec::new();
    // No warm-up: the CPU context compiles nothing, and a large model can
    // take seconds per inference there.
    for _ in 0..s.cpu_iterations {
        let t = Instant::now();
        b.dispatch(&ctx)?;
        output = b.read(&ctx)?;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (wall_ms, _) = median_min(&walls);
    let (by_op, kernel_list, slowest) = match s.top {
        0 => Default::default(),
        _ => {
            let mut profiles = (0..s.cpu_iterations.max(1))
                .map(|_| b.profile(&ctx))
                .collect::<wgnn::Result<Vec<Profile>>>()?;
            profiles.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
            breakdown(&profiles[profiles.len() / 2], s.top)
        }
    };
    let (file_ops, written, fused) = b.counts(loaded);
    let result = ModelResult {
        name: case.name.clone(),
        context: "cpu",
        precision: b.graph.precision().name(),
        batch: batch.items,
        input: b.input.clone(),
        output: b.output.clone(),
        build_ms: b.build_ms,
        gpu_ms: None,
        kernel_sum_ms: None,
        gpu_min_ms: None,
        wall_ms,
        fps: 1e3 / wall_ms,
        file_ops,
        written,
        fused,
        kernels: b.graph.node_count(),
        by_op,
        kernel_list,
        slowest,
        diff: None,
        psnr_vs_f32: None,
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
        "file": case.path,
        "input": in_file,
        "input_shape": result.input,
        "output": out_file,
        "output_shape": result.output,
        "context": result.context,
    }))
}
