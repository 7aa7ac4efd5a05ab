//! binary (add, sub, mul, div, max, min), unary activations and cast; the
//! first two store into a concat's output where the lowering places them
//! (`concat_writes.rs`).

use super::concat_writes::place;
use super::lower::{axes, grid, kernel_params, Kernel, Lowering, MAX_RANK, SPECIAL_VALUES};
use super::slice_reads::operand_strides;
use crate::error::{Error, Result};
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{Activation, BinaryOp, Op};
use crate::ml::types::DataType;

const WG: u32 = 256;

/// C's `powf`, where WGSL's `pow` is undefined (a base of 0 or below) and
/// at the edges C defines: x^0 = 1^y = 1 (NaN included), (-1)^±inf = 1, a
/// negative finite base with an integral exponent gives the signed result
/// and with any other NaN, and -0 or -inf to an odd integer keep the sign.
pub(super) const POW: &str = "\
fn pow_f32(x: f32, y: f32) -> f32 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    let ax = abs(x);
    let inf = inf_f32();
    if ax == 1.0 && abs(y) == inf {
        return 1.0;
    }
    let integral = floor(y) == y;
    // Past 2^24 every f32 is even.
    let odd = integral && abs(y) < 16777216.0 && fract(y * 0.5) != 0.0;
    var m = pow(ax, y);
    if ax == 0.0 {
        m = select(0.0, inf, y < 0.0);
    }
    let negative = (bitcast<u32>(x) >> 31u) != 0u && x == x;
    if !negative {
        return m;
    }
    if ax != 0.0 && ax != inf && !integral {
        return nan_f32();
    }
    return select(m, -m, odd);
}";

kernel_params! {
    /// `struct Params` of binary.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct BinaryParams {
        n: u32,
        rank: u32,
        chunk_in: u32,
        chunk_out: u32,
        offset: u32,
        a_base: u32,
        b_base: u32,
        _pad: u32,
        axes: [[u32; 4]; MAX_RANK],
    }
}

kernel_params! {
    /// `struct Params` of unary.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct UnaryParams {
        n: u32,
        chunk_in: u32,
        chunk_out: u32,
        offset: u32,
    }
}

kernel_params! {
    /// `struct Params` of cast.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct CastParams {
        n: u32,
        threads: u32,
        _pad: [u32; 2],
    }
}

/// `op` of `x` and `y` as a WGSL expression, in i32 (`int`) or f32.
pub(super) fn binop_expr(op: BinaryOp, int: bool) -> &'static str {
    match (op, int) {
        (BinaryOp::Add, _) => "x + y",
        (BinaryOp::Sub, _) => "x - y",
        (BinaryOp::Mul, _) => "x * y",
        (BinaryOp::Div, false) => "x / y",
        // Division by zero gives 0, as on the CPU context.
        (BinaryOp::Div, true) => "select(x / y, 0, y == 0)",
        (BinaryOp::Max, _) => "max(x, y)",
        (BinaryOp::Min, _) => "min(x, y)",
        (BinaryOp::Pow, _) => "pow_f32(x, y)",
    }
}

