//! `Context` (WebNN `MLContext`): owns a timeline on which tensor writes,
//! graph dispatches and reads run in call order, without the caller waiting.
//!
//! On the GPU the timeline is the wgpu queue: every operation is a queued
//! write or a submitted command buffer, so ordering is the queue's and nothing
//! blocks. On the CPU it is a worker thread fed by a channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Poll, Waker};

use super::graph::Graph;
use super::tensor::{RentedBuffer, Storage, Tensor, TensorDescriptor};
use crate::error::{Error, Result};
use crate::gpu::{Download, Gpu};

static NEXT_CONTEXT: AtomicU64 = AtomicU64::new(1);

type Job = Box<dyn FnOnce() + Send>;

pub(crate) enum Backend {
    Gpu(Gpu),
    Cpu(Mutex<Option<Sender<Job>>>),
}

pub(crate) struct ContextInner {
    pub id: u64,
    pub backend: Backend,
    destroyed: AtomicBool,
}

/// WebNN `MLContext`, on a GPU ([`Context::gpu`]) or the CPU ([`Context::cpu`]).
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

impl Context {
    /// A context whose tensors are buffers on `gpu` and whose graphs run as
    /// WGSL compute shaders on its queue.
    pub fn gpu(gpu: &Gpu) -> Context {
        Context::with_backend(Backend::Gpu(gpu.clone()))
    }

