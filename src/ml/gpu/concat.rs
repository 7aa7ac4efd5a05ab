//! concat along any axis: one copy kernel per input, each writing its own
//! disjoint slab of the output, so no kernel needs to know the others;
//! none for an input its writer stored in place (`concat_writes.rs`), and
//! into a block of an outer concat's output where it is placed there.

use super::lower::{grid, kernel_params, Kernel, Lowering};
use super::slice::refuse_uint8;
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of concat.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        chunk_in: u32,
        chunk_out: u32,
        offset: u32,
    }
}

pub(super) fn concat(l: &mut Lowering, node: &Node, axis: usize) -> Result<()> {
    let y = node.outputs[0];
    refuse_uint8(l, y, "concat")?;
    let out = l.ir.desc(y).clone();
    let inner: usize = out.shape[axis + 1..].iter().product();
    let chunk_out = out.shape[axis] * inner;
    // Stored as a block of an outer concat's output (`concat_writes.rs`).
    let mut offset = l.placement.map_or(0, |p| p.offset as usize);
    for (k, &x) in node.inputs.iter().enumerate() {
        let d = l.ir.desc(x);
        let n = d.element_count();
        let chunk_in = d.shape[axis] * inner;
        // Its writer stored it in place (`concat_writes.rs`).
        if l.written.get(k) == Some(&true) {
            offset += chunk_in;
            continue;
        }
        let params = Params {
            n: n as u32,
            chunk_in: chunk_in as u32,
            chunk_out: chunk_out as u32,
            offset: offset as u32,
        };
        l.kernel(Kernel {
            label: "concat".into(),
            source: include_str!("concat.wgsl"),
            spec: Specialization::new(),
            output_type: out.data_type,
            input_type: out.data_type,
            activations: &[],
            params: Kernel::params(&params),
            table: None,
            inputs: vec![x],
            outputs: vec![y],
            workgroups: grid(n, WG),
            workgroup_size: WG,
        })?;
        offset += chunk_in;
    }
    Ok(())
}
