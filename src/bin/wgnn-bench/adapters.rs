//! `wgnn-bench adapters`: the adapters wgpu finds and the one wgnn would
//! use, with the limits and features the kernels depend on.

use std::process::ExitCode;

use wgnn::gpu::{Gpu, GpuOptions};

use crate::cli::EXIT_NO_GPU;

/// List the GPU adapters found and the one wgnn would use.
#[derive(clap::Args)]
pub struct Args {}

impl Args {
    pub fn run(self) -> ExitCode {
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
}
