//! The CPU back end: multi-threaded Rust kernels (rayon), with the inner
//! loops compiled for AVX2/AVX-512 where the CPU has them (`multiversion`)
//! and the matrix products on `matrixmultiply`'s SGEMM. It is also the
//! reference the GPU kernels are tested against, so every fast path has a
//! unit test against a direct, per-element form of the same op.
//! Convolutions, pooling and resampling work in the layout they are given
//! where it pays (NHWC, channels innermost); the rest transpose to NCHW.
//!
//! The context's side (worker thread, tensor bytes, jobs, replies, faults)
//! is in `backend`; this file holds the plan and the node interpreter.
mod arg_min_max;
mod backend;
mod broadcast;
mod compare;
mod concat;
mod conv;
mod conv2d_dwpw;
mod elementwise;
mod epilogue;
mod fault;
mod gather;
mod gemm;
mod layout;
mod matmul;
mod normalization;
mod pad;
mod pool2d;
mod prelu;
mod quant_conv;
mod reduce;
mod reply;
mod resample2d;
mod sgemm;
mod slice;
mod softmax;
mod split;
mod squeeze_excite;
mod transpose;

use std::sync::Arc;

use rayon::prelude::*;

use super::graph_ir::{GraphIr, OperandId, OperandKind};
#[cfg(test)]
pub(crate) use backend::workers_started_here;
pub(crate) use backend::{CpuBackend, CpuStorage};
use epilogue::Epilogue;
pub(crate) use reply::Pending;

use super::ops::{BinaryOp, InputLayout, Op};
use super::types::{DataType, OperandDescriptor};
use super::Profile;

/// Values of one operand. float16 is held as f32 rounded to f16 precision.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Values {
    F32(Vec<f32>),
    I32(Vec<i32>),
    U8(Vec<u8>),
}

impl Values {
    pub fn from_bytes(dt: DataType, bytes: &[u8]) -> Values {
        match dt {
            DataType::Float32 => Values::F32(bytemuck::pod_collect_to_vec(bytes)),
            DataType::Float16 => Values::F32(
                bytes
                    .chunks_exact(2)
                    .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect(),
            ),
            DataType::Int32 => Values::I32(bytemuck::pod_collect_to_vec(bytes)),
            DataType::Uint8 => Values::U8(bytes.to_vec()),
        }
    }

    pub fn to_bytes(&self, dt: DataType) -> Vec<u8> {
        match (self, dt) {
            (Values::F32(v), DataType::Float16) => v
                .iter()
                .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
                .collect(),
            (Values::F32(v), _) => bytemuck::cast_slice(v).to_vec(),
            (Values::I32(v), _) => bytemuck::cast_slice(v).to_vec(),
            (Values::U8(v), _) => v.clone(),
        }
    }

    pub fn f32(&self) -> &[f32] {
        match self {
            Values::F32(v) => v,
            other => panic!("expected float values, got {other:?}"),
        }
    }
}

/// A graph compiled for the CPU: the (fused) node list, with the constants
/// decoded and the operands' lifetimes found once at build rather than on
/// every dispatch.
#[derive(Clone)]
pub(crate) struct CpuPlan {
    ir: Arc<GraphIr>,
    constants: Vec<Option<Arc<Values>>>,
    /// Per operand, the last node that reads it (`GraphIr::last_uses`).
    last_uses: Arc<Vec<Option<usize>>>,
}

impl CpuPlan {
    pub fn new(ir: Arc<GraphIr>) -> CpuPlan {
        // Constants no node reads (a filter fusion replaced with its
        // slices) are not converted.
        let uses = ir.use_counts();
        let constants = ir
            .operands
            .iter()
            .zip(uses)
            .map(|(info, uses)| match &info.kind {
                OperandKind::Constant(bytes) if uses > 0 => {
                    Some(Arc::new(Values::from_bytes(info.desc.data_type, bytes)))
                }
                _ => None,
            })
            .collect();
        let last_uses = Arc::new(ir.last_uses());
        CpuPlan {
            ir,
            constants,
            last_uses,
        }
    }

