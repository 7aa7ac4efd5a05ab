//! Where a CLI runs its model: `--device auto|gpu|cpu`, settled once up
//! front so that the elements are told `device=gpu` or `device=cpu` and the
//! user reads one line about the choice.

use crate::gpu::Gpu;

/// The `--device` flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// A hardware GPU; the CPU when there is none or only a software one.
    Auto,
    /// The GPU, even a software rasteriser (lavapipe); fail without one.
    Gpu,
    /// The CPU context: system memory only.
    Cpu,
}

/// Logging for a CLI: `RUST_LOG` as given, else warnings. The adapter
/// choice's own warning about a software adapter is left out by default:
/// [`choose_device`] says it in the CLI's words; so is wgpu's about a
/// feature the upload ring asks for knowingly ([`QUIET_WGPU_LOGS`]).
///
/// [`QUIET_WGPU_LOGS`]: crate::gpu::QUIET_WGPU_LOGS
pub fn init_logger() {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| {
            format!(
                "warn,wgnn::gpu::adapter=error,{}",
                crate::gpu::QUIET_WGPU_LOGS
            )
        });
    let _ = env_logger::Builder::new().parse_filters(&filter).try_init();
}

/// Opens the GPU `arg` asks for, or `None` for the CPU. On a machine whose
/// only adapter is a software rasteriser, `auto` chooses the CPU (about 16x
/// faster there for the same result) and says so in one line starting with
/// `program`. Errors are one line (exit code 4 in the CLIs): with
/// `--device gpu` and no adapter, the adapter choice's own reason (e.g. a
/// `WGPU_ADAPTER_NAME` that matches none, with the adapters listed).
pub fn choose_device(program: &str, arg: DeviceArg) -> Result<Option<Gpu>, String> {
    match arg {
        DeviceArg::Cpu => Ok(None),
        DeviceArg::Gpu => {
            let gpu = Gpu::new().map_err(|e| format!("--device gpu: {e}"))?;
            if gpu.is_software() {
                eprintln!(
                    "{program}: warning: '{}' is a software rasteriser: expect it to be slow \
                     (--device cpu is faster here)",
                    gpu.info().name
                );
            }
            Ok(Some(gpu))
        }
        DeviceArg::Auto => match Gpu::new() {
            Ok(gpu) if !gpu.is_software() => Ok(Some(gpu)),
            Ok(gpu) => {
                eprintln!(
                    "{program}: the only GPU here is the software rasteriser '{}': running on \
                     the CPU, which is faster (--device gpu uses it anyway)",
                    gpu.info().name
                );
                Ok(None)
            }
            Err(e) => {
                eprintln!("{program}: {e}; running on the CPU");
                Ok(None)
            }
        },
    }
}
