//! The GPU back end's side of a context: tensors are storage buffers on the
//! context's `Gpu`, writes and reads go through `gpu::transfer` on its
//! queue, and a graph is a [`GpuPlan`]. The timeline is the wgpu queue
//! itself: every operation is a queued write or a submitted command buffer,
//! so ordering is the queue's and nothing blocks.

use super::GpuPlan;
use crate::error::{Error, Result};
use crate::gpu::{Download, Gpu};
use crate::ml::backend::Timing;
use crate::ml::graph_ir::GraphIr;
use crate::ml::types::OperandDescriptor;

pub(crate) struct GpuBackend {
    gpu: Gpu,
}

impl GpuBackend {
    pub fn new(gpu: &Gpu) -> GpuBackend {
        GpuBackend { gpu: gpu.clone() }
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// A zeroed buffer for a tensor of `operand`: STORAGE for the kernels
    /// and renters, COPY_SRC/COPY_DST for reads, writes and a dispatch's
    /// copies in and out.
    pub fn create_storage(&self, operand: &OperandDescriptor) -> Result<crate::gpu::live::Buffer> {
        let gpu = &self.gpu;
        let size = (operand.byte_length() as u64).div_ceil(4) * 4;
        let limit = gpu.limits().max_storage_buffer_binding_size;
        if size > limit {
            return Err(Error::invalid(format!(
                "create_tensor: {operand} needs {size} bytes, more than this GPU's \
                 max_storage_buffer_binding_size ({limit})"
            )));
        }
        gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgnn tensor"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    pub fn write(&self, buffer: &wgpu::Buffer, bytes: &[u8]) -> Result<()> {
        self.gpu.upload_buffer(buffer, 0, bytes)
    }

    pub fn read(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Download> {
        self.gpu.download_buffer(buffer, 0, len as u64)
    }

    pub fn compile(&self, ir: &GraphIr) -> Result<GpuPlan> {
        GpuPlan::compile(&self.gpu, ir)
    }

    pub fn dispatch(
        &self,
        plan: &GpuPlan,
        inputs: &[&wgpu::Buffer],
        outputs: &[&wgpu::Buffer],
        timing: Timing<'_>,
    ) -> Result<()> {
        plan.dispatch(inputs, outputs, timing)
    }
}
