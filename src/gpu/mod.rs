//! The shared GPU handle: one wgpu instance, adapter, device and queue that
//! every other module (ML, video, GStreamer elements) works through.
//!
//! Errors wgpu would otherwise raise by panicking (uncaptured validation
//! errors, device loss) are caught here and returned by [`Gpu::check`] and by
//! every transfer, so a broken shader or a lost device is an `Err`, not an abort.

mod adapter;
pub mod ahead;
pub(crate) mod bind_cache;
#[cfg(target_os = "linux")]
pub mod dmabuf;
pub mod live;
pub mod selector;
pub mod shader;
mod submits;
pub mod transfer;
pub mod upload_ring;
mod upload_unpack;

use std::sync::{Arc, Mutex};

pub use adapter::{list as list_adapters, AdapterChoice, GpuOptions};
pub use ahead::{Ahead, Commands, ENCODE_AHEAD_ENV};
pub use selector::GpuSelector;
pub use shader::{Checks, Specialization, SHADER_CHECKS_ENV};
pub use submits::SubmitStats;
pub use transfer::{
    upload_overlap, Download, RecordedDownload, TextureWrite, TransferStats, UPLOAD_OVERLAP_ENV,
};
pub use upload_ring::{StagingStats, UploadRing, UPLOAD_RING_ENV};
pub use upload_unpack::{QUIET_WGPU_LOGS, UPLOAD_UNPACK_ENV};

use crate::error::{Error, Result};

/// Features we use when the adapter has them; none is required.
pub const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    .union(EXTERNAL_MEMORY_FEATURES)
    .union(upload_unpack::FEATURES);

/// Importing memory other processes or devices made (DMA-BUF frames from
/// cameras and decoders, `crate::video::dmabuf`): wgpu-hal enables the
/// Vulkan extensions whenever the adapter has them, but imports it does
/// itself (`texture_from_dmabuf_fd`) check that these were requested.
pub const EXTERNAL_MEMORY_FEATURES: wgpu::Features =
    wgpu::Features::VULKAN_EXTERNAL_MEMORY_FD.union(wgpu::Features::VULKAN_EXTERNAL_MEMORY_DMA_BUF);

