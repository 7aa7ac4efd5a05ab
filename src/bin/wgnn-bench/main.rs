//! wgnn-bench: benchmarks and device facts. Every subcommand prints a table
//! (or JSON with `--json`); GPU times come from timestamp queries.

mod ops;

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
    /// GPU time per operator (median of timestamped dispatches).
    Ops {
        /// Shrink every shape (for software adapters and smoke tests).
        #[arg(long)]
        quick: bool,
        /// Timed dispatches per case, after two warm-ups.
        #[arg(long, default_value_t = 20)]
        iterations: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Only cases whose name contains this.
        #[arg(long)]
        filter: Option<String>,
    },
}

/// Exit codes shared by the wgnn binaries.
const EXIT_FAILED: u8 = 1;
const EXIT_NO_GPU: u8 = 3;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    match cli.command {
        Command::Adapters => adapters(),
        Command::Ops {
            quick,
            iterations,
            json,
            filter,
        } => bench_ops(quick, iterations.max(1), json, filter.as_deref()),
    }
}

fn open_gpu() -> Result<Gpu, ExitCode> {
    Gpu::new().map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_NO_GPU)
    })
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
            "{:<28} {:<34} {:>10} {:>10} {:>10} {:>9}",
            "op", "shape", "median ms", "min ms", "GFLOP/s", "GB/s"
        );
    }
    let mut rows = Vec::new();
    for case in &cases {
        match ops::run(&gpu, case, iterations) {
            Ok(r) => {
                if !json {
                    println!(
                        "{:<28} {:<34} {:>10.4} {:>10.4} {:>10} {:>9.1}",
                        r.name,
                        r.shape,
                        r.median_ms,
                        r.min_ms,
                        r.gflops.map_or("-".into(), |g| format!("{g:.0}")),
                        r.gbps
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
                    "{{\"op\":{:?},\"shape\":{:?},\"median_ms\":{},\"min_ms\":{},\"gflops\":{},\"gbps\":{}}}",
                    r.name,
                    r.shape,
                    r.median_ms,
                    r.min_ms,
                    r.gflops.map_or("null".into(), |g| g.to_string()),
                    r.gbps
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