    /// A context that runs graphs with multi-threaded Rust kernels.
    pub fn cpu() -> Context {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("wgnn-cpu-context".into())
            .spawn(move || {
                for job in rx {
                    // Each job runs on one of rayon's workers, so the kernels'
                    // parallel loops split work among workers that are already
                    // awake instead of waking the pool from outside per op.
                    let on_pool = move || rayon::scope(|_| job());
                    // A failing job must not take the timeline down with it:
                    // later work (and reads waiting on it) still runs.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(on_pool)).is_err() {
                        log::error!("a CPU context job panicked; its outputs are left unchanged");
                    }
                }
            })
            .expect("spawning the CPU context's worker thread");
        Context::with_backend(Backend::Cpu(Mutex::new(Some(tx))))
    }

    fn with_backend(backend: Backend) -> Context {
        Context {
            inner: Arc::new(ContextInner {
                id: NEXT_CONTEXT.fetch_add(1, Ordering::Relaxed),
                backend,
                destroyed: AtomicBool::new(false),
            }),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The GPU this context runs on, if it is a GPU context.
    pub fn gpu_handle(&self) -> Option<&Gpu> {
        match &self.inner.backend {
            Backend::Gpu(gpu) => Some(gpu),
            Backend::Cpu(_) => None,
        }
    }

    pub fn is_gpu(&self) -> bool {
        self.gpu_handle().is_some()
    }

    pub(crate) fn alive(&self, what: &str) -> Result<()> {
        if self.inner.destroyed.load(Ordering::Acquire) {
            return Err(Error::invalid(format!(
                "{what}: the context has been destroyed"
            )));
        }
        if let Some(gpu) = self.gpu_handle() {
            gpu.check()?;
        }
        Ok(())
    }

    /// Queues `job` on the CPU worker.
    pub(crate) fn cpu_queue(&self, job: Job) -> Result<()> {
        let Backend::Cpu(tx) = &self.inner.backend else {
            unreachable!("cpu_queue on a GPU context");
        };
        tx.lock()
            .unwrap()
            .as_ref()
            .and_then(|tx| tx.send(job).ok())
            .ok_or_else(|| Error::invalid("the CPU context's worker has stopped"))
    }

    /// WebNN `createTensor`: zero-initialised.
    pub fn create_tensor(&self, desc: TensorDescriptor) -> Result<Tensor> {
        self.alive("create_tensor")?;
        let operand = desc.operand();
        operand.validate("create_tensor")?;
        let bytes = operand.byte_length();
        let storage = match &self.inner.backend {
            Backend::Gpu(gpu) => {
                let size = (bytes as u64).div_ceil(4) * 4;
                if size > gpu.limits().max_storage_buffer_binding_size {
                    return Err(Error::invalid(format!(
                        "create_tensor: {operand} needs {size} bytes, more than this GPU's \
                         max_storage_buffer_binding_size ({})",
                        gpu.limits().max_storage_buffer_binding_size
                    )));
                }
                Storage::Gpu(gpu.scoped("create_tensor", || {
                    gpu.device().create_buffer(&wgpu::BufferDescriptor {
                        label: Some("wgnn tensor"),
                        size,
                        usage: wgpu::BufferUsages::STORAGE
                            | wgpu::BufferUsages::COPY_SRC
                            | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                })?)
            }
            Backend::Cpu(_) => {
                if desc.exportable_to_gpu {
                    return Err(Error::invalid(
                        "create_tensor: exportable_to_gpu needs a GPU context; this is a CPU context",
                    ));
                }
                Storage::Cpu(Arc::new(Mutex::new(vec![0; bytes])))
            }
        };
        Ok(Tensor::new(self.id(), desc, storage))
    }

    /// WebNN `writeTensor`: queued; returns without waiting.
    pub fn write_tensor(&self, tensor: &Tensor, bytes: &[u8]) -> Result<()> {
        self.alive("write_tensor")?;
        tensor.usable(self.id(), "write_tensor")?;
        if !tensor.descriptor().writable {
            return Err(Error::invalid(format!(
                "write_tensor: {tensor} was not created writable"
            )));
        }
        if bytes.len() != tensor.byte_length() {
            return Err(Error::invalid(format!(
                "write_tensor: {tensor} holds {} bytes, got {}",
                tensor.byte_length(),
                bytes.len()
            )));
        }
        match &self.inner.backend {
            Backend::Gpu(gpu) => gpu.upload_buffer(tensor.gpu_buffer().unwrap(), 0, bytes),
            Backend::Cpu(_) => {
                let dst = tensor.cpu_bytes().unwrap().clone();
                let data = bytes.to_vec();
                self.cpu_queue(Box::new(move || *dst.lock().unwrap() = data))
            }
        }
    }

    /// WebNN `readTensor`: queued behind everything before it; the handle
    /// resolves to the bytes (await it, or call [`ReadHandle::wait`]).
    pub fn read_tensor(&self, tensor: &Tensor) -> Result<ReadHandle> {
        self.alive("read_tensor")?;
        tensor.usable(self.id(), "read_tensor")?;
        if !tensor.descriptor().readable {
            return Err(Error::invalid(format!(
                "read_tensor: {tensor} was not created readable"
            )));
        }
        let len = tensor.byte_length();
        match &self.inner.backend {
            Backend::Gpu(gpu) => {
                let download = gpu.download_buffer(tensor.gpu_buffer().unwrap(), 0, len as u64)?;
                Ok(ReadHandle(Read::Gpu(download)))
            }
            Backend::Cpu(_) => {
                let slot = Arc::new(OneShot::default());
                let src = tensor.cpu_bytes().unwrap().clone();
                let sink = slot.clone();
                self.cpu_queue(Box::new(move || sink.set(src.lock().unwrap().clone())))?;
                Ok(ReadHandle(Read::Cpu(slot)))
            }
        }
    }

    /// Reads a tensor and waits for the bytes.
    pub fn read_tensor_blocking(&self, tensor: &Tensor) -> Result<Vec<u8>> {
        self.read_tensor(tensor)?.wait()
    }

    /// Reads a float32 tensor and waits for the values.
    pub fn read_f32(&self, tensor: &Tensor) -> Result<Vec<f32>> {
        if tensor.data_type() != super::DataType::Float32 {
            return Err(Error::invalid(format!("read_f32: {tensor} is not float32")));
        }
        Ok(bytemuck::pod_collect_to_vec(
            &self.read_tensor_blocking(tensor)?,
        ))
    }

    /// WebNN `dispatch`: queues one execution of `graph` reading `inputs` and
    /// writing `outputs` (by name). Returns without waiting.
    pub fn dispatch(
        &self,
        graph: &Graph,
        inputs: &[(&str, &Tensor)],
        outputs: &[(&str, &Tensor)],
    ) -> Result<()> {
        self.alive("dispatch")?;
        graph.dispatch(self, inputs, outputs)
    }

    /// Rents `tensor`'s buffer to custom GPU code (seed 002, the explainer's
    /// `importExternalBuffer`). Same device and queue, so no wait and no copy.
    pub fn export_to_gpu(&self, tensor: &Tensor) -> Result<RentedBuffer> {
        self.alive("export_to_gpu")?;
        tensor.usable(self.id(), "export_to_gpu")?;
        if !self.is_gpu() {
            return Err(Error::invalid(format!(
                "export_to_gpu: {tensor} lives in a CPU context; only GPU contexts can lend buffers"
            )));
        }
        if !tensor.descriptor().exportable_to_gpu {
            return Err(Error::invalid(format!(
                "export_to_gpu: {tensor} was not created with exportable_to_gpu"
            )));
        }
        tensor.inner.state.lock().unwrap().rented = true;
        Ok(RentedBuffer {
            tensor: tensor.clone(),
        })
    }

    /// WebNN `MLContext.destroy()`: later calls fail; the CPU worker stops
    /// once the work already queued is done.
    pub fn destroy(&self) {
        self.inner.destroyed.store(true, Ordering::Release);
        if let Backend::Cpu(tx) = &self.inner.backend {
            tx.lock().unwrap().take();
        }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner.backend {
            Backend::Gpu(gpu) => write!(f, "Context(gpu: {})", gpu.info().name),
            Backend::Cpu(_) => write!(f, "Context(cpu)"),
        }
    }
}

/// A value handed from the CPU worker to whoever waits for it.
#[derive(Default)]
pub(crate) struct OneShot {
    value: Mutex<(Option<Vec<u8>>, Option<Waker>)>,
    ready: Condvar,
}

impl OneShot {
    fn set(&self, v: Vec<u8>) {
        let mut g = self.value.lock().unwrap();
        g.0 = Some(v);
        if let Some(w) = g.1.take() {
            w.wake();
        }
        self.ready.notify_all();
    }
}

enum Read {
    Gpu(Download),
    Cpu(Arc<OneShot>),
}

/// The pending result of [`Context::read_tensor`].
pub struct ReadHandle(Read);

impl ReadHandle {
    pub fn wait(self) -> Result<Vec<u8>> {
        match self.0 {
            Read::Gpu(d) => d.wait(),
            Read::Cpu(slot) => {
                let mut g = slot.value.lock().unwrap();
                loop {
                    if let Some(v) = g.0.take() {
                        return Ok(v);
                    }
                    g = slot.ready.wait(g).unwrap();
                }
            }
        }
    }
}

impl Future for ReadHandle {
    type Output = Result<Vec<u8>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            Read::Gpu(d) => Pin::new(d).poll(cx),
            Read::Cpu(slot) => {
                let mut g = slot.value.lock().unwrap();
                match g.0.take() {
                    Some(v) => Poll::Ready(Ok(v)),
                    None => {
                        g.1 = Some(cx.waker().clone());
                        Poll::Pending
                    }
                }
            }
        }
    }
}
