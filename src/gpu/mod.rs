//! The shared GPU handle: one wgpu instance, adapter, device and queue that
//! every other module (ML, video, GStreamer elements) works through.
//!
//! Errors wgpu would otherwise raise by panicking (uncaptured validation
//! errors, device loss) are caught here and returned by [`Gpu::check`] and by
//! every transfer, so a broken shader or a lost device is an `Err`, not an abort.

mod adapter;
pub mod shader;
pub mod transfer;

use std::sync::{Arc, Mutex};

pub use adapter::{AdapterChoice, GpuOptions};
pub use shader::{Checks, Specialization, SHADER_CHECKS_ENV};
pub use transfer::{Download, TransferStats};

use crate::error::{Error, Result};

/// Features we use when the adapter has them; none is required.
pub const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);

/// Set to 1, float16 convolutions use the cooperative-matrix (tensor core)
/// kernel where the adapter offers its shape. Off by default: on an H100 it
/// is slower than the plain f16 kernel so far (docs/BENCHMARKS.md).
pub const COOPERATIVE_MATRIX_ENV: &str = "WGNN_COOPERATIVE_MATRIX";

/// A cheaply clonable handle to one GPU device.
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<Inner>,
}

struct Inner {
    instance: wgpu::Instance,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    software: bool,
    tensor_cores_f16: bool,
    transfers: transfer::Counters,
    pipelines: shader::PipelineCache,
    fault: Arc<Mutex<Option<String>>>,
}

impl Gpu {
    /// Opens the adapter chosen by the environment (`WGPU_BACKEND`,
    /// `WGPU_ADAPTER_NAME`): a hardware GPU first, a software one otherwise.
    pub fn new() -> Result<Gpu> {
        Gpu::with_options(&GpuOptions::from_env())
    }

    pub fn with_options(options: &GpuOptions) -> Result<Gpu> {
        let choice = adapter::choose(options)?;
        Gpu::open(choice)
    }

    fn open(choice: AdapterChoice) -> Result<Gpu> {
        let AdapterChoice {
            instance,
            adapter,
            software,
        } = choice;
        let info = adapter.get_info();
        let mut features = adapter.features() & OPTIONAL_FEATURES;
        // The one shape our tensor-core kernel is written for, on 32-wide
        // subgroups (it derives the subgroup from the invocation index).
        let tensor_cores_f16 = features.contains(wgpu::Features::SHADER_F16)
            && info.subgroup_min_size == 32
            && info.subgroup_max_size == 32
            && std::env::var(COOPERATIVE_MATRIX_ENV).as_deref() == Ok("1")
            && adapter.cooperative_matrix_properties().iter().any(|p| {
                (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                    && p.ab_type == wgpu::CooperativeScalarType::F16
                    && p.cr_type == wgpu::CooperativeScalarType::F32
            });
        if !tensor_cores_f16 {
            features.remove(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        }
        let desc = wgpu::DeviceDescriptor {
            label: Some("wgnn"),
            required_features: features,
            // Compute-heavy work wants the largest buffers and workgroups the
            // adapter allows, not WebGPU's conservative defaults.
            required_limits: adapter.limits(),
            // SAFETY: the only experimental feature we may ask for is
            // cooperative matrices, and only for the one kernel
            // (ml/gpu/conv2d_coop.wgsl) that uses the 16x16x16 f16 -> f32
            // shape the adapter reported above; wgpu's caveat is that such
            // features may have bugs, which the GPU-vs-CPU checks would show.
            experimental_features: if tensor_cores_f16 {
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            Error::RequestDevice {
                adapter: info.name.clone(),
                reason: e.to_string(),
            }
        })?;

        let fault: Arc<Mutex<Option<String>>> = Arc::default();
        let sink = fault.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            log::error!("uncaptured GPU error: {e}");
            sink.lock().unwrap().get_or_insert_with(|| e.to_string());
        }));
        let sink = fault.clone();
        device.set_device_lost_callback(move |reason, message| {
            if reason != wgpu::DeviceLostReason::Destroyed {
                log::error!("GPU device lost ({reason:?}): {message}");
            }
            sink.lock()
                .unwrap()
                .get_or_insert_with(|| format!("device lost ({reason:?}): {message}"));
        });

