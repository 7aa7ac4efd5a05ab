//! wgnn-bench: benchmarks and device facts. Every subcommand prints a table
//! (or JSON with `--json`); GPU times come from timestamp queries.

mod detect;
#[cfg(target_os = "linux")]
mod import;
mod interop;
mod models;
mod ops;
mod pipeline;
mod queue_overlap;
mod soak;
mod stamps;
#[cfg(feature = "gst")]
mod streams;
mod tensor_cores;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;
use wgnn::gpu::{Gpu, GpuOptions};
use wgnn::manual::{Generate, Item, Section};
use wgnn::ml::Precision;

/// `--precision`: auto, f32 or f16 (clap lists them in the help and the
/// completions).
fn precision_parser() -> impl clap::builder::TypedValueParser<Value = Precision> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Precision::NAMES).try_map(|s| s.parse::<Precision>())
}

#[derive(Parser)]
#[command(
    name = "wgnn-bench",
    version,
    about = "wgnn benchmarks and device facts",
    long_about = "wgnn benchmarks and device facts. Every subcommand prints a table, or JSON \
                  with --json; GPU times come from timestamp queries on the device, CPU times \
                  are wall clock. --quick runs small sizes and few iterations (a smoke test).",
    arg_required_else_help = true,
    after_long_help = wgnn::manual::help(&SECTIONS)
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Print the manual page (man) or a shell completion script (bash, zsh,
    /// fish) and exit.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<Generate>,
}

/// EXAMPLES and EXIT STATUS, for --help and the man page.
const SECTIONS: [&Section; 2] = [
    &Section {
        title: "EXAMPLES",
        items: &[
            Item::Entry(
                "wgnn-bench adapters",
                "The GPU adapters found and the one wgnn would use.",
            ),
            Item::Entry(
                "wgnn-bench models --model my_model.onnx --size 720x1280",
                "Your model on the GPU and CPU contexts, its image inputs at 720x1280.",
            ),
            Item::Entry(
                "wgnn-bench pipeline --json",
                "1080p frames through upload, tensorize, selfie model and blur, as JSON.",
            ),
            Item::Entry(
                "wgnn-bench ops --filter conv2d",
                "GPU time of the conv2d cases.",
            ),
            Item::Entry(
                "wgnn-bench tensor-cores",
                "What the tensor cores reach through wgpu, as ceilings for conv2d.",
            ),
            Item::Entry(
                "wgnn-bench soak --frames 20000 --every 2000",
                "Memory and live GPU objects over many frames; fails if they grow.",
            ),
            Item::Entry(
                "wgnn-bench streams --streams 1,8,32,64 --task detect",
                "1, 8, 32 and 64 live 1080p30 streams through wgnndetect ! wgnnoverlay \
                 sharing one model instance: which keep 30 fps, batches, GPU and CPU per stream.",
            ),
        ],
    },
    &Section {
        title: "EXIT STATUS",
        items: &[
            Item::Entry("0", "Done."),
            Item::Entry("1", "A benchmark failed (or soak found growth)."),
            Item::Entry("2", "Bad command line or model file."),
            Item::Entry("3", "No GPU adapter."),
        ],
    },
];

