//! The seam between the WebNN front (`context.rs`, `graph.rs`, `tensor.rs`:
//! validation, descriptors, states and the timeline's call order) and the
//! two back ends that do the work: `ml::gpu` (WGSL kernels on a wgpu queue)
//! and `ml::cpu` (Rust kernels on a worker thread).
//!
//! The operations are: create a tensor's storage, write it, read it (a
//! pending read), compile a fused graph into a plan, dispatch a plan (timed
//! or not), release storage and plans, destroy the back end, and check
//! whether it has failed.
//!
//! **Choice: enum dispatch, not a `dyn Backend` trait.** Both back ends live
//! in this crate and each must reach storage and plans of its own kind (a GPU
//! dispatch binds the tensors' wgpu buffers, a CPU job locks their bytes).
//! With a trait, storage and plan would be associated types, making `Tensor`
//! and `Graph` generic in the public API, or `dyn Any` downcast at every
//! call. Enums keep the concrete types, keep every GPU-vs-CPU `match` of the
//! front in this one file, and make the compiler point at each of them when
//! a third back end arrives.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use super::cpu::{CpuBackend, CpuPlan, CpuStorage, Pending};
use super::gpu::{GpuBackend, GpuPlan};
use super::graph_ir::GraphIr;
use super::types::OperandDescriptor;
use super::Profile;
use crate::error::{Error, Result};
use crate::gpu::{Download, Gpu};

pub(crate) enum Backend {
    Gpu(GpuBackend),
    Cpu(CpuBackend),
}

/// A tensor's memory, owned by the back end that made it.
pub(crate) enum Storage {
    /// The tensor's own GPU buffer (size rounded up to 4 bytes).
    Gpu(crate::gpu::live::Buffer),
    /// Bytes owned by the CPU context's worker.
    Cpu(CpuStorage),
}

/// A graph compiled for one back end.
pub(crate) enum Plan {
    Gpu(GpuPlan),
    Cpu(CpuPlan),
}

