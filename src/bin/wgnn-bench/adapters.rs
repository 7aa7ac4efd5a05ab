//! `wgnn-bench adapters`: the adapters wgpu finds and the one wgnn would
//! use, with the limits and features the kernels depend on.

use std::process::ExitCode;

use serde_json::json;
use wgnn::gpu::{list_adapters, selector, Gpu, GpuOptions, GpuSelector};

use crate::cli::{Json, EXIT_NO_GPU};

/// List the GPU adapters found, in the order the elements' `gpu` property
/// and `streams --gpus` count in (index, name, backend, type, driver, PCI
/// bus id, vendor:device id), and the one wgnn would use.
#[derive(clap::Args)]
pub struct Args {
    /// Show the adapter this `gpu` value picks (an index, or a piece of a
    /// name, driver, PCI bus id or vendor:device id) rather than the
    /// default one.
    #[arg(long, value_name = "GPU")]
    gpu: Option<String>,
    #[command(flatten)]
    json: Json,
}

impl Args {
    pub fn run(self) -> ExitCode {
        let options = GpuOptions {
            selector: self.gpu.as_deref().and_then(GpuSelector::parse),
            ..GpuOptions::from_env()
        };
        let listed = list_adapters(&options).unwrap_or_default();
        let chosen = Gpu::with_options(&options);
        if self.json.json {
            let adapters: Vec<_> = listed
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    json!({
                        "index": i,
                        "name": info.name,
                        "backend": format!("{:?}", info.backend),
                        "type": format!("{:?}", info.device_type),
                        "driver": info.driver,
                        "driver_info": info.driver_info,
                        "pci_bus_id": info.device_pci_bus_id,
                        "vendor_device": selector::vendor_device(info),
                    })
                })
                .collect();
            let chosen = match &chosen {
                Ok(gpu) => json!({"index": gpu.index(), "name": gpu.info().name}),
                Err(e) => json!({"error": e.to_string()}),
            };
            println!("{}", json!({"adapters": adapters, "chosen": chosen}));
            return match chosen.get("error") {
                Some(_) => ExitCode::from(EXIT_NO_GPU),
                None => ExitCode::SUCCESS,
            };
        }
        for (i, info) in listed.iter().enumerate() {
            println!(
                "{i}: '{}' {:?} {:?}, driver {} {}, PCI bus {}, id {}",
                info.name,
                info.backend,
                info.device_type,
                info.driver,
                info.driver_info,
                Some(info.device_pci_bus_id.as_str())
                    .filter(|p| !p.is_empty())
                    .unwrap_or("-"),
                selector::vendor_device(info)
            );
        }
        match chosen {
            Ok(gpu) => {
                println!("chosen: {} {}", gpu.index(), gpu.describe());
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
