//! `wgnn-bench models`: the bundled models, or any model file a user names
//! (`--model PATH`), end to end on a GPU context (GPU time per inference from
//! timestamp queries, median of many) and on the CPU context (wall time per
//! inference), with what import and fusion made of the file's operators.
//!
//! An image input gets the sample picture (assets/samples/astronaut.png)
//! resized to it, in the model's value range and layout, so that `--save-io`
//! can hand the same input and our output to the PyTorch anchor for a check;
//! any other input gets seeded values (floats in [0, 1), integers 0).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;
use wgnn::gpu::Gpu;

use crate::cli::{fail, timed_gpu, Json, PrecisionArg, Quick, QUICK_RUNS};
use crate::stamps::max_abs_diff;

mod measure;

use measure::{
    cases, load, run_cpu, run_gpu, save_io, user_case, Batch, Loaded, ModelCase, ModelResult,
    Settings,
};

/// Models end to end on the GPU (timestamped GPU ms per inference) and
/// CPU contexts (wall ms): the bundled ones (selfie square 256x256,
/// selfie landscape 144x256, ESRGAN-slim x2 at 960x540 and x4 at
/// 480x270), or the files given with --model (ONNX, TFLite, TF.js).
#[derive(clap::Args)]
#[command(mut_arg("quick", |a| a.help("Shrink the super-resolution inputs and the iteration counts")))]
#[command(mut_arg("precision", |a| a.help(PRECISION_HELP)))]
pub struct Args {
    /// A model file to measure instead of the bundled models (repeatable).
    #[arg(long = "model", value_name = "PATH")]
    models: Vec<PathBuf>,
    /// Items per run, one measurement each (e.g. 1,8,32): a model whose
    /// batch axis is open (ONNX dim_param, TF.js) is built for that many;
    /// one whose file fixes its batch is refused unless it is that batch.
    /// Default: each model's own batch (1 where it is open).
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = parse_batch)]
    batch: Vec<usize>,
    /// Input size HxW for --model files that take any size (e.g. 540x960).
    #[arg(long, value_name = "HxW", value_parser = parse_size)]
    size: Option<(usize, usize)>,
    #[command(flatten)]
    quick: Quick,
    /// Profiled GPU inferences per model, after 200 ms of warm-up (at least two).
    #[arg(long, default_value_t = 50)]
    iterations: usize,
    /// Timed CPU inferences per model (no warm-up).
    #[arg(long, default_value_t = 3)]
    cpu_iterations: usize,
    #[arg(long, value_enum, default_value_t = Contexts::Both)]
    context: Contexts,
    /// Only models whose name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Also list ms per op type and this many of the slowest kernels per
    /// model, each with its shapes, fusions and workgroups (GPU
    /// timestamps; on the CPU context, wall time per node); --json then
    /// lists every kernel in execution order too.
    #[arg(long, default_value_t = 0)]
    top: usize,
    /// Write each model's input and GPU output (raw float32, NHWC) and a
    /// manifest.json into this folder, for benches/anchors/models_torch.py.
    #[arg(long)]
    save_io: Option<PathBuf>,
    #[command(flatten)]
    precision: PrecisionArg,
    #[command(flatten)]
    json: Json,
}

const PRECISION_HELP: &str = "What the models compute in: f32; f16 (float16 between layers, \
                              float32 inputs and outputs); auto (f16 where the context is a GPU \
                              with SHADER_F16 and the outputs stay within 1% RMS of f32 on a \
                              probe input; its build ms includes that probe)";

/// `--context`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Contexts {
    Gpu,
    Cpu,
    Both,
}

/// One `--batch` count, at least 1.
fn parse_batch(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("a batch is at least 1 item".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "'{text}' is not a number of items (a list such as 1,8,32)"
        )),
    }
}

/// "HxW" (height x width), both at least 1.
fn parse_size(text: &str) -> Result<(usize, usize), String> {
    let bad = || format!("'{text}' is not a size HxW such as 540x960");
    let (h, w) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let h: usize = h.trim().parse().map_err(|_| bad())?;
    let w: usize = w.trim().parse().map_err(|_| bad())?;
    if h == 0 || w == 0 {
        return Err(format!("'{text}': height and width must be at least 1"));
    }
    Ok((h, w))
}

impl Args {
    pub fn run(self) -> ExitCode {
        let json = self.json.json;
        let settings = Settings {
            precision: self.precision.precision,
            gpu_iterations: self.quick.count(self.iterations, QUICK_RUNS),
            cpu_iterations: self.quick.count(self.cpu_iterations, 1),
            top: self.top,
        };
        let want_cpu = self.context != Contexts::Gpu;
        let gpu = if self.context != Contexts::Cpu {
            match timed_gpu() {
                Ok(g) => Some(g),
                Err(code) => return code,
            }
        } else {
            None
        };
        let cases: Vec<_> = match self.models.is_empty() {
            true => cases(self.quick.quick),
            false => self
                .models
                .iter()
                .map(|f| user_case(f.clone(), self.size))
                .collect(),
        };
        let cases = cases
            .into_iter()
            .filter(|c| self.filter.as_deref().is_none_or(|f| c.name.contains(f)));
        let device = gpu.as_ref().map(|g| g.describe());
        if !json {
            print_header(device.as_deref(), want_cpu);
        }
        let mut rows = Vec::new();
        let mut manifest = Vec::new();
        let batches: Vec<Option<usize>> = match self.batch.is_empty() {
            true => vec![None],
            false => self.batch.iter().copied().map(Some).collect(),
        };
        for case in cases {
            let run = Run {
                gpu: gpu.as_ref(),
                want_cpu,
                settings: &settings,
                save_io: self.save_io.as_deref(),
                batches: &batches,
            };
            let results = match run.case(&case, &mut manifest) {
                Ok(r) => r,
                Err(code) => return code,
            };
            for r in results {
                if !json {
                    print_row(&r, settings.top);
                }
                rows.push(r);
            }
        }
        if let Some(dir) = &self.save_io {
            let text = serde_json::to_string_pretty(&json!({
                "device": device,
                "models": manifest,
            }))
            .expect("JSON");
            if let Err(e) = std::fs::write(dir.join("manifest.json"), text) {
                return fail(&dir.display().to_string(), e);
            }
        }
        if json {
            println!(
                "{}",
                json!({
                    "device": device,
                    "cpu_threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
                    "models": rows.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                })
            );
        }
        ExitCode::SUCCESS
    }
}

