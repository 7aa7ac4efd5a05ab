//! wgnn-superres: ESRGAN-slim super-resolution of an image or a video with
//! the `wgnnsuperres` element (registered statically), side by side with
//! bicubic on request, and PSNR/SSIM against the original with `--eval`.
//! Everything a user names is checked before any work; outputs are written
//! beside their target and moved into place at the end (wgnn::gst::app).

mod image_job;
mod metrics;
mod video_job;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use wgnn::gst::app::{self, DeviceArg, Interrupts, Output};
use wgnn::manual::{self, Generate, Item, Section};

/// Super-resolution of an image (PNG, JPEG) or a video file with ESRGAN-slim.
///
/// Everything is checked before work starts; the output is written beside
/// its target and moved into place only when the job ends well, so a failed
/// job leaves nothing behind; without -o, an existing INPUT_x<scale> file is
/// refused unless --overwrite is given. Images: at most 16384 pixels on a
/// side and 64 Mpixel, read from their header before decoding, and at most
/// 16384 pixels on a side after upscaling (side by side with --compare counts
/// twice the width). SIGINT (Ctrl-C), SIGTERM or SIGHUP ends a video and
/// finalises the file; a second signal says what the job still waits for, a
/// third abandons it (the target is left as it was). An image job stops at
/// once.
#[derive(Debug, Parser)]
#[command(
    name = "wgnn-superres",
    version,
    // INPUT is optional to clap only so that --generate needs none.
    override_usage = "wgnn-superres [OPTIONS] <INPUT>\n       wgnn-superres --generate <WHAT>",
    after_long_help = wgnn::manual::help(&SECTIONS)
)]
pub struct Args {
    /// Image (PNG, JPEG) or video (anything GStreamer decodes).
    #[arg(required_unless_present = "generate")]
    input: Option<PathBuf>,
    /// Output: an image (.png, .jpg) for an image input; .mp4 or .mkv for a
    /// video (H.264 High profile, 4:2:0). Default: INPUT's name with
    /// _x<scale> (.png or .mp4) in the current folder. A symbolic link is
    /// written through (the file it leads to is replaced); a device or a FIFO
    /// is refused.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace the default output (without -o) when it exists.
    #[arg(long, conflicts_with = "output")]
    overwrite: bool,
    /// Upscaling factor.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=4))]
    scale: u32,
    /// Side by side: bicubic on the left, the model on the right.
    #[arg(long)]
    compare: bool,
    /// Evaluate on an image: downscale it by --scale, upscale it back with
    /// bicubic and with the model, and print PSNR/SSIM of both against the
    /// original (luma, border of --scale pixels left out).
    #[arg(long)]
    eval: bool,
    /// Another super-resolution model (TF.js model.json or TFLite).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Where the model runs: auto is a hardware GPU, else the CPU (also
    /// where the only GPU is a software one; --device gpu uses it anyway).
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
    /// What the model computes in: auto is float16 where the GPU has
    /// SHADER_F16 and the picture stays within 1% (RMS, 40 dB) of
    /// float32's on a probe input, else float32.
    #[arg(long, default_value = "auto", value_parser = app::precision_parser())]
    precision: wgnn::ml::Precision,
    /// Stop a video after N frames (1 or more).
    #[arg(long, value_name = "N", value_parser = app::parse_frames)]
    frames: Option<u64>,
    /// No progress bar or summary.
    #[arg(long, short)]
    quiet: bool,
    /// Print the manual page (man) or a shell completion script (bash, zsh,
    /// fish) and exit.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    generate: Option<Generate>,
}

impl Args {
    /// INPUT, which clap requires unless --generate was given (and then no
    /// job runs).
    pub fn input(&self) -> &Path {
        self.input.as_deref().unwrap_or(Path::new(""))
    }
}

/// EXAMPLES and EXIT STATUS, for --help and the man page.
const SECTIONS: [&Section; 2] = [
    &Section {
        title: "EXAMPLES",
        items: &[
            Item::Entry(
                "wgnn-superres photo.jpg",
                "Upscale twice; writes photo_x2.png in the current folder.",
            ),
            Item::Entry(
                "wgnn-superres --scale 4 --compare clip.mp4 -o compare.mp4",
                "A video upscaled four times, bicubic on the left and the model on the right.",
            ),
            Item::Entry(
                "wgnn-superres --eval /usr/share/wgnn/samples/astronaut.png",
                "PSNR and SSIM of the model and of bicubic against the original image.",
            ),
            Item::Entry(
                "wgnn-superres --model my_sr.tflite --device cpu in.png -o out.png",
                "Another super-resolution model, on the CPU context.",
            ),
        ],
    },
    &Section {
        title: "EXIT STATUS",
        items: &[
            manual::EXIT_DONE,
            manual::EXIT_PIPELINE,
            manual::EXIT_USAGE,
            Item::Entry("3", "The input or the model cannot be read or used."),
            manual::EXIT_NO_GPU,
            Item::Entry(
                "129, 130, 143",
                "Stopped by SIGHUP, SIGINT or SIGTERM; a video output was finalised.",
            ),
        ],
    },
];

#[derive(Debug)]
pub struct Failure {
    code: u8,
    message: String,
}