#[derive(Subcommand)]
enum Command {
    /// List the GPU adapters found and the one wgnn would use.
    Adapters,
    /// Ceilings of the tensor cores (cooperative matrices, 16x16x16 float16
    /// into float32) through wgpu: products alone, and with operands loaded
    /// contiguously or with an NHWC tensor's row stride (GPU timestamps).
    TensorCores {
        /// Timed dispatches per variant, after two warm-ups.
        #[arg(long, default_value_t = 10)]
        iterations: u32,
    },
    /// Whether a frame's upload copy overlaps the previous frame's compute
    /// work on wgpu's one queue when queued between that frame's first pass
    /// and the rest (stand-in work, wall ms per frame).
    QueueOverlap {
        /// Frames per measured order.
        #[arg(long, default_value_t = 300)]
        frames: u32,
        #[arg(long, default_value_t = 1920, value_parser = clap::value_parser!(u32).range(1..=8192))]
        width: u32,
        #[arg(long, default_value_t = 1080, value_parser = clap::value_parser!(u32).range(1..=8192))]
        height: u32,
        /// Multiply-adds per element in each dispatch of the stand-in work.
        #[arg(long, default_value_t = 10)]
        work: u32,
        /// Dependent dispatches of the stand-in work per frame.
        #[arg(long, default_value_t = 60)]
        dispatches: u32,
    },
    /// GPU time per operator (median of timestamped dispatches).
    Ops {
        /// Shrink every shape (for software adapters and smoke tests).
        #[arg(long)]
        quick: bool,
        /// Timed dispatches per case, after 200 ms of warm-up (at least two).
        #[arg(long, default_value_t = 20)]
        iterations: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Only cases whose name contains this.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Models end to end on the GPU (timestamped GPU ms per inference) and
    /// CPU contexts (wall ms): the bundled ones (selfie square 256x256,
    /// selfie landscape 144x256, ESRGAN-slim x2 at 960x540 and x4 at
    /// 480x270), or the files given with --model (ONNX, TFLite, TF.js).
    Models {
        /// A model file to measure instead of the bundled models (repeatable).
        #[arg(long = "model", value_name = "PATH")]
        models: Vec<PathBuf>,
        /// Input size HxW for --model files that take any size (e.g. 540x960).
        #[arg(long, value_name = "HxW", value_parser = parse_size)]
        size: Option<(usize, usize)>,
        /// Shrink the super-resolution inputs and the iteration counts.
        #[arg(long)]
        quick: bool,
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
        /// What the models compute in: f32; f16 (float16 between layers,
        /// float32 inputs and outputs); auto (f16 where the context is a GPU
        /// with SHADER_F16 and the outputs stay within 1% RMS of f32 on a
        /// probe input; its build ms includes that probe).
        #[arg(long, default_value = "f32", value_parser = precision_parser())]
        precision: Precision,
        #[arg(long)]
        json: bool,
    },
    /// Frames through upload -> tensorize -> selfie -> blur composite, kept on
    /// the GPU, against the copy path (read back and re-upload between stages).
    Pipeline {
        /// A 64x48 frame and a few frames (for software adapters).
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 300)]
        frames: usize,
        #[arg(long, default_value_t = 1920)]
        width: u32,
        #[arg(long, default_value_t = 1080)]
        height: u32,
        /// Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...
        #[arg(long, default_value = "RGBA")]
        format: String,
        /// Background blur sigma in frame pixels (wgnnsegment's default).
        #[arg(long, default_value_t = 12.0)]
        blur: f32,
        /// Segmentation model (default: the bundled square selfie model).
        #[arg(long)]
        model: Option<PathBuf>,
        /// What the model computes in: f32; f16; auto (f16 where the GPU
        /// has SHADER_F16 and the mask stays within 1% RMS of f32).
        #[arg(long, default_value = "f32", value_parser = precision_parser())]
        precision: Precision,
        #[arg(long)]
        json: bool,
    },
    /// The zero-copy pipeline (as `pipeline`) for many frames, reporting RSS,
    /// wgpu's allocator report and wgnn's live objects every N frames; exits
    /// non-zero unless the last report is within the tolerance of the first
    /// one after the warm-up.
    Soak {
        /// A 64x48 frame, 200 frames, a report every 50 (smoke tests).
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 100_000)]
        frames: usize,
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
        #[arg(long, default_value_t = 1920)]
        width: u32,
        #[arg(long, default_value_t = 1080)]
        height: u32,
        /// Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...
        #[arg(long, default_value = "RGBA")]
        format: String,
        /// Background blur sigma in frame pixels (wgnnsegment's default).
        #[arg(long, default_value_t = 12.0)]
        blur: f32,
        /// Segmentation model (default: the bundled square selfie model).
        #[arg(long)]
        model: Option<PathBuf>,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// What wgnndetect ! wgnnoverlay do to each frame: upload, tensorize,
    /// detector, decode + threshold + compact on the GPU, the short list read
    /// back, NMS, boxes and labels drawn on the GPU.
    Detect {
        /// A 320x180 frame and a few frames (for software adapters).
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 300)]
        frames: usize,
        #[arg(long, default_value_t = 1920)]
        width: u32,
        #[arg(long, default_value_t = 1080)]
        height: u32,
        /// Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...
        #[arg(long, default_value = "RGBA")]
        format: String,
        /// Detection model with a model-proc beside it (default: the bundled
        /// MediaPipe short-range face detector).
        #[arg(long)]
        model: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// A frame in a DMA-BUF imported (no upload) against the same frame
    /// uploaded, then tensorized: host ms, bytes uploaded, tensors compared.
    /// The DMA-BUF comes from /dev/dma_heap/system, /dev/udmabuf or a memfd
    /// (which only lavapipe takes). Exits 1 when the device cannot import
    /// it (the line says why) or the tensors differ.
    #[cfg(target_os = "linux")]
    Import {
        /// A 64x48 frame and a few frames (for software adapters).
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 100)]
        frames: usize,
        #[arg(long, default_value_t = 1920)]
        width: u32,
        #[arg(long, default_value_t = 1080)]
        height: u32,
        /// Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...
        #[arg(long, default_value = "NV12")]
        format: String,
        #[arg(long)]
        json: bool,
    },
    /// Live streams through wgnn's GStreamer elements in one process, every
    /// model element sharing one model instance (model-instance-id) and one
    /// device: for each count in --streams, that many pipelines of
    /// filesrc (the bundled astronaut photo) ! pngdec ! videoconvert !
    /// videoscale ! imagefreeze is-live=true ! wgnnupload ! the task's
    /// elements ! fakesink sync=true qos=true max-lateness=20ms. After
    /// every stream's first frames (at most 5 s past the first, which builds
    /// the model) and a 2 s warm-up, --seconds are measured: streams that
    /// kept the frame rate (within one frame and 1%) with no frame dropped
    /// (QoS), fps, capture-to-sink latency, the instance's mean batch and
    /// GPU ms per batch (profile on one element), host CPU per stream
    /// (user and system, % of one core), RSS and wgnn's live GPU memory.
    /// Needs the gst feature.
    Streams {
        /// Stream counts, one run each in this process (e.g. 1,8,32,64).
        #[arg(long, default_value = "1,8,32,64", value_name = "N,...")]
        streams: String,
        #[arg(long, value_enum, default_value_t = StreamsTask::Segment)]
        task: StreamsTask,
        /// Frames per dispatch of the shared instance (default: the
        /// stream count, at most 64).
        #[arg(long)]
        batch_size: Option<u32>,
        /// How long a partial batch waits for more frames, ms.
        #[arg(long, default_value_t = 10, value_name = "MS")]
        max_batch_latency: u32,
        /// Seconds measured (after the warm-up).
        #[arg(long, default_value_t = 10)]
        seconds: u32,
        #[arg(long, default_value_t = 1920)]
        width: u32,
        #[arg(long, default_value_t = 1080)]
        height: u32,
        /// Frames per second of every source.
        #[arg(long, default_value_t = 30)]
        fps: u32,
        /// Frame format of the sources (GStreamer name): NV12, RGBA, ...
        #[arg(long, default_value = "NV12")]
        format: String,
        /// The task's model (default: the bundled selfie model for segment,
        /// the MediaPipe short-range face detector for detect).
        #[arg(long)]
        model: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Seed 002's interop experiment: conv2d [1,100,100,100], 3x3 100->100,
    /// then add + relu, in custom WGSL, through the CPU, through a rented
    /// buffer, and all in the graph.
    Interop {
        /// A 12x12x16 input.
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 50)]
        iterations: usize,
        #[arg(long)]
        json: bool,
    },
}

