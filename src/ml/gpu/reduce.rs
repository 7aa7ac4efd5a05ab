//! Reductions over any set of axes (every `reduce*` op, and global average
//! or max pooling): `row_threads` invocations per output element (a power
//! of two up to a workgroup, from the number of elements reduced), striding
//! over the reduced elements and then combining their partial results in
//! workgroup memory. Global pooling has few outputs, each over a whole
//! plane; with one invocation per output (the windowed pooling kernel) a
//! 128x128 plane took 3.4 ms on an H100. Short reductions (a channel axis
//! of a few elements) pack many outputs into one workgroup instead.

use super::lower::{check_rank, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::{Node, OperandId};
use crate::ml::ops::{PoolKind, ReduceKind};
use crate::ml::types::{strides, DataType};

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of reduce.wgsl (the reductions and global pooling).
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        outputs: u32,
        count: u32,
        kept_rank: u32,
        reduced_rank: u32,
        row_threads: u32,
        _pad: [u32; 3],
        axes: [[u32; 4]; MAX_RANK],
    }
}

/// `INIT`, `accumulate` and `finish(acc, count)` of a mean or a max, for
/// the windowed pooling kernel (pool2d.wgsl); an empty window gives 0 for
/// the mean and the lowest float for the max.
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

/// What reduce.wgsl reduces with, generated per kind and element type: the
/// accumulator type `A`, `load(j)` (input element j as f32 or i32),
/// `init(first)` (the start of every lane: the identity of a sum or product;
/// for max and min the first reduced element, as WGSL has no infinity),
/// `element(v)` (one value as an accumulator), `combine(a, b)` and
/// `finish(acc, count) -> T`. logSumExp carries (max, sum of exp(x - max))
/// pairs, so one pass is stable.
fn reduce_spec(kind: ReduceKind, dt: DataType) -> Specialization {
    use ReduceKind::*;
    let int = dt == DataType::Int32;
    let (v, load) = if int {
        ("i32", "fn load(j: u32) -> i32 { return x[j]; }")
    } else {
        ("f32", "fn load(j: u32) -> f32 { return f32(x[j]); }")
    };
    let (zero, one) = if int { ("0", "1") } else { ("0.0", "1.0") };
    let sum = "fn combine(a: A, b: A) -> A { return a + b; }";
    let (init, element, combine, finish) = match kind {
        Mean => (zero, "v", sum, "acc / f32(count)"),
        Sum => (zero, "v", sum, "acc"),
        SumSquare => (zero, "v * v", sum, "acc"),
        L2 => (zero, "v * v", sum, "sqrt(acc)"),
        Product => (
            one,
            "v",
            "fn combine(a: A, b: A) -> A { return a * b; }",
            "acc",
        ),
        Max => (
            "load(first)",
            "v",
            "fn combine(a: A, b: A) -> A { return max(a, b); }",
            "acc",
        ),
        Min => (
            "load(first)",
            "v",
            "fn combine(a: A, b: A) -> A { return min(a, b); }",
            "acc",
        ),
        // A side whose max is the new max scales by exactly 1 (and
        // exp(-inf - -inf) would be NaN).
        LogSumExp => (
            "vec2<f32>(load(first), 0.0)",
            "vec2<f32>(v, 1.0)",
            "fn combine(a: A, b: A) -> A {\n    let m = max(a.x, b.x);\n    \
             let sa = select(a.y * exp(a.x - m), a.y, a.x == m);\n    \
             let sb = select(b.y * exp(b.x - m), b.y, b.x == m);\n    \
             return vec2<f32>(m, sa + sb);\n}",
            "acc.x + log(acc.y)",
        ),
    };
    let finish = if int {
        format!("fn finish(acc: A, count: u32) -> T {{ return {finish}; }}")
    } else {
        format!("fn finish(acc: A, count: u32) -> T {{ return T(act({finish})); }}")
    };
    Specialization::new()
        .alias("A", if kind == LogSumExp { "vec2<f32>" } else { v })
        .code(load)
        .code(&format!("fn init(first: u32) -> A {{ return {init}; }}"))
        .code(&format!("fn element(v: {v}) -> A {{ return {element}; }}"))
        .code(combine)
        .code(&finish)
}

/// Global pooling (pool2d.rs): `node`'s first input reduced over `axes`.
pub(super) fn reduce(l: &mut Lowering, node: &Node, axes: &[usize], kind: PoolKind) -> Result<()> {
    let kind = match kind {
        PoolKind::Average => ReduceKind::Mean,
        PoolKind::Max => ReduceKind::Max,
    };
    reduce_kind(l, node, kind, axes)
}

/// Reduces `node`'s first input over `axes` into its first output.
pub(super) fn reduce_kind(
    l: &mut Lowering,
    node: &Node,
    kind: ReduceKind,
    axes: &[usize],
) -> Result<()> {
    let (x, y): (OperandId, OperandId) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(y).clone();
    let outputs = yd.element_count();
    let count: usize = axes.iter().map(|&a| xd.shape[a]).product();
    let [kept, reduced] = merged_axes(&xd.shape, axes);
    let label = node.op.name();
    // Enough lanes to cover the reduced elements once, at most a workgroup:
    // a parameter, so a new size compiles nothing.
    let row_threads = (count.next_power_of_two() as u32).min(WG);
    let mut params = Params {
        outputs: outputs as u32,
        count: count as u32,
        kept_rank: check_rank(label, xd.rank(), kept.0.len())?,
        reduced_rank: check_rank(label, xd.rank(), reduced.0.len())?,
        row_threads,
        _pad: [0; 3],
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
        spec: reduce_spec(kind, xd.data_type),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(outputs * row_threads as usize, WG),
        workgroup_size: WG,
    })
}
