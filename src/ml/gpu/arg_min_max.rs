//! argMin / argMax: one invocation per output element, scanning the axis
//! (usually short: classes, channels) as the CPU reference does.

use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::types::DataType;

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of arg_min_max.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        outputs: u32,
        len: u32,
        inner: u32,
        _pad: u32,
    }
}

/// `load(j)`: input element j in a type that compares as the element type
/// does (float as f32, int32 as i32, uint8 unpacked from its word as u32).
pub(super) fn load(dt: DataType) -> &'static str {
    match dt {
        DataType::Float32 | DataType::Float16 => "fn load(j: u32) -> f32 { return f32(x[j]); }",
        DataType::Int32 => "fn load(j: u32) -> i32 { return x[j]; }",
        DataType::Uint8 => {
            "fn load(j: u32) -> u32 { return (x[j / 4u] >> (8u * (j % 4u))) & 255u; }"
        }
    }
}

pub(super) fn arg_min_max(
    l: &mut Lowering,
    node: &Node,
    max: bool,
    axis: usize,
    last: bool,
) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let outputs = l.ir.desc(y).element_count();
    let len = xd.shape[axis];
    let inner: usize = xd.shape[axis + 1..].iter().product();
    let params = Params {
        outputs: outputs as u32,
        len: len as u32,
        inner: inner as u32,
        _pad: 0,
    };
    // A later element replaces the best only if strictly better (or equal
    // too, for the last index): ties and NaN as onnxruntime has them.
    let better = match (max, last) {
        (true, false) => "v > best",
        (true, true) => "v >= best",
        (false, false) => "v < best",
        (false, true) => "v <= best",
    };
    let spec = Specialization::new()
        .code(load(xd.data_type))
        .code(&format!(
            "fn better(v: V, best: V) -> bool {{ return {better}; }}"
        ))
        .alias(
            "V",
            match xd.data_type {
                DataType::Int32 => "i32",
                DataType::Uint8 => "u32",
                _ => "f32",
            },
        );
    l.kernel(Kernel {
        label: node.op.name().into(),
        source: include_str!("arg_min_max.wgsl"),
        spec,
        output_type: DataType::Int32,
        input_type: xd.data_type,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(outputs, WG),
        workgroup_size: WG,
    })
}
