//! prelu with the slope broadcast numpy-style to the input.

use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::types::strides;

const WG: u32 = 256;

pub(super) fn prelu(l: &mut Lowering, node: &Node) -> Result<()> {
    let (x, s, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let out = l.ir.desc(y).clone();
    let slope = l.ir.desc(s);
    let rank = out.rank();
    let off = rank - slope.rank();
    let own = strides(&slope.shape);
    let mut params = vec![out.element_count() as u32, rank as u32];
    params.extend(out.shape.iter().map(|&d| d as u32));
    params.extend((0..rank).map(|k| {
        if k < off || slope.shape[k - off] == 1 {
            0
        } else {
            own[k - off] as u32
        }
    }));
    l.kernel(Kernel {
        label: "prelu".into(),
        source: include_str!("prelu.wgsl"),
        output_type: out.data_type,
        input_type: out.data_type,
        activations: &node.activations,
        params,
        inputs: vec![x, s],
        outputs: vec![y],
        workgroups: grid(out.element_count(), WG),
        workgroup_size: WG,
    })
}
