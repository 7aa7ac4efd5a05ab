//! Reductions over any set of axes (reduceMean, and global average or max
//! pooling): one workgroup per output element, its invocations striding over
//! the reduced elements and then combining their partial results in
//! workgroup memory. Global pooling has few outputs, each over a whole plane;
//! with one invocation per output (the windowed pooling kernel) a 128x128
//! plane took 3.4 ms on an H100.

use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
use crate::ml::graph_ir::{Node, OperandId};
use crate::ml::ops::PoolKind;
use crate::ml::types::strides;

const WG: u32 = 256;

/// `INIT`, `accumulate` and `finish(acc, count)` of a mean or a max; an
/// empty window gives 0 for the mean and the lowest float for the max.
pub(super) fn reduction_source(kind: PoolKind) -> &'static str {
    match kind {
        PoolKind::Average => {
            "const INIT: f32 = 0.0;\n\
             fn accumulate(acc: f32, v: f32) -> f32 { return acc + v; }\n\
             fn finish(acc: f32, count: u32) -> f32 { return select(0.0, acc / f32(count), count > 0u); }\n"
        }
        PoolKind::Max => {
            "const INIT: f32 = -3.40282347e38;\n\
             fn accumulate(acc: f32, v: f32) -> f32 { return max(acc, v); }\n\
             fn finish(acc: f32, count: u32) -> f32 { return select(-3.40282347e38, acc, count > 0u); }\n"
        }
    }
}

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
    reduce(l, node, axes, PoolKind::Average)
}

/// Reduces `node`'s first input over `axes` into its first output.
pub(super) fn reduce(l: &mut Lowering, node: &Node, axes: &[usize], kind: PoolKind) -> Result<()> {
    let (x, y): (OperandId, OperandId) = (node.inputs[0], node.outputs[0]);
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
    let source = format!("{}{}", reduction_source(kind), include_str!("reduce.wgsl"));
    l.kernel(Kernel {
        label: node.op.name().into(),
        source: &source,
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
