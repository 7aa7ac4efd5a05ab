//! A float binary op with a fused residual (`node.residual`): one pass where
//! the op and the `add` after it were two.

use super::elementwise::binop_expr;
use super::lower::{axes, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use super::matmul::broadcast_strides;
use crate::error::{Error, Result};
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::BinaryOp;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of binary_residual.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        rank: u32,
        _pad: [u32; 2],
        axes: [[u32; 4]; MAX_RANK],
    }
}

pub(super) fn binary_residual(l: &mut Lowering, node: &Node, op: BinaryOp) -> Result<()> {
    let (a, b, r, y) = (
        node.inputs[0],
        node.inputs[1],
        node.inputs[2],
        node.outputs[0],
    );
    let out = l.ir.desc(y).clone();
    if op == BinaryOp::Pow || !out.data_type.is_float() {
        return Err(Error::invalid(format!(
            "a fused residual after {} of {} is not supported",
            op.name(),
            out.data_type
        )));
    }
    let sa = broadcast_strides(&l.ir.desc(a).shape, &out.shape);
    let sb = broadcast_strides(&l.ir.desc(b).shape, &out.shape);
    let (rank, axes) = axes(op.name(), &out.shape, &[&sa, &sb])?;
    let params = Params {
        n: out.element_count() as u32,
        rank,
        _pad: [0; 2],
        axes,
    };
    let spec = Specialization::new().code(&format!(
        "fn binop(x: f32, y: f32) -> f32 {{ return {}; }}",
        binop_expr(op, false)
    ));
    l.kernel(Kernel {
        label: op.name().into(),
        source: include_str!("binary_residual.wgsl"),
        spec,
        output_type: out.data_type,
        input_type: l.ir.desc(a).data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: vec![a, b, r],
        outputs: vec![y],
        workgroups: grid(out.element_count(), WG),
        workgroup_size: WG,
    })
}