/// What a dispatch measures.
pub(crate) enum Timing<'a> {
    Off,
    /// Each kernel's time (GPU: each in its own timestamped pass, which adds
    /// its own cost; CPU: each node's wall time on the worker). Waits.
    PerKernel(&'a mut Profile),
    /// The whole dispatch as the untimed one encodes it, between two GPU
    /// timestamps, in ms. Waits. GPU only.
    Whole(&'a mut f64),
    /// Untimed, recorded into the caller's commands, which the caller
    /// submits: a task puts its frame's stages and the model in one
    /// submission. GPU only.
    Into(&'a mut crate::gpu::Commands),
}

/// The pending result of a tensor read.
pub(crate) enum PendingRead {
    Gpu(Download),
    Cpu(Pending<Vec<u8>>),
}

/// Storage or a plan reached a back end of the other kind. The front's
/// context checks make this unreachable; an error beats a panic if not.
fn other_kind(what: &str) -> Error {
    Error::invalid(format!(
        "{what}: the tensor or graph was made by the other kind of context"
    ))
}

impl Backend {
    pub fn gpu(&self) -> Option<&Gpu> {
        match self {
            Backend::Gpu(b) => Some(b.gpu()),
            Backend::Cpu(_) => None,
        }
    }

    /// The test-only door to the CPU worker (to queue a failing job).
    #[cfg(test)]
    pub fn cpu(&self) -> Option<&CpuBackend> {
        match self {
            Backend::Cpu(b) => Some(b),
            Backend::Gpu(_) => None,
        }
    }

    /// Fails once the back end has failed: a lost GPU device, or a CPU job
    /// that panicked. Both are sticky.
    pub fn check(&self, what: &str) -> Result<()> {
        match self {
            Backend::Gpu(b) => b.gpu().check(),
            Backend::Cpu(b) => b.check(what),
        }
    }

    /// Zero-initialised storage for a tensor of `operand`.
    pub fn create_storage(&self, operand: &OperandDescriptor) -> Result<Storage> {
        Ok(match self {
            Backend::Gpu(b) => Storage::Gpu(b.create_storage(operand)?),
            Backend::Cpu(_) => Storage::Cpu(CpuStorage::zeroed(operand.byte_length())),
        })
    }

    /// Queues a write of all of `storage`; returns without waiting.
    pub fn write(&self, storage: &Storage, bytes: &[u8]) -> Result<()> {
        match (self, storage) {
            (Backend::Gpu(b), Storage::Gpu(buffer)) => b.write(buffer, bytes),
            (Backend::Cpu(b), Storage::Cpu(s)) => b.write(s, bytes),
            _ => Err(other_kind("write_tensor")),
        }
    }

    /// Queues a read of the first `len` bytes of `storage`.
    pub fn read(&self, storage: &Storage, len: usize) -> Result<PendingRead> {
        match (self, storage) {
            (Backend::Gpu(b), Storage::Gpu(buffer)) => Ok(PendingRead::Gpu(b.read(buffer, len)?)),
            (Backend::Cpu(b), Storage::Cpu(s)) => Ok(PendingRead::Cpu(b.read(s)?)),
            _ => Err(other_kind("read_tensor")),
        }
    }

    /// Compiles a fused graph: every allocation and shader compilation (GPU)
    /// or constant decoding (CPU) happens here, once.
    pub fn compile(&self, ir: &Arc<GraphIr>) -> Result<Plan> {
        Ok(match self {
            Backend::Gpu(b) => Plan::Gpu(b.compile(ir)?),
            Backend::Cpu(_) => Plan::Cpu(CpuPlan::new(ir.clone())),
        })
    }

    /// Runs `plan` reading `inputs` and writing `outputs` (the graph's order).
    /// `what` names the caller in errors.
    pub fn dispatch(
        &self,
        what: &'static str,
        plan: &Plan,
        inputs: &[&Storage],
        outputs: &[&Storage],
        timing: Timing<'_>,
    ) -> Result<()> {
        match (self, plan) {
            (Backend::Gpu(b), Plan::Gpu(plan)) => b.dispatch(
                plan,
                &gpu_buffers(what, inputs)?,
                &gpu_buffers(what, outputs)?,
                timing,
            ),
            (Backend::Cpu(b), Plan::Cpu(plan)) => {
                let bytes = |list: &[&Storage]| -> Result<Vec<CpuStorage>> {
                    list.iter()
                        .map(|s| match s {
                            Storage::Cpu(s) => Ok(s.clone()),
                            Storage::Gpu(_) => Err(other_kind(what)),
                        })
                        .collect()
                };
                b.dispatch(what, plan, bytes(inputs)?, bytes(outputs)?, timing)
            }
            _ => Err(other_kind(what)),
        }
    }

    /// Stops the back end taking work: the CPU worker ends once the work
    /// already queued is done; the GPU queue is shared and stays.
    pub fn destroy(&self) {
        if let Backend::Cpu(b) = self {
            b.stop();
        }
    }
}

fn gpu_buffers<'s>(what: &str, list: &[&'s Storage]) -> Result<Vec<&'s wgpu::Buffer>> {
    list.iter()
        .map(|s| s.gpu_buffer().ok_or_else(|| other_kind(what)))
        .collect()
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Gpu(b) => write!(f, "gpu: {}", b.gpu().info().name),
            Backend::Cpu(_) => write!(f, "cpu"),
        }
    }
}

impl Storage {
    /// Frees the memory now (a destroyed tensor).
    pub fn release(&self) {
        match self {
            Storage::Gpu(buffer) => buffer.destroy(),
            Storage::Cpu(bytes) => bytes.clear(),
        }
    }

    pub fn gpu_buffer(&self) -> Option<&wgpu::Buffer> {
        match self {
            Storage::Gpu(buffer) => Some(buffer),
            Storage::Cpu(_) => None,
        }
    }
}

impl Plan {
    /// Frees weights and intermediates now (a destroyed graph). A CPU plan's
    /// constants are shared with dispatches still queued, which keep them.
    pub fn release(&self) {
        if let Plan::Gpu(plan) = self {
            plan.destroy();
        }
    }
}

impl PendingRead {
    pub fn wait(self) -> Result<Vec<u8>> {
        match self {
            PendingRead::Gpu(d) => d.wait(),
            PendingRead::Cpu(p) => p.wait(),
        }
    }
}

impl Future for PendingRead {
    type Output = Result<Vec<u8>>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            PendingRead::Gpu(d) => Pin::new(d).poll(cx),
            PendingRead::Cpu(p) => Pin::new(p).poll(cx),
        }
    }
}