/// `streams --task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StreamsTask {
    /// Selfie segmentation + background blur (wgnnsegment effect=blur).
    Segment,
    /// Face detection + boxes drawn (wgnndetect ! wgnnoverlay).
    Detect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Contexts {
    Gpu,
    Cpu,
    Both,
}

/// wgnn-bench's exit codes. Its own: wgnn-selfie and wgnn-superres use 3 for an
/// input that cannot be opened and 4 for no GPU.
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_NO_GPU: u8 = 3;

fn main() -> ExitCode {
    let quiet = format!("warn,{}", wgnn::gpu::QUIET_WGPU_LOGS);
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(quiet)).init();
    let cli = Cli::parse();
    if let Some(what) = cli.generate {
        return wgnn::manual::print(what, <Cli as clap::CommandFactory>::command(), &SECTIONS);
    }
    // arg_required_else_help: with neither, clap has printed the help.
    let Some(command) = cli.command else {
        return ExitCode::from(EXIT_USAGE);
    };
    match command {
        Command::Adapters => adapters(),
        Command::TensorCores { iterations } => bench_tensor_cores(iterations.max(1)),
        Command::QueueOverlap {
            frames,
            width,
            height,
            work,
            dispatches,
        } => bench_queue_overlap(&queue_overlap::Options {
            width,
            height,
            frames: frames.max(1),
            work,
            dispatches: dispatches.max(1),
        }),
        Command::Ops {
            quick,
            iterations,
            json,
            filter,
        } => bench_ops(quick, iterations.max(1), json, filter.as_deref()),
        Command::Models {
            models: files,
            size,
            quick,
            iterations,
            cpu_iterations,
            context,
            filter,
            top,
            save_io,
            precision,
            json,
        } => {
            let settings = models::Settings {
                precision,
                gpu_iterations: if quick { iterations.min(3) } else { iterations }.max(1),
                cpu_iterations: if quick {
                    cpu_iterations.min(1)
                } else {
                    cpu_iterations
                }
                .max(1),
                top,
            };
            let cases = if files.is_empty() {
                models::cases(quick)
            } else {
                files
                    .into_iter()
                    .map(|f| models::user_case(f, size))
                    .collect()
            };
            bench_models(cases, &settings, context, filter.as_deref(), save_io, json)
        }
        Command::Pipeline {
            quick,
            frames,
            width,
            height,
            format,
            blur,
            model,
            precision,
            json,
        } => {
            let format = match video_format(&format) {
                Ok(f) => f,
                Err(code) => return code,
            };
            let options = pipeline::Options {
                width: if quick { 64 } else { width },
                height: if quick { 48 } else { height },
                format,
                frames: if quick { frames.min(3) } else { frames }.max(1),
                warmup: if quick { 1 } else { 10 },
                blur: if quick { blur.min(2.0) } else { blur },
                model: model
                    .unwrap_or_else(|| wgnn::models::bundled("selfie/selfie_segmentation.tflite")),
                in_flight: 2,
                precision,
            };
            bench_pipeline(&options, json)
        }
        Command::Soak {
            quick,
            frames,
            every,
            warmup,
            tolerance,
            width,
            height,
            format,
            blur,
            model,
            json,
        } => {
            let format = match video_format(&format) {
                Ok(f) => f,
                Err(code) => return code,
            };
            let (frames, every) = if quick { (40, 10) } else { (frames, every) };
            let options = soak::SoakOptions {
                pipeline: pipeline::Options {
                    width: if quick { 64 } else { width },
                    height: if quick { 48 } else { height },
                    format,
                    frames,
                    warmup: 0,
                    blur: if quick { blur.min(2.0) } else { blur },
                    model: model.unwrap_or_else(|| {
                        wgnn::models::bundled("selfie/selfie_segmentation.tflite")
                    }),
                    in_flight: 2,
                    precision: Precision::F32,
                },
                every,
                warmup: warmup.unwrap_or((frames / 5).max(every)),
                tolerance,
                json,
            };
            bench_soak(&options)
        }
        Command::Detect {
            quick,
            frames,
            width,
            height,
            format,
            model,
            json,
        } => {
            let format = match video_format(&format) {
                Ok(f) => f,
                Err(code) => return code,
            };
            let options = detect::Options {
                width: if quick { 320 } else { width },
                height: if quick { 180 } else { height },
                format,
                frames: if quick { frames.min(3) } else { frames }.max(1),
                warmup: if quick { 1 } else { 10 },
                model: model.unwrap_or_else(|| {
                    wgnn::models::bundled("mediapipe/face_detection_short_range.tflite")
                }),
            };
            bench_detect(&options, json)
        }
        #[cfg(target_os = "linux")]
        Command::Import {
            quick,
            frames,
            width,
            height,
            format,
            json,
        } => {
            let format = match video_format(&format) {
                Ok(f) => f,
                Err(code) => return code,
            };
            let gpu = match open_gpu() {
                Ok(g) => g,
                Err(code) => return code,
            };
            let options = import::Options {
                width: if quick { 64 } else { width },
                height: if quick { 48 } else { height },
                format,
                frames: if quick { frames.min(3) } else { frames }.max(1),
            };
            match import::run(&gpu, &options, json) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(EXIT_FAILED),
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(EXIT_FAILED)
                }
            }
        }
        #[cfg(feature = "gst")]
        Command::Streams {
            streams,
            task,
            batch_size,
            max_batch_latency,
            seconds,
            width,
            height,
            fps,
            format,
            model,
            json,
        } => {
            let streams = match streams::parse_streams(&streams) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(EXIT_USAGE);
                }
            };
            let format = match video_format(&format) {
                Ok(f) => f,
                Err(code) => return code,
            };
            let options = streams::Options {
                streams,
                task: match task {
                    StreamsTask::Segment => streams::Task::Segment,
                    StreamsTask::Detect => streams::Task::Detect,
                },
                batch_size,
                max_batch_latency_ms: max_batch_latency,
                seconds,
                width,
                height,
                fps,
                format,
                model,
            };
            bench_streams(&options, json)
        }
        #[cfg(not(feature = "gst"))]
        Command::Streams { .. } => {
            eprintln!(
                "error: wgnn-bench streams runs GStreamer elements; this build has no GStreamer \
                 (built with --no-default-features)"
            );
            ExitCode::from(EXIT_USAGE)
        }
        Command::Interop {
            quick,
            iterations,
            json,
        } => bench_interop(
            quick,
            if quick { iterations.min(3) } else { iterations }.max(1),
            json,
        ),
    }
}

