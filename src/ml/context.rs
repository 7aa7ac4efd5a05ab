//! `Context` (WebNN `MLContext`): owns a timeline on which tensor writes,
//! graph dispatches and reads run in call order, without the caller waiting.
//!
//! This file checks every call (context, tensor and descriptor states) and
//! hands the work to the context's back end (`ml::backend`): on the GPU the
//! timeline is the wgpu queue, on the CPU a worker thread fed by a channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;

use super::backend::{Backend, PendingRead};
use super::cpu::CpuBackend;
use super::gpu::GpuBackend;
use super::graph::Graph;
use super::tensor::{RentedBuffer, Tensor, TensorDescriptor};
use crate::error::{Error, Result};
use crate::gpu::Gpu;

static NEXT_CONTEXT: AtomicU64 = AtomicU64::new(1);

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
        Context::with_backend(Backend::Gpu(GpuBackend::new(gpu)))
    }

    /// A context that runs graphs with multi-threaded Rust kernels, on a
    /// worker thread of its own.
    ///
    /// If a job on it panics (a kernel bug), the context fails for good,
    /// as a GPU context does when its device is lost: work queued after it
    /// is not run, reads waiting on it and every later call return an error
    /// naming the panic, and the way on is a new context.
    pub fn cpu() -> Context {
        Context::with_backend(Backend::Cpu(CpuBackend::start()))
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
        self.inner.backend.gpu()
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
        self.inner.backend.check(what)
    }

    /// WebNN `createTensor`: zero-initialised.
    pub fn create_tensor(&self, desc: TensorDescriptor) -> Result<Tensor> {
        self.alive("create_tensor")?;
        let operand = desc.operand();
        operand.validate("create_tensor")?;
        if desc.exportable_to_gpu && !self.is_gpu() {
            return Err(Error::invalid(
                "create_tensor: exportable_to_gpu needs a GPU context; this is a CPU context",
            ));
        }
        let storage = self.inner.backend.create_storage(&operand)?;
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
        self.inner.backend.write(tensor.storage(), bytes)
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
        let pending = self
            .inner
            .backend
            .read(tensor.storage(), tensor.byte_length())?;
        Ok(ReadHandle(pending))
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

    /// Rents `tensor`'s buffer to custom GPU code (the MLTensor explainer's
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
        self.inner.backend.destroy();
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({:?})", self.inner.backend)
    }
}

/// The pending result of [`Context::read_tensor`].
pub struct ReadHandle(PendingRead);

impl ReadHandle {
    pub fn wait(self) -> Result<Vec<u8>> {
        self.0.wait()
    }
}

impl Future for ReadHandle {
    type Output = Result<Vec<u8>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}
