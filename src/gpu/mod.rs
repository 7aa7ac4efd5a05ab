//! The shared GPU handle: one wgpu instance, adapter, device and queue that
//! every other module (ML, video, GStreamer elements) works through.
//!
//! Errors wgpu would otherwise raise by panicking (uncaptured validation
//! errors, device loss) are caught here and returned by [`Gpu::check`] and by
//! every transfer, so a broken shader or a lost device is an `Err`, not an abort.

mod adapter;
pub mod transfer;

use std::sync::{Arc, Mutex};

pub use adapter::{AdapterChoice, GpuOptions};
pub use transfer::{Download, TransferStats};

use crate::error::{Error, Result};

/// Features we use when the adapter has them; none is required.
pub const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    .union(wgpu::Features::SUBGROUP);

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
    transfers: transfer::Counters,
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
        let features = adapter.features() & OPTIONAL_FEATURES;
        let desc = wgpu::DeviceDescriptor {
            label: Some("wgnn"),
            required_features: features,
            // Compute-heavy work wants the largest buffers and workgroups the
            // adapter allows, not WebGPU's conservative defaults.
            required_limits: adapter.limits(),
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
                transfers: transfer::Counters::default(),
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