    /// Runs the graph on values given in the graph's input order, timing
    /// each node into `profile` when given.
    pub fn run(&self, inputs: Vec<Values>, mut profile: Option<&mut Profile>) -> Vec<Values> {
        let started = std::time::Instant::now();
        let ir = &self.ir;
        let mut vals = self.constants.clone();
        for ((_, id), v) in ir.inputs.iter().zip(inputs) {
            vals[*id] = Some(Arc::new(v));
        }
        let last_uses = &self.last_uses;
        for (index, node) in ir.nodes.iter().enumerate() {
            let node_started = std::time::Instant::now();
            let value = |i: OperandId| vals[i].as_deref().expect("operand computed before use");
            let mut args: Vec<(&Values, &OperandDescriptor)> = node
                .op_inputs()
                .iter()
                .map(|&i| (value(i), ir.desc(i)))
                .collect();
            // A fused input scale: the first input times the per-channel gate.
            let scaled = node.input_scale().map(|s| {
                let none = Epilogue::new(&[], false);
                elementwise::binary(
                    BinaryOp::Mul,
                    args[0],
                    (value(s), ir.desc(s)),
                    args[0].1,
                    none,
                )
            });
            if let Some(scaled) = &scaled {
                args[0].0 = scaled;
            }
            // A fused input upsample: the conv reads the upsampled tensor,
            // made here (the GPU kernels index through it instead).
            let upsampled = match (&node.op, node.input_upsample) {
                (Op::Conv2d(o), Some(s)) => {
                    let axes = match o.input_layout {
                        InputLayout::Nchw => [2, 3],
                        InputLayout::Nhwc => [1, 2],
                    };
                    Some(resample2d::upsample_nearest(args[0], axes, s))
                }
                _ => None,
            };
            if let Some((v, d)) = &upsampled {
                args[0] = (v, d);
            }
            let out_descs: Vec<&OperandDescriptor> =
                node.outputs.iter().map(|&o| ir.desc(o)).collect();
            let ep = Epilogue::new(
                &node.activations,
                out_descs[0].data_type == DataType::Float16,
            );
            let outs = match node.residual() {
                None => execute(&node.op, &args, &out_descs, ep),
                // A late residual is added after the activations; in float16
                // the sum is rounded once, after it, as the direct kernel does.
                Some(r) if node.late_residual => {
                    let mut outs = execute(&node.op, &args, &out_descs, ep.rounding_to(false));
                    if let (Some(Values::F32(y)), Values::F32(r)) = (outs.first_mut(), value(r)) {
                        add_residual(y, r);
                        ep.without_activations().apply_par(y);
                    }
                    outs
                }
                // The residual is added before the activations, so those run
                // after it, in a pass of their own; in float16 the sum is
                // rounded once, after them, as the GPU kernels do.
                Some(r) => {
                    let bare = ep.without_activations().rounding_to(false);
                    let mut outs = execute(&node.op, &args, &out_descs, bare);
                    if let (Some(Values::F32(y)), Values::F32(r)) = (outs.first_mut(), value(r)) {
                        add_residual(y, r);
                        ep.apply_par(y);
                    }
                    outs
                }
            };

            for (&o, v) in node.outputs.iter().zip(outs) {
                vals[o] = Some(Arc::new(v));
            }
            if let Some(p) = profile.as_deref_mut() {
                let ms = node_started.elapsed().as_secs_f64() * 1e3;
                p.kernels.push((node.op.name().to_string(), ms));
                p.details.push(ir.describe(node));
            }
            // Free what no later node reads.
            for &i in &node.inputs {
                if last_uses[i] == Some(index)
                    && !matches!(ir.operands[i].kind, OperandKind::Constant(_))
                {
                    vals[i] = None;
                }
            }
        }
        if let Some(p) = profile {
            p.total_ms = started.elapsed().as_secs_f64() * 1e3;
        }
        ir.outputs
            .iter()
            .map(|(_, id)| Arc::unwrap_or_clone(vals[*id].clone().expect("graph output computed")))
            .collect()
    }
}