pub(super) fn binary(l: &mut Lowering, node: &Node, op: BinaryOp) -> Result<()> {
    let (a, b, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let out = l.ir.desc(y).clone();
    let dt = out.data_type;
    // Operands read through a slice (`slice_reads.rs`) bind its input.
    let views = l.views.clone();
    let sa = operand_strides(&l.ir.desc(a).shape, &out.shape, views[0].as_ref());
    let sb = operand_strides(&l.ir.desc(b).shape, &out.shape, views[1].as_ref());
    let (rank, axes) = axes(op.name(), &out.shape, &[&sa, &sb])?;
    let mut inputs = node.inputs.clone();
    let mut bases = [0u32; 2];
    for (k, view) in views.iter().enumerate() {
        if let Some(v) = view {
            inputs[k] = v.source;
            bases[k] = v.base as u32;
        }
    }
    let (place, at) = place(l.placement, out.element_count());
    let params = BinaryParams {
        n: out.element_count() as u32,
        rank,
        chunk_in: at.chunk_in,
        chunk_out: at.chunk_out,
        offset: at.offset,
        a_base: bases[0],
        b_base: bases[1],
        _pad: 0,
        axes,
    };
    let int = dt == DataType::Int32;
    if node.residual && int {
        return Err(Error::invalid(format!(
            "a fused residual after {} of {dt} is not supported",
            op.name()
        )));
    }
    let expr = binop_expr(op, int);
    let mut spec = Specialization::new();
    if op == BinaryOp::Pow {
        spec = spec.code(SPECIAL_VALUES).code(POW);
    }
    // A fused residual (`ml::fuse`: an `add` of the result and a tensor of
    // the output's shape) is added before the activations; element i of
    // the residual is the output's.
    let (residual, y_binding) = if node.residual {
        (
            "@group(0) @binding(3) var<storage, read> r: array<T>;\n\
             fn residual(i: u32) -> f32 { return f32(r[i]); }",
            4,
        )
    } else {
        ("fn residual(i: u32) -> f32 { return 0.0; }", 3)
    };
    let spec = spec
        .code(place)
        .alias("C", if int { "i32" } else { "f32" })
        .code(&format!("fn binop(x: C, y: C) -> C {{ return {expr}; }}"))
        .code(residual)
        .code(&format!(
            "@group(0) @binding({y_binding}) var<storage, read_write> y: array<T>;"
        ))
        .code(if int {
            "fn finish(v: C, i: u32) -> T { return v; }"
        } else {
            "fn finish(v: C, i: u32) -> T { return T(act(v + residual(i))); }"
        });
    l.kernel(Kernel {
        label: op.name().into(),
        source: include_str!("binary.wgsl"),
        spec,
        output_type: dt,
        input_type: dt,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs,
        outputs: vec![y],
        workgroups: grid(out.element_count(), WG),
        workgroup_size: WG,
    })
}

pub(super) fn unary(l: &mut Lowering, node: &Node) -> Result<()> {
    let Op::Unary(act) = node.op else {
        unreachable!()
    };
    let acts: Vec<_> = std::iter::once(act)
        .chain(node.activations.iter().copied())
        .collect();
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let n = l.ir.desc(y).element_count();
    let dt = l.ir.desc(y).data_type;
    let (place, at) = place(l.placement, n);
    let params = UnaryParams {
        n: n as u32,
        chunk_in: at.chunk_in,
        chunk_out: at.chunk_out,
        offset: at.offset,
    };
    // int32 (abs, neg) stays in i32; floats go through the activation chain.
    let (apply, acts) = match act {
        Activation::Abs if dt == DataType::Int32 => ("abs(v)", &[][..]),
        Activation::Neg if dt == DataType::Int32 => ("-v", &[][..]),
        _ => ("T(act(f32(v)))", &acts[..]),
    };
    l.kernel(Kernel {
        label: act.name().into(),
        source: include_str!("unary.wgsl"),
        spec: Specialization::new()
            .code(place)
            .code(&format!("fn apply(v: TI) -> T {{ return {apply}; }}")),
        output_type: dt,
        input_type: dt,
        activations: acts,
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(n, WG),
        workgroup_size: WG,
    })
}

pub(super) fn cast(l: &mut Lowering, node: &Node) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let from = l.ir.desc(x).data_type;
    let to = l.ir.desc(y).data_type;
    let n = l.ir.desc(y).element_count();
    use DataType::*;
    // `load` gives the value as f32 (floats), i32 or u32 (uint8).
    let load = match from {
        Float32 | Float16 => "fn load(j: u32) -> f32 { return f32(x[j]); }",
        Int32 => "fn load(j: u32) -> i32 { return x[j]; }",
        Uint8 => "fn load(j: u32) -> u32 { return (x[j / 4u] >> (8u * (j % 4u))) & 255u; }",
    };
    let convert = match (from, to) {
        (Float32 | Float16, Float32 | Float16) => "T(v)",
        // 2^31 itself is past i32, and the largest f32 below it is 2147483520:
        // saturate to i32::MAX explicitly, as the CPU context does.
        (Float32 | Float16, Int32) => {
            "select(i32(clamp(trunc(v), -2147483648.0, 2147483520.0)), 2147483647, v >= 2147483648.0)"
        }
        (Float32 | Float16, Uint8) => "u32(clamp(trunc(v), 0.0, 255.0))",
        (Int32, Float32 | Float16) => "T(f32(v))",
        (Int32, Int32) => "v",
        (Int32, Uint8) => "u32(clamp(v, 0, 255))",
        (Uint8, Float32 | Float16) => "T(f32(v))",
        (Uint8, Int32) => "i32(v)",
        (Uint8, Uint8) => "v",
    };
    let (store, threads) = if to == Uint8 {
        (
            format!(
                "fn store(t: u32, n: u32) {{\n    var word = 0u;\n    for (var k = 0u; k < 4u; k++) {{\n        \
                 let j = 4u * t + k;\n        if j < n {{ let v = load(j); word |= ({convert}) << (8u * k); }}\n    }}\n    \
                 y[t] = word;\n}}\n"
            ),
            n.div_ceil(4),
        )
    } else {
        (
            format!("fn store(t: u32, n: u32) {{ let v = load(t); y[t] = {convert}; }}\n"),
            n,
        )
    };
    let params = CastParams {
        n: n as u32,
        threads: threads as u32,
        _pad: [0; 2],
    };
    l.kernel(Kernel {
        label: "cast".into(),
        source: include_str!("cast.wgsl"),
        spec: Specialization::new().code(load).code(&store),
        output_type: to,
        input_type: from,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(threads, WG),
        workgroup_size: WG,
    })
}