/// Set to 0, float16 convolutions do not use the cooperative-matrix (tensor
/// core) kernel even where the adapter offers its shape (for A/B runs and
/// for drivers whose cooperative matrices misbehave). On by default: on an
/// H100 it is 3x the plain f16 kernel (docs/BENCHMARKS.md).
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
    /// The adapter's place in [`list_adapters`].
    index: usize,
    software: bool,
    tensor_cores_f16: bool,
    /// Plane formats uploads write by a compute pass (`upload_unpack`).
    unpack_formats: Vec<wgpu::TextureFormat>,
    transfers: transfer::Counters,
    submits: submits::Counters,
    pipelines: shader::PipelineCache,
    fault: Arc<Mutex<Option<Error>>>,
    live: Arc<live::Tally>,
    worker: ahead::Worker,
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
            index,
        } = choice;
        let info = adapter.get_info();
        let mut features = adapter.features() & OPTIONAL_FEATURES;
        // The one shape our tensor-core kernel is written for, on 32-wide
        // subgroups (it derives the subgroup from the invocation index).
        let tensor_cores_f16 = features.contains(wgpu::Features::SHADER_F16)
            && info.subgroup_min_size == 32
            && info.subgroup_max_size == 32
            && std::env::var(COOPERATIVE_MATRIX_ENV).as_deref() != Ok("0")
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
            // (ml/gpu/conv2d_coop_direct.wgsl) that uses the 16x16x16 f16 -> f32
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

        let fault: Arc<Mutex<Option<Error>>> = Arc::default();
        let sink = fault.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            log::error!("uncaptured GPU error: {e}");
            sink.lock()
                .unwrap()
                .get_or_insert_with(|| Error::DeviceFailed(e.to_string()));
        }));
        let sink = fault.clone();
        device.set_device_lost_callback(move |reason, message| {
            log::error!("GPU device lost ({reason:?}): {message}");
            // A loss is the root cause: it replaces an uncaptured error the
            // dying device may have raised first.
            let cause = match (reason, message.is_empty()) {
                (wgpu::DeviceLostReason::Destroyed, true) => "destroyed".to_string(),
                (wgpu::DeviceLostReason::Destroyed, false) => format!("destroyed ({message})"),
                (_, true) => "the driver gave no reason".to_string(),
                (_, false) => message,
            };
            *sink.lock().unwrap() = Some(Error::DeviceLost(cause));
        });

        log::info!(
            "GPU: {} ({:?}, {:?}), optional features: {}",
            info.name,
            info.device_type,
            info.backend,
            feature_names(features)
        );
        let unpack_formats = upload_unpack::formats(&adapter, features);
        Ok(Gpu {
            inner: Arc::new(Inner {
                instance,
                adapter,
                device,
                queue,
                info,
                index,
                software,
                tensor_cores_f16,
                unpack_formats,
                transfers: transfer::Counters::default(),
                submits: submits::Counters::default(),
                pipelines: shader::PipelineCache::default(),
                fault,
                live: Arc::default(),
                worker: ahead::Worker::default(),
            }),
        })
    }

    /// Identifies the device: two handles with the same id share one device.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// The adapter's place in the list `gpu=N` counts in ([`list_adapters`]
    /// with the same backends).
    pub fn index(&self) -> usize {
        self.inner.index
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

    /// The queue. Submissions go through [`Gpu::submit`] and data
    /// transfers through [`transfer`], so that they are counted.
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

    /// Counts a frame read from imported memory (see [`TransferStats`]).
    pub(crate) fn count_import(&self, bytes: u64) {
        self.inner.transfers.import(bytes);
    }

    /// Fails if the device was lost or raised an error outside any error scope.
    pub fn check(&self) -> Result<()> {
        match self.inner.fault.lock().unwrap().as_ref() {
            Some(Error::DeviceLost(cause)) => Err(Error::DeviceLost(cause.clone())),
            Some(fault) => Err(Error::DeviceFailed(fault.to_string())),
            None => Ok(()),
        }
    }

    /// Destroys the device now, as a driver reset would lose it: every later
    /// call on this handle (and its clones) fails with [`Error::DeviceLost`].
    /// For tests of the lost-device paths; nothing in wgnn calls it.
    pub fn destroy(&self) {
        // Recorded first: work failing on another thread the moment the
        // device goes must find the cause already there.
        self.inner
            .fault
            .lock()
            .unwrap()
            .get_or_insert_with(|| Error::DeviceLost("destroyed".into()));
        self.inner.device.destroy();
    }

    /// The thread that encodes command buffers ahead ([`Ahead`]).
    fn worker(&self) -> &ahead::Worker {
        &self.inner.worker
    }

    /// wgnn's live objects on this device (see [`live`]).
    pub fn live(&self) -> live::Counts {
        self.inner.live.snapshot()
    }

    pub(crate) fn token(&self, kind: live::Kind, bytes: u64) -> live::Token {
        live::Token::new(kind, bytes, Some(self.inner.live.clone()))
    }

    /// A buffer, checked against the device's limits first (so an oversized
    /// request is one line naming the size and the limit, not a wgpu
    /// validation error) and counted while it lives.
    pub fn create_buffer(&self, desc: &wgpu::BufferDescriptor) -> Result<live::Buffer> {
        let what = desc.label.unwrap_or("buffer");
        let limits = self.limits();
        if desc.size > limits.max_buffer_size {
            return Err(Error::TooLarge(format!(
                "{what}: a {} buffer exceeds the device's largest buffer ({})",
                bytes(desc.size),
                bytes(limits.max_buffer_size)
            )));
        }
        let storage = desc.usage.contains(wgpu::BufferUsages::STORAGE);
        if storage && desc.size > limits.max_storage_buffer_binding_size {
            return Err(Error::TooLarge(format!(
                "{what}: a {} storage buffer exceeds the device's largest storage binding ({})",
                bytes(desc.size),
                bytes(limits.max_storage_buffer_binding_size)
            )));
        }
        let buffer = self.scoped(what, || self.device().create_buffer(desc))?;
        Ok(live::Counted::new(
            buffer,
            self.token(live::Kind::Buffer, desc.size),
        ))
    }

    /// A texture, checked against the device's limits and counted (see
    /// [`Gpu::create_buffer`]).
    pub fn create_texture(&self, desc: &wgpu::TextureDescriptor) -> Result<live::Texture> {
        let what = desc.label.unwrap_or("texture");
        let max = self.limits().max_texture_dimension_2d;
        let size = desc.size;
        if size.width > max || size.height > max {
            return Err(Error::TooLarge(format!(
                "{what}: a {}x{} frame exceeds the device's largest texture ({max}x{max})",
                size.width, size.height
            )));
        }
        let texture = self.scoped(what, || self.device().create_texture(desc))?;
        let texel = desc.format.block_copy_size(None).unwrap_or(4) as u64;
        let bytes = u64::from(size.width)
            * u64::from(size.height)
            * u64::from(size.depth_or_array_layers)
            * texel;
        Ok(live::Counted::new(
            texture,
            self.token(live::Kind::Texture, bytes),
        ))
    }

    /// A render pipeline, counted while it lives.
    pub fn create_render_pipeline(
        &self,
        desc: &wgpu::RenderPipelineDescriptor,
    ) -> Result<live::RenderPipeline> {
        let what = desc.label.unwrap_or("render pipeline");
        let pipeline = self.scoped(what, || self.device().create_render_pipeline(desc))?;
        Ok(live::Counted::new(
            pipeline,
            self.token(live::Kind::RenderPipeline, 0),
        ))
    }

    /// Runs `f`, capturing the validation and out-of-memory errors it raises
    /// as an `Err` naming `what` instead of letting them reach the uncaptured
    /// handler.
    pub fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check()?;
        self.inner.submits.scope();
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
            .map_err(|e| self.poll_error(e))?;
        self.check()
    }

    /// The error for a failed poll: the device's own fault (a loss, say)
    /// when it has one, which names the cause better than the poll does.
    pub(crate) fn poll_error(&self, e: wgpu::PollError) -> Error {
        match self.check() {
            Err(fault) => fault,
            Ok(()) => Error::DeviceFailed(e.to_string()),
        }
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

/// A byte count for messages: "3.2 GiB (3435973837 bytes)".
fn bytes(n: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let f = n as f64;
    if f >= GIB {
        format!("{:.1} GiB ({n} bytes)", f / GIB)
    } else if f >= MIB {
        format!("{:.1} MiB ({n} bytes)", f / MIB)
    } else {
        format!("{n} bytes")
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
        (
            wgpu::Features::VULKAN_EXTERNAL_MEMORY_FD,
            "external-memory-fd",
        ),
        (
            wgpu::Features::VULKAN_EXTERNAL_MEMORY_DMA_BUF,
            "external-memory-dma-buf",
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
