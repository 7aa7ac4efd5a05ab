//! Element-wise nodes of one output shape, each reading the others'
//! results at its own element, run as one generated kernel: every element
//! of the shape evaluates the whole group, member by member, reading the
//! group's inputs (its leaves) with their own broadcast strides (or a
//! slice's steps, `slice_reads.rs`), and stores only the results something
//! outside the group reads (in place in a concat's output where
//! `concat_writes.rs` places them). Like TensorRT's pointwise fusion: one
//! WGSL expression per node, built from the ops the separate kernels run
//! (`binary`, `unary` in `elementwise.rs`). YOLOv8's box decoding (sub,
//! add, add, div, sub of the distances and anchors) ran as five kernels of
//! 5-6 us each on an H200.
//!
//! Each member's value is rounded to the output type before its readers
//! use it, as the separate kernels' stores rounded it, so the GPU's results
//! are those of the unfused kernels and the CPU context runs the graph as
//! it is. A member joins the group of the members it reads only where the
//! group's kernel, run at the member's place, still runs before every
//! other reader of the group's results.

use std::collections::BTreeSet;

use super::concat_writes::{ConcatWrites, Placement};
use super::elementwise::{binop_expr, POW};
use super::lower::{activation_fn, activation_helpers, fold_axes, grid, kernel_params};
use super::lower::{Kernel, Lowering, MAX_RANK, SPECIAL_VALUES};
use super::slice_reads::{operand_strides, SliceReads, SliceView};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::{GraphIr, Node, OperandId};
use crate::ml::ops::{Activation, BinaryOp, Op};

const WG: u32 = 256;
/// Distinct reads (a leaf and its strides) a group's kernel takes.
pub(crate) const MAX_READS: usize = 6;
/// Distinct buffers a group's kernel stores into.
pub(crate) const MAX_STORES: usize = 4;
/// Storage buffers a kernel binds: WebGPU's default
/// `maxStorageBuffersPerShaderStage`, which every adapter offers.
const MAX_BINDINGS: usize = 8;

kernel_params! {
    /// `struct Params` of a pointwise group's kernel.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct PointwiseParams {
        n: u32,
        rank: u32,
        _pad: [u32; 2],
        /// Folded axes' extents, 4 a vector.
        extents: [[u32; 4]; 2],
        /// Read r's stride along folded axis d: `strides[2 r + d / 4][d % 4]`.
        strides: [[u32; 4]; 2 * MAX_READS],
        /// Read r's first element: `bases[r / 4][r % 4]`.
        bases: [[u32; 4]; 2],
        /// Store s's placement (chunk_in, chunk_out, offset, 0).
        places: [[u32; 4]; MAX_STORES],
    }
}

/// The element-wise groups of a graph, as `GpuPlan::compile` runs them.
pub(crate) struct PointwiseGroups {
    /// Groups of two or more members, each in graph order; the kernel runs
    /// at the last.
    pub groups: Vec<Vec<usize>>,
    /// Per node: the group whose kernel runs there.
    pub runs: Vec<Option<usize>>,
    /// Members that run nothing at their own place.
    pub skipped: Vec<bool>,
}

impl PointwiseGroups {
    /// The operands the group running at node `i` reads (which must stay
    /// alive until it runs).
    pub fn leaves<'a>(
        &'a self,
        ir: &'a GraphIr,
        reads: &'a SliceReads,
        i: usize,
    ) -> impl Iterator<Item = OperandId> + 'a {
        self.runs[i]
            .into_iter()
            .flat_map(move |g| group_reads(ir, reads, &self.groups[g]))
            .map(|r| r.source)
    }
}

/// Whether node `node` may be a member: a float binary op or unary
/// activation of one output (its operands of its type).
fn member(ir: &GraphIr, node: &Node) -> bool {
    matches!(node.op, Op::Binary(_) | Op::Unary(_))
        && node.outputs.len() == 1
        && !node.late_residual
        && ir.desc(node.outputs[0]).data_type.is_float()
}

/// The nodes reading each operand.
fn readers(ir: &GraphIr) -> Vec<Vec<usize>> {
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); ir.operands.len()];
    for (i, node) in ir.nodes.iter().enumerate() {
        for &x in &node.inputs {
            readers[x].push(i);
        }
    }
    readers
}

