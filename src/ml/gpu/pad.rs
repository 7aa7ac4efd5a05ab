//! pad: constant, edge and reflection modes.

use super::lower::{check_rank, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use super::slice::refuse_uint8;
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::PaddingMode;
use crate::ml::types::{strides, DataType};

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of pad.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        rank: u32,
        mode: u32,
        value: f32,
        value_int: i32,
        _pad: [u32; 3],
        axes: [[u32; 4]; MAX_RANK],
    }
}

pub(super) fn pad(
    l: &mut Lowering,
    node: &Node,
    beginning: &[usize],
    mode: PaddingMode,
    value: f32,
) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    refuse_uint8(l, x, "pad")?;
    let input = l.ir.desc(x).clone();
    let out = l.ir.desc(y).clone();
    let n = out.element_count();
    let int = out.data_type == DataType::Int32;
    let mode = match mode {
        PaddingMode::Constant => 0u32,
        PaddingMode::Edge => 1,
        PaddingMode::Reflection => 2,
    };
    // Axes of output extent 1 (input 1, nothing padded) read coordinate 0:
    // they are left out.
    let in_strides = strides(&input.shape);
    let kept: Vec<[u32; 4]> = (0..out.rank())
        .filter(|&k| out.shape[k] != 1)
        .map(|k| {
            [
                out.shape[k] as u32,
                input.shape[k] as u32,
                in_strides[k] as u32,
                beginning[k] as u32,
            ]
        })
        .collect();
    let rank = check_rank("pad", out.rank(), kept.len())?;
    let mut axes = [[0; 4]; MAX_RANK];
    axes[..kept.len()].copy_from_slice(&kept);
    let params = Params {
        n: n as u32,
        rank,
        mode,
        value,
        // The CPU reference converts the value with `as i32` (saturating).
        value_int: value as i32,
        _pad: [0; 3],
        axes,
    };
    let fill = if int {
        "fn fill() -> T { return params.value_int; }"
    } else {
        "fn fill() -> T { return T(params.value); }"
    };
    l.kernel(Kernel {
        label: "pad".into(),
        source: include_str!("pad.wgsl"),
        spec: Specialization::new().code(fill),
        output_type: out.data_type,
        input_type: out.data_type,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(n, WG),
        workgroup_size: WG,
    })
}
