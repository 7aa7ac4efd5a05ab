//! Reductions over any set of axes (reduceMean, and global average or max
//! pooling): one workgroup per output element, its invocations striding over
//! the reduced elements and then combining their partial results in
//! workgroup memory. Global pooling has few outputs, each over a whole plane;
//! with one invocation per output (the windowed pooling kernel) a 128x128
//! plane took 3.4 ms on an H100.

use super::lower::{check_rank, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::{Node, OperandId};
use crate::ml::ops::PoolKind;
use crate::ml::types::strides;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of reduce.wgsl (reduceMean and global pooling).
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        outputs: u32,
        count: u32,
        kept_rank: u32,
        reduced_rank: u32,
        axes: [[u32; 4]; MAX_RANK],
    }
}

/// `INIT`, `accumulate` and `finish(acc, count)` of a mean or a max; an
/// empty window gives 0 for the mean and the lowest float for the max.
pub(super) fn reduction(kind: PoolKind) -> Specialization {
    match kind {
        PoolKind::Average => Specialization::new().f32("INIT", 0.0).code(
            "fn accumulate(acc: f32, v: f32) -> f32 { return acc + v; }\n\
             fn finish(acc: f32, count: u32) -> f32 { return select(0.0, acc / f32(count), count > 0u); }",
        ),
        PoolKind::Max => Specialization::new().f32("INIT", f32::MIN).code(
            "fn accumulate(acc: f32, v: f32) -> f32 { return max(acc, v); }\n\
             fn finish(acc: f32, count: u32) -> f32 { return select(INIT, acc, count > 0u); }",
        ),
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
    let label = node.op.name();
    let mut params = Params {
        outputs: outputs as u32,
        count: count as u32,
        kept_rank: check_rank(label, xd.rank(), kept.0.len())?,
        reduced_rank: check_rank(label, xd.rank(), reduced.0.len())?,
        axes: [[0; 4]; MAX_RANK],
    };
    for (k, (&size, &stride)) in kept.0.iter().zip(&kept.1).enumerate() {
        params.axes[k][0] = size;
        params.axes[k][1] = stride;
    }
    for (k, (&size, &stride)) in reduced.0.iter().zip(&reduced.1).enumerate() {
        params.axes[k][2] = size;
        params.axes[k][3] = stride;
    }
    l.kernel(Kernel {
        label: label.into(),
        source: include_str!("reduce.wgsl"),
        spec: reduction(kind),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(outputs * WG as usize, WG),
        workgroup_size: WG,
    })
}
