//! Command line of wgnn-selfie.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use wgnn::gst::app;
use wgnn::manual::{self, Generate, Item, Section};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Effect {
    Blur,
    Replace,
    Mask,
    None,
}

/// Real-time selfie segmentation: blur, replace or show the background of a
/// camera, a video file or a test pattern, in a window or into a file.
///
/// With no input flag it plays the bundled sample video. Everything is checked
/// before work starts; the output is written beside its target and moved into
/// place only when the job ends well, so a failed job leaves nothing behind.
/// Without --output and a display, it writes wgnn-selfie.mp4, and refuses
/// to replace one that exists unless --overwrite is given. SIGINT (Ctrl-C),
/// SIGTERM or SIGHUP ends the stream and finalises the output; a second
/// signal says what the job still waits for, a third abandons it (the target
/// is left as it was).
#[derive(Debug, Parser)]
#[command(name = "wgnn-selfie", version, after_long_help = wgnn::manual::help(&SECTIONS))]
pub struct Args {
    /// Read a camera (V4L2), /dev/video0 when no device is given.
    #[arg(long, value_name = "DEVICE", num_args = 0..=1, default_missing_value = "/dev/video0",
          conflicts_with_all = ["input", "test_pattern"])]
    pub camera: Option<PathBuf>,
    /// Read a video or image file (anything GStreamer decodes).
    #[arg(long, short, value_name = "FILE", conflicts_with = "test_pattern")]
    pub input: Option<PathBuf>,
    /// Read GStreamer's moving test pattern.
    #[arg(long)]
    pub test_pattern: bool,

    /// What to do with the background.
    #[arg(long, value_enum, default_value = "blur")]
    pub effect: Effect,
    /// Background blur strength (Gaussian sigma in pixels, 0.5 to 64; 12
    /// when not given) for --effect blur, which it needs.
    #[arg(long, value_name = "SIGMA", value_parser = app::parse_blur)]
    pub blur: Option<f64>,
    /// Background for --effect replace (which it needs): #RRGGBB, a colour name (black, white,
    /// grey, red, green, blue, transparent) or an image file.
    #[arg(long, value_name = "COLOR|IMAGE", value_parser = app::parse_background)]
    pub background: Option<String>,
    /// Segmentation model file (default: the bundled MediaPipe model).
    #[arg(long, value_name = "FILE", conflicts_with = "landscape")]
    pub model: Option<PathBuf>,
    /// Use the bundled landscape model (144x256, faster, for 16:9 input).
    #[arg(long)]
    pub landscape: bool,
    /// Where the model runs: auto is a hardware GPU, else the CPU (also
    /// where the only GPU is a software one; --device gpu uses it anyway).
    #[arg(long, value_enum, default_value = "auto")]
    pub device: app::DeviceArg,
    /// What the model computes in: auto is float16 where the GPU has
    /// SHADER_F16 and the mask stays within 1% (RMS) of float32's on a probe
    /// input, else float32.
    #[arg(long, default_value = "auto", value_parser = app::precision_parser())]
    pub precision: wgnn::ml::Precision,
    /// Temporal smoothing of the mask against flicker (0 = off, up to 0.95).
    #[arg(long, value_name = "0..0.95", default_value_t = 0.5, value_parser = app::parse_smoothing)]
    pub smoothing: f64,

    /// Show the result in a window.
    #[arg(long, conflicts_with_all = ["output", "null"])]
    pub window: bool,
    /// Write the result: FILE.mp4 (H.264), FILE.mkv (H.264), or a PNG
    /// sequence like frames/%05d.png (one frame number: %d or %0Nd; %% for
    /// a percent sign). A symbolic link is written through (the file it
    /// leads to is replaced); a device or a FIFO is refused.
    #[arg(long, short, value_name = "FILE", conflicts_with = "null")]
    pub output: Option<PathBuf>,
    /// Write wgnn-selfie.mp4 (the output without --output), replacing it
    /// when it exists (without this, an existing one is refused).
    #[arg(long, conflicts_with_all = ["output", "null", "window"])]
    pub overwrite: bool,
    /// Process as fast as possible and throw the result away (benchmarks).
    #[arg(long)]
    pub null: bool,

    /// Scale the input to this size first (both or neither).
    #[arg(long, requires = "height", value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub width: Option<u32>,
    /// Scale the input to this height first (with --width).
    #[arg(long, requires = "width", value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub height: Option<u32>,
    /// Stop after this many frames.
    #[arg(long, value_name = "N", value_parser = app::parse_frames)]
    pub frames: Option<u64>,
    /// No statistics or progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,

    /// Print the manual page (man) or a shell completion script (bash, zsh,
    /// fish) and exit.
    #[arg(long, value_enum, value_name = "WHAT", exclusive = true)]
    pub generate: Option<Generate>,
}

/// EXAMPLES and EXIT STATUS, for --help and the man page.
pub const SECTIONS: [&Section; 2] = [
    &Section {
        title: "EXAMPLES",
        items: &[
            Item::Entry(
                "wgnn-selfie -o selfie.mp4",
                "The bundled sample video with a blurred background, written to selfie.mp4.",
            ),
            Item::Entry(
                "wgnn-selfie --camera --window",
                "/dev/video0 with a blurred background in a window.",
            ),
            Item::Entry(
                "wgnn-selfie -i talk.mp4 --effect replace --background beach.jpg -o out.mp4",
                "Replace the background of a video with an image.",
            ),
            Item::Entry(
                "wgnn-selfie --test-pattern --effect mask --null --frames 300",
                "A benchmark: 300 frames, nothing written, statistics on stderr.",
            ),
            Item::Entry(
                "wgnn-selfie --device cpu -i clip.mkv -o frames/%05d.png",
                "On the CPU context (no GPU needed), into a PNG sequence.",
            ),
        ],
    },
    &Section {
        title: "EXIT STATUS",
        items: &[
            manual::EXIT_DONE,
            manual::EXIT_PIPELINE,
            manual::EXIT_USAGE,
            Item::Entry(
                "3",
                "An input cannot be read or used: no camera, an unreadable file, a bad model.",
            ),
            manual::EXIT_NO_GPU,
            Item::Entry(
                "129, 130, 143",
                "Stopped by SIGHUP, SIGINT or SIGTERM; the output was finalised.",
            ),
        ],
    },
];