/// Which element-wise nodes run together, given the concat writes and
/// slice reads the plan makes.
pub(crate) fn plan(ir: &GraphIr, writes: &ConcatWrites, reads: &SliceReads) -> PointwiseGroups {
    let n = ir.nodes.len();
    let producer = ir.producers();
    let readers = readers(ir);
    // Whether what node `r` reads is read only after node `i`: a reshape
    // or slice that runs nothing is read where its own readers run.
    let after = |r: usize, i: usize| -> bool {
        let mut stack = vec![r];
        while let Some(r) = stack.pop() {
            if writes.skipped[r] || reads.skipped[r] {
                stack.extend(readers[ir.nodes[r].outputs[0]].iter().copied());
            } else if r <= i {
                return false;
            }
        }
        true
    };
    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, node) in ir.nodes.iter().enumerate() {
        if !member(ir, node) || writes.skipped[i] {
            continue;
        }
        let out = ir.desc(node.outputs[0]);
        let mut joined: Vec<usize> = Vec::new();
        for &x in &node.inputs {
            let Some(g) = producer[x].and_then(|p| group_of[p]) else {
                continue;
            };
            let first = &ir.nodes[groups[g][0]];
            if !joined.contains(&g) && ir.desc(first.outputs[0]) == out {
                joined.push(g);
            }
        }
        let mut members: Vec<usize> = joined.iter().flat_map(|&g| groups[g].clone()).collect();
        members.push(i);
        members.sort_unstable();
        let runs_first = || {
            members.iter().all(|&m| {
                readers[ir.nodes[m].outputs[0]]
                    .iter()
                    .all(|&r| members.binary_search(&r).is_ok() || after(r, i))
            })
        };
        if joined.is_empty() || !runs_first() || !fits(ir, writes, reads, &members, &readers) {
            group_of[i] = Some(groups.len());
            groups.push(vec![i]);
            continue;
        }
        let g = joined[0];
        for &m in &members {
            group_of[m] = Some(g);
        }
        for &other in &joined[1..] {
            groups[other].clear();
        }
        groups[g] = members;
    }
    let mut plan = PointwiseGroups {
        groups: Vec::new(),
        runs: vec![None; n],
        skipped: vec![false; n],
    };
    for members in groups.into_iter().filter(|m| m.len() > 1) {
        let (&last, rest) = members.split_last().unwrap();
        for &m in rest {
            plan.skipped[m] = true;
        }
        plan.runs[last] = Some(plan.groups.len());
        plan.groups.push(members);
    }
    plan
}

/// Whether one kernel takes a group of `members`: its reads, stores and
/// bindings within the kernel's bounds, its axes within `MAX_RANK` once
/// folded, and no read through a slice of its own results (another
/// element's value).
fn fits(
    ir: &GraphIr,
    writes: &ConcatWrites,
    reads: &SliceReads,
    members: &[usize],
    readers: &[Vec<usize>],
) -> bool {
    let group_reads = group_reads(ir, reads, members);
    let stores = group_stores(ir, writes, members, readers);
    let distinct = |ids: Vec<OperandId>| ids.into_iter().collect::<BTreeSet<_>>().len();
    let bindings = distinct(group_reads.iter().map(|r| r.source).collect())
        + distinct(stores.iter().map(|s| s.buffer).collect());
    let shape = &ir.desc(ir.nodes[members[0]].outputs[0]).shape;
    let strides: Vec<&[usize]> = group_reads.iter().map(|r| r.strides.as_slice()).collect();
    let own = |x: OperandId| members.iter().any(|&m| ir.nodes[m].outputs[0] == x);
    group_reads.len() <= MAX_READS
        && stores.len() <= MAX_STORES
        && bindings <= MAX_BINDINGS
        && fold_axes(shape, &strides).len() <= MAX_RANK
        && !group_reads.iter().any(|r| own(r.source))
}

/// A value a group reads from outside it: operand `source` from `base`
/// with per-axis `strides` along the group's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Read {
    source: OperandId,
    base: usize,
    strides: Vec<usize>,
}

/// What member `m`'s input `k` reads, if it comes from outside the group.
fn read_of(
    ir: &GraphIr,
    reads: &SliceReads,
    members: &[usize],
    m: usize,
    k: usize,
) -> Option<Read> {
    let node = &ir.nodes[m];
    let x = node.inputs[k];
    let inside = |x: OperandId| {
        members
            .iter()
            .any(|&o| o < m && ir.nodes[o].outputs[0] == x)
    };
    if inside(x) {
        return None;
    }
    let shape = &ir.desc(node.outputs[0]).shape;
    let view: Option<&SliceView> = reads.views[m].get(k).and_then(Option::as_ref);
    Some(Read {
        source: view.map_or(x, |v| v.source),
        base: view.map_or(0, |v| v.base),
        strides: operand_strides(&ir.desc(x).shape, shape, view),
    })
}