/// A `--format` value (a GStreamer format name), or the usage exit code
/// after one line saying what is wrong.
fn video_format(name: &str) -> Result<wgnn::video::VideoFormat, ExitCode> {
    wgnn::video::VideoFormat::from_name(name).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_USAGE)
    })
}

fn open_gpu() -> Result<Gpu, ExitCode> {
    Gpu::new().map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_NO_GPU)
    })
}

fn bench_tensor_cores(iterations: u32) -> ExitCode {
    let gpu = match open_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    match tensor_cores::run(&gpu, iterations) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

fn bench_queue_overlap(o: &queue_overlap::Options) -> ExitCode {
    let gpu = match open_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    match queue_overlap::run(&gpu, o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

fn bench_ops(quick: bool, iterations: usize, json: bool, filter: Option<&str>) -> ExitCode {
    let gpu = match open_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    if !gpu.has(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!(
            "error: {} has no TIMESTAMP_QUERY feature; GPU times need it",
            gpu.info().name
        );
        return ExitCode::from(EXIT_FAILED);
    }
    let f16 = gpu.has(wgpu::Features::SHADER_F16);
    let cases: Vec<_> = ops::cases(quick, f16)
        .into_iter()
        .filter(|c| filter.is_none_or(|f| c.name.contains(f) || c.shape.contains(f)))
        .collect();
    if !json {
        println!("device: {}", gpu.describe());
        println!(
            "{:<28} {:<34} {:>10} {:>10} {:>10} {:>9} {:>10}",
            "op", "shape", "median ms", "min ms", "GFLOP/s", "GB/s", "rel diff"
        );
    }
    let mut rows = Vec::new();
    for case in &cases {
        match ops::run(&gpu, case, iterations) {
            Ok(r) => {
                if !json {
                    println!(
                        "{:<28} {:<34} {:>10.4} {:>10.4} {:>10} {:>9.1} {:>10.2e}",
                        r.name,
                        r.shape,
                        r.median_ms,
                        r.min_ms,
                        r.gflops.map_or("-".into(), |g| format!("{g:.0}")),
                        r.gbps,
                        r.rel_diff
                    );
                }
                rows.push(r);
            }
            Err(e) => {
                eprintln!("error: {} {}: {e}", case.name, case.shape);
                return ExitCode::from(EXIT_FAILED);
            }
        }
    }
    if json {
        let items: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"op\":{:?},\"shape\":{:?},\"median_ms\":{},\"min_ms\":{},\"gflops\":{},\"gbps\":{},\"rel_diff\":{}}}",
                    r.name,
                    r.shape,
                    r.median_ms,
                    r.min_ms,
                    r.gflops.map_or("null".into(), |g| g.to_string()),
                    r.gbps,
                    r.rel_diff
                )
            })
            .collect();
        println!(
            "{{\"device\":{:?},\"ops\":[{}]}}",
            gpu.describe(),
            items.join(",")
        );
    }
    ExitCode::SUCCESS
}