/// Where and how each model runs.
struct Run<'a> {
    gpu: Option<&'a Gpu>,
    want_cpu: bool,
    settings: &'a Settings,
    save_io: Option<&'a Path>,
    /// `--batch`, `None` for the model's own.
    batches: &'a [Option<usize>],
}

impl Run<'_> {
    /// One model at each `--batch` (every batch checked against the
    /// file's before any is run); the exit code after the error's line
    /// where a step fails.
    fn case(
        &self,
        case: &ModelCase,
        manifest: &mut Vec<serde_json::Value>,
    ) -> Result<Vec<ModelResult>, ExitCode> {
        let loaded = load(case).map_err(|e| fail(&case.name, e))?;
        let batches = self
            .batches
            .iter()
            .map(|n| Batch::resolve(&loaded.model, *n))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| fail(&case.name, e))?;
        let mut results = Vec::new();
        for batch in batches {
            results.extend(self.at_batch(case, &loaded, batch, manifest)?);
        }
        Ok(results)
    }

    /// One model at one batch on the GPU and/or CPU context (the CPU's
    /// output compared with the GPU's), its `--save-io` files written (at
    /// batch 1 only: the anchor feeds one image) and their manifest entry
    /// added.
    fn at_batch(
        &self,
        case: &ModelCase,
        loaded: &Loaded,
        batch: Batch,
        manifest: &mut Vec<serde_json::Value>,
    ) -> Result<Vec<ModelResult>, ExitCode> {
        let mut gpu_out = None;
        let mut results = Vec::new();
        if let Some(gpu) = self.gpu {
            let (r, out) = run_gpu(gpu, case, loaded, self.settings, batch)
                .map_err(|e| fail(&format!("{} (gpu)", case.name), e))?;
            if let (Some(dir), 1) = (self.save_io, batch.items) {
                let input = loaded.inputs[0].1.to_f32();
                let entry =
                    save_io(dir, case, &r, &input, &out[0]).map_err(|e| fail(&case.name, e))?;
                manifest.push(entry);
            }
            gpu_out = Some(out);
            results.push(r);
        }
        if self.want_cpu {
            let (mut r, out) = run_cpu(case, loaded, self.settings, batch)
                .map_err(|e| fail(&format!("{} (cpu)", case.name), e))?;
            r.diff = gpu_out
                .as_ref()
                .map(|g: &Vec<Vec<f32>>| max_abs_diff(&out.concat(), &g.concat()));
            results.push(r);
        }
        Ok(results)
    }
}

fn print_header(device: Option<&str>, want_cpu: bool) {
    if let Some(d) = device {
        println!("device: {d}");
    }
    if want_cpu {
        println!(
            "cpu: {} threads (rayon)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
    }
    println!(
        "{:<28} {:<4} {:<4} {:>5} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10} {:>9} {:>16} {:>8} {:>9} {:>10}",
        "model",
        "ctx",
        "prec",
        "batch",
        "GPU ms",
        "GPU min",
        "ms/img",
        "img/s",
        "kernel sum",
        "wall ms",
        "fps",
        "ops>nodes>fused",
        "kernels",
        "build ms",
        "max|diff|"
    );
}

/// A model's table row, and with `--top` where its time went.
fn print_row(r: &ModelResult, top: usize) {
    println!(
        "{:<28} {:<4} {:<4} {:>5} {:>10} {:>10} {:>9.3} {:>9.1} {:>10} {:>10.3} {:>9.1} {:>16} {:>8} {:>9.0} {:>10}",
        r.name,
        r.context,
        r.precision,
        r.batch,
        opt_ms(r.gpu_ms),
        opt_ms(r.gpu_min_ms),
        r.ms_per_image(),
        r.images_per_s(),
        opt_ms(r.kernel_sum_ms),
        r.wall_ms,
        r.fps,
        format!("{}>{}>{}", r.file_ops, r.written, r.fused),
        r.kernels,
        r.build_ms,
        r.diff.map_or("-".into(), |d| format!("{:.2e}", d.0)),
    );
    if let Some(db) = r.psnr_vs_f32 {
        println!("    float16 vs float32 outputs: PSNR {db:.1} dB");
    }
    if top > 0 {
        let ops: Vec<String> = r
            .by_op
            .iter()
            .map(|(op, ms)| format!("{op} {ms:.3}"))
            .collect();
        let unit = match r.context {
            "gpu" => "GPU ms",
            _ => "CPU wall ms",
        };
        println!("    {unit} by op: {}", ops.join(", "));
        println!("    slowest kernels:");
        for k in r.slowest.iter().take(top) {
            println!("      #{:<3} {:>8.3}  {}", k.index, k.ms, k.detail);
        }
    }
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}
