//! softmax along any axis.

use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
use crate::ml::graph_ir::Node;

const WG: u32 = 64;

pub(super) fn softmax(l: &mut Lowering, node: &Node, axis: usize) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let d = l.ir.desc(x).clone();
    let len = d.shape[axis];
    let inner: usize = d.shape[axis + 1..].iter().product();
    let rows = d.element_count() / len;
    // Invocations per row: enough to cover the row once, at most a workgroup.
    let rt = (len.next_power_of_two() as u32).min(WG);
    let source = format!("const RT: u32 = {rt}u;\n{}", include_str!("softmax.wgsl"));
    l.kernel(Kernel {
        label: "softmax".into(),
        source: &source,
        output_type: d.data_type,
        input_type: d.data_type,
        activations: &[],
        params: vec![rows as u32, len as u32, inner as u32],
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(rows * rt as usize, WG),
        workgroup_size: WG,
    })
}
