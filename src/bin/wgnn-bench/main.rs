//! wgnn-bench: benchmarks and device facts. Every subcommand prints a table
//! (or JSON with `--json`); GPU times come from timestamp queries. Each
//! subcommand is a module with its own `Args` and `run`; this file parses
//! the command line and hands it to one.

mod adapters;
mod cli;
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
mod streams;
mod tensor_cores;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use wgnn::manual::{Generate, Item, Section};

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
            Item::Entry(
                "wgnn-bench streams --streams 8,16 --task detect,track --model yolov8n.onnx",
                "An Ultralytics YOLOv8n export (no model-proc) detecting alone, then with \
                 wgnntrack ! wgnnanalytics, and what tracking costs a stream more.",
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

/// The subcommands: each one's help is its `Args`' doc comment.
#[derive(Subcommand)]
enum Command {
    Adapters(adapters::Args),
    TensorCores(tensor_cores::Args),
    QueueOverlap(queue_overlap::Args),
    Ops(ops::Args),
    Models(models::Args),
    Pipeline(pipeline::Args),
    Soak(soak::Args),
    Detect(detect::Args),
    #[cfg(target_os = "linux")]
    Import(import::Args),
    Streams(streams::Args),
    Interop(interop::Args),
}

fn main() -> ExitCode {
    let quiet = format!("warn,{}", wgnn::gpu::QUIET_WGPU_LOGS);
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(quiet)).init();
    let cli = Cli::parse();
    if let Some(what) = cli.generate {
        return wgnn::manual::print(what, <Cli as clap::CommandFactory>::command(), &SECTIONS);
    }
    // arg_required_else_help: with neither, clap has printed the help.
    let Some(command) = cli.command else {
        return ExitCode::from(cli::EXIT_USAGE);
    };
    match command {
        Command::Adapters(args) => args.run(),
        Command::TensorCores(args) => args.run(),
        Command::QueueOverlap(args) => args.run(),
        Command::Ops(args) => args.run(),
        Command::Models(args) => args.run(),
        Command::Pipeline(args) => args.run(),
        Command::Soak(args) => args.run(),
        Command::Detect(args) => args.run(),
        #[cfg(target_os = "linux")]
        Command::Import(args) => args.run(),
        Command::Streams(args) => args.run(),
        Command::Interop(args) => args.run(),
    }
}
