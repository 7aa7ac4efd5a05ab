//! softmax along any axis.

use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;

const WG: u32 = 64;

kernel_params! {
    /// `struct Params` of softmax.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        rows: u32,
        len: u32,
        inner: u32,
        row_threads: u32,
    }
}

pub(super) fn softmax(l: &mut Lowering, node: &Node, axis: usize) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let d = l.ir.desc(x).clone();
    let len = d.shape[axis];
    let inner: usize = d.shape[axis + 1..].iter().product();
    let rows = d.element_count() / len;
    // Invocations per row: enough to cover the row once, at most a
    // workgroup. A parameter, not a constant: it follows the row length,
    // and a new input size must not compile a new pipeline.
    let rt = (len.next_power_of_two() as u32).min(WG);
    let params = Params {
        rows: rows as u32,
        len: len as u32,
        inner: inner as u32,
        row_threads: rt,
    };
    l.kernel(Kernel {
        label: "softmax".into(),
        source: include_str!("softmax.wgsl"),
        spec: Specialization::new(),
        output_type: d.data_type,
        input_type: d.data_type,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(rows * rt as usize, WG),
        workgroup_size: WG,
    })
}