fn timed_gpu() -> Result<wgnn::gpu::Gpu, ExitCode> {
    let gpu = open_gpu()?;
    if !gpu.has(wgpu::Features::TIMESTAMP_QUERY) {
        eprintln!(
            "error: {} has no TIMESTAMP_QUERY feature; GPU times need it",
            gpu.info().name
        );
        return Err(ExitCode::from(EXIT_FAILED));
    }
    Ok(gpu)
}

fn fail(what: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {what}: {e}");
    ExitCode::from(EXIT_FAILED)
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
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

fn bench_models(
    cases: Vec<models::ModelCase>,
    settings: &models::Settings,
    contexts: Contexts,
    filter: Option<&str>,
    save_io: Option<PathBuf>,
    json: bool,
) -> ExitCode {
    let want_gpu = contexts != Contexts::Cpu;
    let want_cpu = contexts != Contexts::Gpu;
    let gpu = if want_gpu {
        match timed_gpu() {
            Ok(g) => Some(g),
            Err(code) => return code,
        }
    } else {
        None
    };
    let cases: Vec<_> = cases
        .into_iter()
        .filter(|c| filter.is_none_or(|f| c.name.contains(f)))
        .collect();
    let device = gpu.as_ref().map(|g| g.describe());
    if !json {
        if let Some(d) = &device {
            println!("device: {d}");
        }
        if want_cpu {
            println!(
                "cpu: {} threads (rayon)",
                std::thread::available_parallelism().map_or(1, |n| n.get())
            );
        }
        println!(
            "{:<28} {:<4} {:<4} {:>10} {:>10} {:>10} {:>10} {:>9} {:>16} {:>8} {:>9} {:>10}",
            "model",
            "ctx",
            "prec",
            "GPU ms",
            "GPU min",
            "kernel sum",
            "wall ms",
            "fps",
            "ops>nodes>fused",
            "kernels",
            "build ms",
            "max|diff|"
        );
    }
    let mut rows = Vec::new();
    let mut manifest = Vec::new();
    for case in &cases {
        let loaded = match models::load(case) {
            Ok(l) => l,
            Err(e) => return fail(&case.name, e),
        };
        let mut gpu_out = None;
        let mut results = Vec::new();
        if let Some(gpu) = &gpu {
            match models::run_gpu(gpu, case, &loaded, settings) {
                Ok((r, out)) => {
                    if let Some(dir) = &save_io {
                        let input = loaded.inputs[0].1.to_f32();
                        match models::save_io(dir, case, &r, &input, &out[0]) {
                            Ok(entry) => manifest.push(entry),
                            Err(e) => return fail(&case.name, e),
                        }
                    }
                    gpu_out = Some(out);
                    results.push(r);
                }
                Err(e) => return fail(&format!("{} (gpu)", case.name), e),
            }
        }
        if want_cpu {
            match models::run_cpu(case, &loaded, settings) {
                Ok((mut r, out)) => {
                    r.diff = gpu_out
                        .as_ref()
                        .map(|g: &Vec<Vec<f32>>| stamps::max_abs_diff(&out.concat(), &g.concat()));
                    results.push(r);
                }
                Err(e) => return fail(&format!("{} (cpu)", case.name), e),
            }
        }
        for r in results {
            if !json {
                println!(
                    "{:<28} {:<4} {:<4} {:>10} {:>10} {:>10} {:>10.3} {:>9.1} {:>16} {:>8} {:>9.0} {:>10}",
                    r.name,
                    r.context,
                    r.precision,
                    opt_ms(r.gpu_ms),
                    opt_ms(r.gpu_min_ms),
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
                if settings.top > 0 {
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
                    for k in r.slowest.iter().take(settings.top) {
                        println!("      #{:<3} {:>8.3}  {}", k.index, k.ms, k.detail);
                    }
                }
            }
            rows.push(r);
        }
    }
    if let Some(dir) = &save_io {
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

fn bench_detect(options: &detect::Options, json: bool) -> ExitCode {
    let gpu = match timed_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    let r = match detect::run(&gpu, options) {
        Ok(r) => r,
        Err(e) => return fail("detect", e),
    };
    if json {
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

fn bench_soak(options: &soak::SoakOptions) -> ExitCode {
    if let Err(e) = options.validate() {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_USAGE);
    }
    let gpu = match timed_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    match soak::run(&gpu, options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILED),
        Err(e) => fail("soak", e),
    }
}

fn bench_pipeline(options: &pipeline::Options, json: bool) -> ExitCode {
    let gpu = match timed_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    let mut bench = match pipeline::Bench::new(&gpu, options) {
        Ok(b) => b,
        Err(e) => return fail("pipeline set-up", e),
    };
    let mut rows = Vec::new();
    for zero_copy in [true, false] {
        match bench.run(options, zero_copy) {
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
        options.width,
        options.height,
        options.format.name(),
        options.model.display(),
        options.blur,
        bench.precision()
    );
    if json {
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
    for r in &rows {
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
    for r in &rows {
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
    for r in &rows {
        println!(
            "{} frame uploads: {} through the staging ring ({} planes unpacked by compute, \
             the rest copied), {} through write_texture",
            r.path, r.ring.staged, r.ring.planes_unpacked, r.ring.fallbacks
        );
    }
    ExitCode::SUCCESS
}

#[cfg(feature = "gst")]
fn bench_streams(options: &streams::Options, json: bool) -> ExitCode {
    if let Err(e) = options.validate() {
        eprintln!("error: {e}");
        return ExitCode::from(EXIT_USAGE);
    }
    let gpu = match open_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    if !json {
        println!("device: {}", gpu.describe());
        println!("{}", options.describe());
        println!("{}", streams::RunReport::header());
    }
    // Rows print as each N finishes: the largest N may take a while to start.
    let result = streams::run(&gpu, options, |r| {
        if !json {
            println!("{}", r.row());
        }
    });
    let reports = match result {
        Ok(r) => r,
        Err(e) => return fail("streams", e),
    };
    let missing = reports.first().map_or(&[][..], |r| &r.missing[..]);
    if json {
        println!(
            "{}",
            json!({
                "device": gpu.describe(),
                "what": options.describe(),
                "runs": reports.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            })
        );
    } else if !missing.is_empty() {
        println!(
            "n/a: these elements have no {} (built before shared model instances)",
            missing.join(", ")
        );
    }
    ExitCode::SUCCESS
}

fn bench_interop(quick: bool, iterations: usize, json: bool) -> ExitCode {
    let gpu = match timed_gpu() {
        Ok(g) => g,
        Err(code) => return code,
    };
    let shape = interop::Shape::new(quick);
    let rows = match interop::run(&gpu, &shape, iterations) {
        Ok(r) => r,
        Err(e) => return fail("interop", e),
    };
    let ratio_wall = rows[2].wall_ms / rows[3].wall_ms;
    let ratio_gpu = rows[2].gpu_ms / rows[3].gpu_ms;
    if json {
        println!(
            "{}",
            json!({
                "device": gpu.describe(),
                "shape": shape.describe(),
                "iterations": iterations,
                "variants": rows.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                "ratio_3_over_4_wall": ratio_wall,
                "ratio_3_over_4_gpu": ratio_gpu,
            })
        );
        return ExitCode::SUCCESS;
    }
    println!("device: {}", gpu.describe());
    println!("{}, {iterations} iterations", shape.describe());
    println!(
        "{:<38} {:>9} {:>9} {:>9} {:>12} {:>12} {:>10}",
        "variant", "wall ms", "GPU ms", "seed ms", "up B/iter", "down B/iter", "max|diff|"
    );
    for r in &rows {
        let per = |v: u64| v as f64 / r.iterations as f64;
        println!(
            "{:<38} {:>9.3} {:>9.3} {:>9.2} {:>12.0} {:>12.0} {:>10.2e}",
            r.name,
            r.wall_ms,
            r.gpu_ms,
            r.seed_ms,
            per(r.moved.upload_bytes),
            per(r.moved.download_bytes),
            r.max_abs_diff
        );
    }
    println!("(3) / (4): wall {ratio_wall:.2}x, GPU {ratio_gpu:.2}x");
    ExitCode::SUCCESS
}

fn adapters() -> ExitCode {
    let options = GpuOptions::from_env();
    let backends = options.backends.unwrap_or(wgpu::Backends::PRIMARY);
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    for adapter in pollster::block_on(instance.enumerate_adapters(backends)) {
        let info = adapter.get_info();
        println!(
            "found:  {} ({:?}, {:?}, driver {} {})",
            info.name, info.device_type, info.backend, info.driver, info.driver_info
        );
    }
    match Gpu::with_options(&options) {
        Ok(gpu) => {
            println!("chosen: {}", gpu.describe());
            let limits = gpu.limits();
            println!(
                "limits: max buffer {} MiB, max storage binding {} MiB, max 2D texture {}, max workgroup invocations {}",
                limits.max_buffer_size >> 20,
                limits.max_storage_buffer_binding_size >> 20,
                limits.max_texture_dimension_2d,
                limits.max_compute_invocations_per_workgroup
            );
            let info = gpu.adapter().get_info();
            println!(
                "subgroup size: {}..{}",
                info.subgroup_min_size, info.subgroup_max_size
            );
            // Zero-copy input: the external-memory features are in the
            // feature list above; this says what they make possible.
            #[cfg(target_os = "linux")]
            println!("DMA-BUF import: {}", wgnn::video::dmabuf::support(&gpu));
            // Tensor-core kernels are only worth writing for shapes the driver offers.
            for p in gpu.adapter().cooperative_matrix_properties() {
                println!(
                    "cooperative matrix: {}x{}x{} {:?} -> {:?}{}",
                    p.m_size,
                    p.n_size,
                    p.k_size,
                    p.ab_type,
                    p.cr_type,
                    if p.saturating_accumulation {
                        " (saturating)"
                    } else {
                        ""
                    }
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_NO_GPU)
        }
    }
}
