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
pub mod ops;
mod precision;
mod resample_taps;
mod shape;
mod tensor;
mod types;

pub use builder::{GraphBuilder, Operand};
pub use context::{Context, ReadHandle};
pub use graph::Graph;
pub(crate) use graph_ir::{GraphIr, OperandId};
pub use host::{HostData, HostTensor};
pub use ops::*;
pub use precision::{BuildOptions, Precision};
pub use tensor::{RentedBuffer, Tensor, TensorDescriptor};
pub use types::{DataType, OperandDescriptor};

#[cfg(test)]
pub(crate) use cpu::workers_started_here;

/// GPU times of one profiled dispatch ([`Graph::profile`]), in milliseconds.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// (kernel label, ms) in execution order.
    pub kernels: Vec<(String, f64)>,
    pub total_ms: f64,
}