/// The distinct reads of a group, in the order its members take them.
fn group_reads(ir: &GraphIr, reads: &SliceReads, members: &[usize]) -> Vec<Read> {
    let mut out: Vec<Read> = Vec::new();
    for &m in members {
        for k in 0..ir.nodes[m].inputs.len() {
            if let Some(r) = read_of(ir, reads, members, m, k) {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// A member's result that something outside the group reads: stored into
/// `buffer`'s operand (its own, or the concat output it is placed in).
struct Store {
    member: usize,
    output: OperandId,
    buffer: OperandId,
    placement: Option<Placement>,
}

fn group_stores(
    ir: &GraphIr,
    writes: &ConcatWrites,
    members: &[usize],
    readers: &[Vec<usize>],
) -> Vec<Store> {
    let graph_output = |o: OperandId| ir.outputs.iter().any(|(_, id)| *id == o);
    members
        .iter()
        .filter_map(|&m| {
            let o = ir.nodes[m].outputs[0];
            let outside = readers[o].iter().any(|r| members.binary_search(r).is_err());
            (outside || graph_output(o)).then(|| Store {
                member: m,
                output: o,
                buffer: writes.into[m].map_or(o, |(y, _)| y),
                placement: writes.into[m].map(|(_, p)| p),
            })
        })
        .collect()
}

/// Member `m` (the group's m-th)'s value as a WGSL expression of its inputs `x`, `y` (f32)
/// and its residual `r`, before rounding, with the helpers it calls
/// (`binop<m>`, `act<m>`) and the activations `act<m>` applies: what the
/// binary and unary kernels compute (`elementwise.rs`).
fn member_expr(
    node: &Node,
    m: usize,
    x: &str,
    y: &str,
    r: Option<&str>,
) -> (String, String, Vec<Activation>) {
    match node.op {
        Op::Binary(op) => {
            let helper = format!(
                "fn binop{m}(x: f32, y: f32) -> f32 {{ return {}; }}",
                binop_expr(op, false)
            );
            // The binary kernel adds its residual, or 0 (which turns -0
            // into 0), before the activations.
            let e = format!("act{m}(binop{m}({x}, {y}) + {})", r.unwrap_or("0.0"));
            (e, helper, node.activations.clone())
        }
        Op::Unary(act) => {
            let acts = std::iter::once(act).chain(node.activations.iter().copied());
            (format!("act{m}({x})"), String::new(), acts.collect())
        }
        _ => unreachable!("pointwise groups hold binary and unary nodes"),
    }
}

/// The results a group stores, each with the concat output it is placed
/// in, if it is: what the plan allocates before the group's kernel.
pub(crate) fn stored(
    ir: &GraphIr,
    writes: &ConcatWrites,
    members: &[usize],
) -> Vec<(OperandId, Option<OperandId>)> {
    group_stores(ir, writes, members, &readers(ir))
        .into_iter()
        .map(|s| (s.output, s.placement.map(|_| s.buffer)))
        .collect()
}

/// The kernel of a group (its stores allocated, [`stored`]).
pub(crate) fn lower(
    l: &mut Lowering,
    writes: &ConcatWrites,
    reads: &SliceReads,
    members: &[usize],
) -> Result<()> {
    let ir = l.ir;
    let stores = group_stores(ir, writes, members, &readers(ir));
    let group_reads = group_reads(ir, reads, members);
    let last = &ir.nodes[*members.last().unwrap()];
    let out = ir.desc(last.outputs[0]).clone();
    let dt = out.data_type;
    let n = out.element_count();
    let strides: Vec<&[usize]> = group_reads.iter().map(|r| r.strides.as_slice()).collect();
    let folded = fold_axes(&out.shape, &strides);
    let rank = super::lower::check_rank("pointwise", out.rank(), folded.len())?;
    let mut params = PointwiseParams {
        n: n as u32,
        rank,
        _pad: [0; 2],
        extents: [[0; 4]; 2],
        strides: [[0; 4]; 2 * MAX_READS],
        bases: [[0; 4]; 2],
        places: [[0; 4]; MAX_STORES],
    };
    for (d, (extent, s)) in folded.iter().enumerate() {
        params.extents[d / 4][d % 4] = *extent as u32;
        for (r, &stride) in s.iter().enumerate() {
            params.strides[2 * r + d / 4][d % 4] = stride as u32;
        }
    }
    for (r, read) in group_reads.iter().enumerate() {
        params.bases[r / 4][r % 4] = read.base as u32;
    }
    let (inputs, outputs, code) = bindings(
        group_reads.iter().map(|r| r.source),
        stores.iter().map(|s| s.buffer),
    );
    let mut body = String::new();
    for r in 0..group_reads.len() {
        body += &format!("    var j{r} = params.bases[{}u][{}u];\n", r / 4, r % 4);
    }
    body += "    var rem = i;\n    for (var d = params.rank; d > 0u; d--) {\n        \
             let e = d - 1u;\n        let extent = params.extents[e / 4u][e % 4u];\n        \
             let c = rem % extent;\n        rem = rem / extent;\n";
    for r in 0..group_reads.len() {
        body += &format!(
            "        j{r} += c * params.strides[{}u + e / 4u][e % 4u];\n",
            2 * r
        );
    }
    body += "    }\n";
    for (r, read) in group_reads.iter().enumerate() {
        let k = inputs.iter().position(|&x| x == read.source).unwrap();
        body += &format!("    let r{r} = f32(in{k}[j{r}]);\n");
    }
    let mut spec = Specialization::new();
    let mut all_acts: Vec<Activation> = Vec::new();
    let mut act_fns = Specialization::new();
    let mut pow = false;
    // Input k of member m: an earlier member's value (named by its place
    // in the group, so that groups alike share their pipeline), or a read.
    let value = |m: usize, k: usize| -> String {
        let x = ir.nodes[m].inputs[k];
        match members
            .iter()
            .position(|&o| o < m && ir.nodes[o].outputs[0] == x)
        {
            Some(j) => format!("v{j}"),
            None => {
                let read = read_of(ir, reads, members, m, k).unwrap();
                let r = group_reads.iter().position(|g| *g == read).unwrap();
                format!("r{r}")
            }
        }
    };
    for (j, &m) in members.iter().enumerate() {
        let node = &ir.nodes[m];
        pow |= node.op == Op::Binary(BinaryOp::Pow);
        let x = value(m, 0);
        let (y, r) = match node.op {
            Op::Binary(_) => (value(m, 1), node.residual.then(|| value(m, 2))),
            _ => (String::new(), None),
        };
        let (expr, helper, acts) = member_expr(node, j, &x, &y, r.as_deref());
        act_fns = activation_fn(act_fns, &format!("act{j}"), &format!("M{j}_"), &acts);
        if !helper.is_empty() {
            act_fns = act_fns.code(&helper);
        }
        all_acts.extend(acts);
        body += &format!("    let v{j} = f32(T({expr}));\n");
    }
    for (s, store) in stores.iter().enumerate() {
        let k = outputs.iter().position(|&b| b == store.buffer).unwrap();
        let p = store.placement.unwrap_or(Placement {
            chunk_in: n.max(1) as u32,
            chunk_out: n.max(1) as u32,
            offset: 0,
        });
        params.places[s] = [p.chunk_in, p.chunk_out, p.offset, 0];
        let j = members.iter().position(|&m| m == store.member).unwrap();
        body += &format!("    out{k}[place({s}u, i)] = T(v{j});\n");
    }
    let mut present: Vec<Activation> = Vec::new();
    if pow {
        spec = spec.code(SPECIAL_VALUES).code(POW);
        // SPECIAL_VALUES is there already.
        present.push(Activation::Log);
    }
    spec = activation_helpers(spec, &all_acts, &present)
        .code(&code)
        .code(act_fns.text())
        .code(
            "fn place(s: u32, i: u32) -> u32 {\n    let p = params.places[s];\n    \
             return (i / p.x) * p.y + p.z + i % p.x;\n}",
        )
        .code(&format!("fn evaluate(i: u32) {{\n{body}}}"));
    let labels: Vec<&str> = members.iter().map(|&m| ir.nodes[m].op.name()).collect();
    l.node_detail = format!("pointwise {} {}", labels.join(", "), dims(&out.shape));
    l.kernel(Kernel {
        label: "pointwise".into(),
        source: include_str!("pointwise.wgsl"),
        spec,
        output_type: dt,
        input_type: dt,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs,
        outputs,
        workgroups: grid(n, WG),
        workgroup_size: WG,
    })
}

/// `ids` in order, each once.
fn distinct(ids: impl Iterator<Item = OperandId>) -> Vec<OperandId> {
    let mut out: Vec<OperandId> = Vec::new();
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// A group kernel's bindings: each distinct source once (`in0`, ...), then
/// each distinct store buffer (`out0`, ...), and their declarations.
fn bindings(
    sources: impl Iterator<Item = OperandId>,
    buffers: impl Iterator<Item = OperandId>,
) -> (Vec<OperandId>, Vec<OperandId>, String) {
    let (inputs, outputs) = (distinct(sources), distinct(buffers));
    let mut code = String::new();
    for k in 0..inputs.len() {
        code += &format!(
            "@group(0) @binding({}) var<storage, read> in{k}: array<T>;\n",
            k + 1
        );
    }
    for k in 0..outputs.len() {
        code += &format!(
            "@group(0) @binding({}) var<storage, read_write> out{k}: array<T>;\n",
            inputs.len() + k + 1
        );
    }
    (inputs, outputs, code)
}

fn dims(shape: &[usize]) -> String {
    shape
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

const _: () = assert!(MAX_RANK == 8, "extents and strides hold 8 axes");
