//! The normalization core, `(x - mean) / sqrt(variance + epsilon)` with mean
//! and variance broadcast to the input: what layer, instance and batch
//! normalization end in (builder/normalization.rs composes them).

use super::lower::{axes, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use super::matmul::broadcast_strides;
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::types::strides;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of normalization.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        rank: u32,
        epsilon: f32,
        _pad: u32,
        axes: [[u32; 4]; MAX_RANK],
    }
}

pub(super) fn normalize(l: &mut Lowering, node: &Node, epsilon: f32) -> Result<()> {
    let (x, mean, variance, y) = (
        node.inputs[0],
        node.inputs[1],
        node.inputs[2],
        node.outputs[0],
    );
    let out = l.ir.desc(y).clone();
    let sx = strides(&out.shape);
    let sm = broadcast_strides(&l.ir.desc(mean).shape, &out.shape);
    let sv = broadcast_strides(&l.ir.desc(variance).shape, &out.shape);
    let label = node.op.name();
    let (rank, axes) = axes(label, &out.shape, &[&sx, &sm, &sv])?;
    let n = out.element_count();
    let params = Params {
        n: n as u32,
        rank,
        epsilon,
        _pad: 0,
        axes,
    };
    l.kernel(Kernel {
        label: label.into(),
        source: include_str!("normalization.wgsl"),
        spec: Specialization::new(),
        output_type: out.data_type,
        input_type: out.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x, mean, variance],
        outputs: vec![y],
        workgroups: grid(n, WG),
        workgroup_size: WG,
    })
}
