//! concat along any axis: one copy kernel per input, each writing its own
//! disjoint slab of the output, so no kernel needs to know the others.

use super::lower::{grid, Kernel, Lowering};
use super::slice::refuse_uint8;
use crate::error::Result;
use crate::ml::graph_ir::Node;

const WG: u32 = 256;

pub(super) fn concat(l: &mut Lowering, node: &Node, axis: usize) -> Result<()> {
    let y = node.outputs[0];
    refuse_uint8(l, y, "concat")?;
    let out = l.ir.desc(y).clone();
    let inner: usize = out.shape[axis + 1..].iter().product();
    let chunk_out = out.shape[axis] * inner;
    let mut offset = 0;
    for &x in &node.inputs {
        let d = l.ir.desc(x);
        let n = d.element_count();
        let chunk_in = d.shape[axis] * inner;
        l.kernel(Kernel {
            label: "concat".into(),
            source: include_str!("concat.wgsl"),
            output_type: out.data_type,
            input_type: out.data_type,
            activations: &[],
            params: vec![n as u32, chunk_in as u32, chunk_out as u32, offset as u32],
            inputs: vec![x],
            outputs: vec![y],
            workgroups: grid(n, WG),
            workgroup_size: WG,
        })?;
        offset += chunk_in;
    }
    Ok(())
}