        log::info!(
            "GPU: {} ({:?}, {:?}), optional features: {}",
            info.name,
            info.device_type,
            info.backend,
            feature_names(features)
        );
        Ok(Gpu {
            inner: Arc::new(Inner {
                instance,
                adapter,
                device,
                queue,
                info,
                software,
                tensor_cores_f16,
                transfers: transfer::Counters::default(),
                pipelines: shader::PipelineCache::default(),
                fault,
            }),
        })
    }

    /// Identifies the device: two handles with the same id share one device.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    pub fn instance(&self) -> &wgpu::Instance {
        &self.inner.instance
    }

    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.inner.adapter
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    /// The queue, for submitting command buffers. Data transfers go through
    /// [`transfer`] instead, so that they are counted.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.inner.info
    }

    /// True when the adapter is a software rasteriser (lavapipe, llvmpipe).
    pub fn is_software(&self) -> bool {
        self.inner.software
    }

    pub fn features(&self) -> wgpu::Features {
        self.inner.device.features()
    }

    pub fn limits(&self) -> wgpu::Limits {
        self.inner.device.limits()
    }

    pub fn has(&self, feature: wgpu::Features) -> bool {
        self.features().contains(feature)
    }

    /// Whether float16 products can run on cooperative matrices (16x16x16,
    /// f16 inputs, f32 sums, 32-wide subgroups).
    pub fn has_f16_tensor_cores(&self) -> bool {
        self.inner.tensor_cores_f16
    }

    /// Bytes and transfer counts in each direction since the device was opened.
    pub fn transfers(&self) -> TransferStats {
        self.inner.transfers.snapshot()
    }

    /// Fails if the device was lost or raised an error outside any error scope.
    pub fn check(&self) -> Result<()> {
        match self.inner.fault.lock().unwrap().as_ref() {
            Some(fault) => Err(Error::DeviceFailed(fault.clone())),
            None => Ok(()),
        }
    }

    /// Runs `f`, capturing the validation and out-of-memory errors it raises
    /// as an `Err` naming `what` instead of letting them reach the uncaptured
    /// handler.
    pub fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check()?;
        let oom = self
            .device()
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self
            .device()
            .push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let errors = [
            pollster::block_on(validation.pop()),
            pollster::block_on(oom.pop()),
        ];
        match errors.into_iter().flatten().next() {
            Some(e) => Err(Error::Gpu {
                what: what.to_string(),
                message: e.to_string(),
            }),
            None => Ok(value),
        }
    }

    /// Blocks until all submitted work is done.
    pub fn wait_idle(&self) -> Result<()> {
        self.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::DeviceFailed(e.to_string()))?;
        self.check()
    }

    /// A one-line description for logs and `--help` style output.
    pub fn describe(&self) -> String {
        let info = self.info();
        format!(
            "{} ({:?} via {:?}{}), features: {}",
            info.name,
            info.device_type,
            info.backend,
            if self.is_software() { ", software" } else { "" },
            feature_names(self.features() & OPTIONAL_FEATURES)
        )
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("adapter", &self.info().name)
            .field("backend", &self.info().backend)
            .finish_non_exhaustive()
    }
}

fn feature_names(features: wgpu::Features) -> String {
    let names: Vec<&str> = [
        (wgpu::Features::SHADER_F16, "shader-f16"),
        (wgpu::Features::TIMESTAMP_QUERY, "timestamp-query"),
        (
            wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS,
            "timestamp-query-inside-encoders",
        ),
        (wgpu::Features::SUBGROUP, "subgroup"),
        (
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
            "cooperative-matrix",
        ),
    ]
    .into_iter()
    .filter(|(f, _)| features.contains(*f))
    .map(|(_, n)| n)
    .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
