//! The WebNN graph API on wgpu, plus a CPU context that runs the same graphs.
//!
//! Names map one-to-one to WebNN's: [`Context`] = `MLContext`, [`Tensor`] =
//! `MLTensor`, [`GraphBuilder`] = `MLGraphBuilder`, [`Graph`] = `MLGraph`,
//! [`Operand`] = `MLOperand`. See the MLTensor explainer for the timeline
//! semantics: writes, dispatches and reads are queued in call order and the
//! caller never waits except on a read's result.

mod backend;
mod builder;
mod context;
mod cpu;
mod fuse;
mod gpu;
mod graph;
mod graph_ir;
mod host;
mod host_stage;
mod layout;
pub mod ops;
mod precision;
mod quant_conv;
mod resample_taps;
mod shape;
mod tensor;
mod types;

pub use builder::{GraphBuilder, Operand};
pub use context::{Context, ReadHandle};
pub use graph::Graph;
pub(crate) use graph_ir::{GraphIr, OperandId};
pub use host::{HostData, HostTensor};
pub use host_stage::HostStep;
pub use ops::*;
pub use precision::{BuildOptions, Precision};
pub use quant_conv::QuantConv2dOptions;
pub use tensor::{RentedBuffer, Tensor, TensorDescriptor};
pub use types::{DataType, OperandDescriptor};

#[cfg(test)]
pub(crate) use cpu::workers_started_here;

/// GPU times of one profiled dispatch ([`Graph::profile`]), in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// (kernel label, ms) in execution order. The label is the op's name
    /// ("conv2d", "squeezeExcite"), what [`Profile::details`] group by.
    pub kernels: Vec<(String, f64)>,
    /// One line per kernel, in the same order: what it computes, with its
    /// shapes, options and fusions ("conv2d 3x3 dw 1x128x128x16 ->
    /// 1x128x128x16 res+relu"); on the GPU also its workgroups ("1024 wg of
    /// 64"), on the CPU context the node's.
    pub details: Vec<String>,
    pub total_ms: f64,
}
