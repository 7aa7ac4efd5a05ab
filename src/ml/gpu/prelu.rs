//! prelu with the slope broadcast numpy-style to the input.

use super::lower::{axes, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use super::matmul::broadcast_strides;
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of prelu.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        rank: u32,
        _pad: [u32; 2],
        axes: [[u32; 4]; MAX_RANK],
    }
}

pub(super) fn prelu(l: &mut Lowering, node: &Node) -> Result<()> {
    let (x, s, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let out = l.ir.desc(y).clone();
    let slope = broadcast_strides(&l.ir.desc(s).shape, &out.shape);
    let (rank, axes) = axes("prelu", &out.shape, &[&slope])?;
    let params = Params {
        n: out.element_count() as u32,
        rank,
        _pad: [0; 2],
        axes,
    };
    l.kernel(Kernel {
        label: "prelu".into(),
        source: include_str!("prelu.wgsl"),
        spec: Specialization::new(),
        output_type: out.data_type,
        input_type: out.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x, s],
        outputs: vec![y],
        workgroups: grid(out.element_count(), WG),
        workgroup_size: WG,
    })
}
