//! wgnn-bench: benchmarks and device facts.
//!
//! `wgnn-bench adapters` lists the adapters wgpu sees and the one wgnn picks.
//! The timing subcommands (ops, models, pipeline, interop) land with the
//! performance issue.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use wgnn::gpu::{Gpu, GpuOptions};

#[derive(Parser)]
#[command(
    name = "wgnn-bench",
    version,
    about = "wgnn benchmarks and device facts"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the GPU adapters found and the one wgnn would use.
    Adapters,
}

/// Exit codes shared by the wgnn binaries.
const EXIT_NO_GPU: u8 = 3;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    match cli.command {
        Command::Adapters => adapters(),
    }
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
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_NO_GPU)
        }
    }
}
