//! reduceMean over any set of axes: one workgroup per output element, its
//! invocations striding over the reduced elements and then summing their
//! partial sums in workgroup memory. This keeps global pooling (a few
//! outputs, each the mean of a whole plane) parallel.

use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::types::strides;

const WG: u32 = 64;

/// (sizes, input strides) of the kept and of the reduced axes, with runs of
/// neighbouring axes of the same kind merged into one and size-1 axes
/// dropped, so that the shader divides as little as possible per element.
fn merged_axes(shape: &[usize], axes: &[usize]) -> [(Vec<u32>, Vec<u32>); 2] {
    let st = strides(shape);
    let mut groups: [(Vec<u32>, Vec<u32>); 2] = Default::default();
    let mut last: Option<bool> = None;
    for (a, &len) in shape.iter().enumerate() {
        if len == 1 {
            continue;
        }
        let reduced = axes.contains(&a);
        let (sizes, strides) = &mut groups[reduced as usize];
        // Row-major: an axis directly after one of the same kind continues it.
        if last == Some(reduced) {
            *sizes.last_mut().unwrap() *= len as u32;
            *strides.last_mut().unwrap() = st[a] as u32;
        } else {
            sizes.push(len as u32);
            strides.push(st[a] as u32);
        }
        last = Some(reduced);
    }
    groups
}

pub(super) fn reduce_mean(l: &mut Lowering, node: &Node, axes: &[usize]) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(y).clone();
    let outputs = yd.element_count();
    let count: usize = axes.iter().map(|&a| xd.shape[a]).product();
    let [kept, reduced] = merged_axes(&xd.shape, axes);
    let mut params = vec![outputs as u32, count as u32, kept.0.len() as u32];
    params.extend(&kept.0);
    params.extend(&kept.1);
    params.push(reduced.0.len() as u32);
    params.extend(&reduced.0);
    params.extend(&reduced.1);
    l.kernel(Kernel {
        label: "reduceMean".into(),
        source: include_str!("reduce_mean.wgsl"),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(outputs * WG as usize, WG),
        workgroup_size: WG,
    })
}
