//! What the subcommands share: exit codes, opening the device, and the
//! options declared once here and flattened into the subcommands that take
//! them. A subcommand whose `--quick` or defaults differ says so with
//! `#[command(mut_arg(..))]`, its help text built from the constants its
//! code reads.

use std::path::PathBuf;
use std::process::ExitCode;

use wgnn::gpu::Gpu;
use wgnn::ml::Precision;
use wgnn::video::VideoFormat;

/// wgnn-bench's exit codes. Its own: wgnn-selfie and wgnn-superres use 3 for an
/// input that cannot be opened and 4 for no GPU.
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_NO_GPU: u8 = 3;

/// What `--quick` caps the frames or timed iterations at.
pub const QUICK_RUNS: usize = 3;

/// `--json`.
#[derive(clap::Args)]
pub struct Json {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `--quick`; each subcommand's help says what it shrinks.
#[derive(Clone, Copy, clap::Args)]
pub struct Quick {
    /// Small sizes and few iterations (a smoke test).
    #[arg(long)]
    pub quick: bool,
}

impl Quick {
    /// `full`, or `small` with --quick.
    pub fn pick<T>(self, full: T, small: T) -> T {
        if self.quick {
            small
        } else {
            full
        }
    }

    /// A count from the command line: at most `small` with --quick, and at
    /// least 1.
    pub fn count(self, n: usize, small: usize) -> usize {
        self.pick(n, n.min(small)).max(1)
    }
}

/// `--precision`.
#[derive(clap::Args)]
pub struct PrecisionArg {
    /// What the model computes in: f32; f16; auto (f16 where the GPU has
    /// SHADER_F16 and the outputs stay within 1% RMS of f32).
    #[arg(long, default_value = "f32", value_parser = precision_parser())]
    pub precision: Precision,
}

/// `--precision`: auto, f32 or f16 (clap lists them in the help and the
/// completions).
pub fn precision_parser() -> impl clap::builder::TypedValueParser<Value = Precision> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Precision::NAMES).try_map(|s| s.parse::<Precision>())
}

/// The frames a frame benchmark runs: how many, their size and format.
#[derive(clap::Args)]
pub struct Frames {
    #[arg(long, default_value_t = 300)]
    pub frames: usize,
    #[arg(long, default_value_t = 1920)]
    pub width: u32,
    #[arg(long, default_value_t = 1080)]
    pub height: u32,
    /// Frame format (GStreamer name): RGBA, BGRx, NV12, I420, ...
    #[arg(long, default_value = "RGBA")]
    pub format: String,
}

impl Frames {
    /// --width x --height, or `small` with --quick.
    pub fn size(&self, quick: Quick, small: (u32, u32)) -> (u32, u32) {
        quick.pick((self.width, self.height), small)
    }

    /// --format, or the usage exit code after one line saying what is wrong.
    pub fn video_format(&self) -> Result<VideoFormat, ExitCode> {
        video_format(&self.format)
    }
}

/// `--quick`'s help for a benchmark of `small` frames.
pub fn quick_frames_help(small: (u32, u32)) -> String {
    format!(
        "A {}x{} frame and at most {QUICK_RUNS} frames (for software adapters)",
        small.0, small.1
    )
}

/// A `--format` value (a GStreamer format name), or the usage exit code
/// after one line saying what is wrong.
pub fn video_format(name: &str) -> Result<VideoFormat, ExitCode> {
    VideoFormat::from_name(name).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_USAGE)
    })
}

/// A `--model` path, or the bundled model at `bundled`.
pub fn model_or(model: &Option<PathBuf>, bundled: &str) -> PathBuf {
    model
        .clone()
        .unwrap_or_else(|| wgnn::models::bundled(bundled))
}

pub fn open_gpu() -> Result<Gpu, ExitCode> {
    Gpu::new().map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_NO_GPU)
    })
}

/// The device, where it has the timestamp queries GPU times need.
pub fn timed_gpu() -> Result<Gpu, ExitCode> {
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

pub fn fail(what: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {what}: {e}");
    ExitCode::from(EXIT_FAILED)
}

/// Exit 0 for a run that passed, 1 for one that failed its check (it
/// said why), or 1 after the error's line.
pub fn verdict(result: wgnn::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILED),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}