/// y += r, on all cores for large outputs.
fn add_residual(y: &mut [f32], r: &[f32]) {
    const TASK: usize = 1 << 14;
    y.par_chunks_mut(TASK)
        .zip(r.par_chunks(TASK))
        .for_each(|(y, r)| y.iter_mut().zip(r).for_each(|(a, &b)| *a += b));
}

/// Runs one node. Convolutions and binary ops apply the epilogue inside their
/// kernels; every other op gets it as a pass over each output.
fn execute(
    op: &Op,
    args: &[(&Values, &OperandDescriptor)],
    outs: &[&OperandDescriptor],
    ep: Epilogue,
) -> Vec<Values> {
    let out = outs[0];
    let one = |v: Values| vec![v];
    let mut values = match op {
        Op::Conv2d(o) => return one(conv::conv2d(args, out, o, ep)),
        Op::DepthwisePointwise(o) => {
            return one(conv2d_dwpw::depthwise_pointwise(args, out, o, ep))
        }
        Op::ConvTranspose2d(o) => return one(conv::conv_transpose2d(args, out, o, ep)),
        Op::QuantConv2d(o) => return one(quant_conv::quant_conv2d(args, out, o, ep)),
        Op::Binary(b) => return one(elementwise::binary(*b, args[0], args[1], out, ep)),
        Op::Pool2d(kind, o) => one(pool2d::pool2d(*kind, args[0], out, o)),
        Op::Reduce { kind, axes, .. } => one(reduce::reduce(args[0], out, *kind, axes)),
        Op::Resample2d(o) => one(resample2d::resample2d(args[0], out, o)),
        Op::Concat { axis } => one(concat::concat(args, out, *axis)),
        Op::Reshape => one(args[0].0.clone()),
        Op::Transpose { permutation } => one(transpose::transpose(args[0], permutation)),
        Op::Slice {
            starts, strides, ..
        } => one(slice::slice(args[0], out, starts, strides)),
        Op::Pad {
            beginning,
            mode,
            value,
            ..
        } => one(pad::pad(args[0], out, beginning, *mode, *value)),
        Op::Split { sizes, axis } => split::split(args[0], sizes, *axis),
        Op::Unary(a) => one(elementwise::unary(a, args[0].0)),
        Op::Prelu => one(prelu::prelu(args[0], args[1], out)),
        Op::Softmax { axis } => one(softmax::softmax(args[0], *axis)),
        Op::Matmul => one(matmul::matmul(args[0], args[1], out)),
        Op::Gemm(o) => one(gemm::gemm(args, out, o)),
        Op::Cast => one(elementwise::cast(args[0].0, out.data_type)),
        Op::Compare(c) => one(compare::compare(*c, args[0], args[1], out)),
        Op::LogicalNot => one(compare::logical_not(args[0].0)),
        Op::Where => one(compare::where_(args[0], args[1], args[2], out)),
        Op::Identity => one(args[0].0.clone()),
        Op::ArgMinMax {
            max,
            axis,
            select_last_index,
            ..
        } => one(arg_min_max::arg_min_max(
            args[0],
            *max,
            *axis,
            *select_last_index,
        )),
        Op::Gather { axis } => one(gather::gather(args[0], args[1], out, *axis)),
        Op::Expand | Op::Tile { .. } => one(broadcast::repeat(args[0], out)),
        Op::BatchNormalization { epsilon } => one(normalization::normalize(
            args[0], args[1], args[2], *epsilon,
        )),
        Op::SqueezeExcite(o) => one(squeeze_excite::squeeze_excite(args, o)),
    };
    for (v, d) in values.iter_mut().zip(outs) {
        if let Values::F32(x) = v {
            ep.rounding_to(d.data_type == DataType::Float16)
                .apply_par(x);
        }
    }
    values
}

/// Reproducible values in [-1, 1] for the kernels' unit tests (xorshift).
#[cfg(test)]
pub(crate) fn test_values(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}
