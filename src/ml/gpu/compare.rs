//! Comparisons, logicalNot and where: the kernels with uint8 sides. uint8 is
//! packed four values to a u32 word, so a uint8 output is written one whole
//! word per thread.

use super::lower::{axes, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use super::matmul::broadcast_strides;
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::CompareOp;
use crate::ml::types::DataType;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of compare.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct CompareParams {
        n: u32,
        words: u32,
        rank: u32,
        _pad: u32,
        axes: [[u32; 4]; MAX_RANK],
    }
}

kernel_params! {
    /// `struct Params` of where.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct WhereParams {
        n: u32,
        threads: u32,
        rank: u32,
        _pad: u32,
        axes: [[u32; 4]; MAX_RANK],
    }
}

kernel_params! {
    /// `struct Params` of logical_not.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct LogicalNotParams {
        n: u32,
        words: u32,
        _pad: [u32; 2],
    }
}

pub(super) fn compare(l: &mut Lowering, node: &Node, op: CompareOp) -> Result<()> {
    let (a, b, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let out = l.ir.desc(y).clone();
    let input_type = l.ir.desc(a).data_type;
    let sa = broadcast_strides(&l.ir.desc(a).shape, &out.shape);
    let sb = broadcast_strides(&l.ir.desc(b).shape, &out.shape);
    let (rank, axes) = axes(op.name(), &out.shape, &[&sa, &sb])?;
    let n = out.element_count();
    let words = n.div_ceil(4);
    let params = CompareParams {
        n: n as u32,
        words: words as u32,
        rank,
        _pad: 0,
        axes,
    };
    let relation = match op {
        CompareOp::Equal => "==",
        CompareOp::Greater => ">",
        CompareOp::GreaterOrEqual => ">=",
        CompareOp::Lesser => "<",
        CompareOp::LesserOrEqual => "<=",
    };
    let int = input_type == DataType::Int32;
    let spec = Specialization::new()
        .alias("C", if int { "i32" } else { "f32" })
        .code(&format!(
            "fn holds(x: C, y: C) -> bool {{ return x {relation} y; }}"
        ));
    l.kernel(Kernel {
        label: op.name().into(),
        source: include_str!("compare.wgsl"),
        spec,
        output_type: DataType::Uint8,
        input_type,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![a, b],
        outputs: vec![y],
        workgroups: grid(words, WG),
        workgroup_size: WG,
    })
}

pub(super) fn logical_not(l: &mut Lowering, node: &Node) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let n = l.ir.desc(y).element_count();
    let words = n.div_ceil(4);
    let params = LogicalNotParams {
        n: n as u32,
        words: words as u32,
        _pad: [0; 2],
    };
    l.kernel(Kernel {
        label: "logicalNot".into(),
        source: include_str!("logical_not.wgsl"),
        spec: Specialization::new(),
        output_type: DataType::Uint8,
        input_type: DataType::Uint8,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(words, WG),
        workgroup_size: WG,
    })
}

pub(super) fn where_(l: &mut Lowering, node: &Node) -> Result<()> {
    let (c, a, b, y) = (
        node.inputs[0],
        node.inputs[1],
        node.inputs[2],
        node.outputs[0],
    );
    let out = l.ir.desc(y).clone();
    let strides: Vec<Vec<usize>> = [c, a, b]
        .iter()
        .map(|&o| broadcast_strides(&l.ir.desc(o).shape, &out.shape))
        .collect();
    let (rank, axes) = axes(
        "where",
        &out.shape,
        &[&strides[0], &strides[1], &strides[2]],
    )?;
    let n = out.element_count();
    let packed = out.data_type == DataType::Uint8;
    let (store, threads) = if packed {
        (
            "fn store(t: u32, n: u32) {\n    var word = 0u;\n    for (var k = 0u; k < 4u; k++) {\n        \
             let j = 4u * t + k;\n        if j < n {\n            let at = operands(j);\n            \
             let v = select(byte_of(b[at.z / 4u], at.z), byte_of(a[at.y / 4u], at.y), chosen(at));\n            \
             word |= v << (8u * k);\n        }\n    }\n    y[t] = word;\n}",
            n.div_ceil(4),
        )
    } else {
        (
            "fn store(t: u32, n: u32) {\n    let at = operands(t);\n    \
             y[t] = select(b[at.z], a[at.y], chosen(at));\n}",
            n,
        )
    };
    let params = WhereParams {
        n: n as u32,
        threads: threads as u32,
        rank,
        _pad: 0,
        axes,
    };
    l.kernel(Kernel {
        label: "where".into(),
        source: include_str!("where.wgsl"),
        spec: Specialization::new().code(store),
        output_type: out.data_type,
        input_type: DataType::Uint8,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![c, a, b],
        outputs: vec![y],
        workgroups: grid(threads, WG),
        workgroup_size: WG,
    })
}