pub fn fail(code: u8, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(what) = args.generate {
        return wgnn::manual::print(what, <Args as clap::CommandFactory>::command(), &SECTIONS);
    }
    app::init_logger();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("wgnn-superres: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Whether the input (a regular file, checked) is an image by its first
/// bytes.
fn is_image(path: &Path) -> bool {
    wgnn::files::open_regular(path)
        .map(std::io::BufReader::new)
        .and_then(|f| image::ImageReader::new(f).with_guessed_format())
        .is_ok_and(|r| r.format().is_some())
}

/// What `sr` (a wgnnsuperres that ran) says its model computed in: "f16
/// (why)", or "" before a frame.
pub fn precision_used(sr: &gst::Element) -> String {
    use gst::prelude::ObjectExt;
    sr.property::<Option<String>>("precision-used")
        .unwrap_or_default()
}

/// The element's line: the device settled by the CLI, the model checked.
pub fn element_line(args: &Args, on_cpu: bool, model: &Path) -> String {
    format!(
        "wgnnsuperres name=sr scale={} compare={} device={} precision={} model=\"{}\"",
        args.scale,
        args.compare,
        if on_cpu { "cpu" } else { "gpu" },
        args.precision,
        model.display().to_string().replace('"', "\\\"")
    )
}

fn default_output(input: &Path, scale: u32, ext: &str) -> PathBuf {
    let stem = input.file_stem().unwrap_or_default().to_string_lossy();
    PathBuf::from(format!("{stem}_x{scale}.{ext}"))
}

/// Whether `path` names an image this CLI writes.
fn image_extension(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    matches!(ext.as_str(), "png" | "jpg" | "jpeg")
}

/// Everything settled before the work starts.
pub struct Job {
    pub model: PathBuf,
    pub gpu: Option<wgnn::gpu::Gpu>,
    pub output: Option<Output>,
    pub interrupts: Interrupts,
}

fn run(args: &Args) -> Result<u8, Failure> {
    let interrupts = Interrupts::install("wgnn-superres")
        .map_err(|e| fail(1, format!("cannot handle SIGINT/SIGTERM/SIGHUP: {e}")))?;
    // The input, readable, and a regular file: a FIFO would block.
    if let Err(e) = wgnn::files::open_regular(args.input()) {
        return Err(fail(
            3,
            format!("cannot read {}: {e}", args.input().display()),
        ));
    }
    let image = is_image(args.input());
    if args.eval && !image {
        return Err(fail(
            2,
            format!(
                "--eval needs an image (PNG or JPEG); {} is not one",
                args.input().display()
            ),
        ));
    }
    if args.eval && args.compare {
        return Err(fail(
            2,
            "--eval already compares with bicubic; drop --compare",
        ));
    }
    if image && args.frames.is_some() {
        return Err(fail(
            2,
            format!(
                "--frames stops a video; {} is an image, drop --frames",
                args.input().display()
            ),
        ));
    }
    // The output: its kind from its name, not the input, its folder
    // writable (the temporary file is created there now).
    let target = match (&args.output, image, args.eval) {
        (Some(p), _, _) => Some(p.clone()),
        (None, true, true) => None,
        (None, true, false) => Some(default_output(args.input(), args.scale, "png")),
        (None, false, _) => Some(default_output(args.input(), args.scale, "mp4")),
    };
    if let Some(t) = &target {
        if image && !image_extension(t) {
            return Err(fail(
                2,
                format!("-o {}: an image input writes .png or .jpg", t.display()),
            ));
        }
        if !image && app::Muxer::for_path(t).is_none() {
            return Err(fail(
                2,
                format!("-o {}: a video input writes .mp4 or .mkv", t.display()),
            ));
        }
        if app::same_file(args.input(), t) {
            return Err(fail(
                2,
                format!("-o {} is the input file; give another name", t.display()),
            ));
        }
        // symlink_metadata: a dangling link there is something too.
        if args.output.is_none() && !args.overwrite && std::fs::symlink_metadata(t).is_ok() {
            return Err(fail(
                2,
                format!(
                    "{} exists (the default output): give --overwrite to replace it, or -o \
                     another name",
                    t.display()
                ),
            ));
        }
    } else if args.overwrite {
        return Err(fail(
            2,
            "--eval without -o writes nothing; drop --overwrite",
        ));
    }
    // An image's size from its header, before anything is allocated.
    let size = if image {
        Some(image_job::check_size(args)?)
    } else {
        None
    };
    let output = match &target {
        Some(t) => {
            let out = Output::file(t).map_err(|e| fail(2, format!("-o: {e}")))?;
            for path in out.temporaries() {
                interrupts.remove_on_abandon(path);
            }
            Some(out)
        }
        None => None,
    };
    // The model, loaded and checked once.
    let model = args.model.clone().unwrap_or_else(|| {
        wgnn::models::bundled(&format!("esrgan-slim/x{}/model.json", args.scale))
    });
    let loaded = wgnn::models::load(&model).map_err(|e| fail(3, app::model_failure(&model, &e)))?;
    wgnn::tasks::Upscaler::check(&loaded, args.scale)
        .map_err(|e| fail(3, app::model_failure(&model, &e)))?;
    drop(loaded);

    wgnn::gst::register_static()
        .map_err(|e| fail(1, format!("cannot register the wgnn elements: {e}")))?;
    // Opened once here and handed to the pipeline, so the element does not
    // open a second device.
    let gpu = app::choose_device("wgnn-superres", args.device).map_err(|e| fail(4, e))?;
    let job = Job {
        model,
        gpu,
        output,
        interrupts,
    };
    match size {
        Some(size) => image_job::run(args, job, size),
        None => video_job::run(args, job),
    }
}
