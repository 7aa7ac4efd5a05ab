//! gather along one axis, with int32 indices of any rank: one invocation
//! per output element (per word of four for uint8, see broadcast.rs
//! `element_copy`). Negative indices count from the end; what is still out
//! of range is clamped, as on the CPU context.

use super::broadcast::element_copy;
use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of gather.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        threads: u32,
        inner: u32,
        indices: u32,
        dim: u32,
        _pad: [u32; 3],
    }
}

pub(super) fn gather(l: &mut Lowering, node: &Node, axis: usize) -> Result<()> {
    let (x, indices, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let out = l.ir.desc(y).clone();
    let n = out.element_count();
    let (store, threads) = element_copy(out.data_type, n);
    let params = Params {
        n: n as u32,
        threads: threads as u32,
        inner: xd.shape[axis + 1..].iter().product::<usize>() as u32,
        indices: l.ir.desc(indices).element_count() as u32,
        dim: xd.shape[axis] as u32,
        _pad: [0; 3],
    };
    l.kernel(Kernel {
        label: "gather".into(),
        source: include_str!("gather.wgsl"),
        spec: Specialization::new().code(store),
        output_type: out.data_type,
        input_type: xd.data_type,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x, indices],
        outputs: vec![y],
        workgroups: grid(threads, WG),
        workgroup_size: WG,
    })
}
