//! slice (starts, sizes, strides), and the strided-view kernel that
//! transpose and split share with it.

use super::concat_writes::place;
use super::lower::{axes, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use crate::error::{Error, Result};
use crate::gpu::Specialization;
use crate::ml::graph_ir::{Node, OperandId};
use crate::ml::types::{strides, DataType};

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of slice.wgsl (slice, split, transpose).
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        rank: u32,
        base: u32,
        chunk_in: u32,
        chunk_out: u32,
        offset: u32,
        _pad: [u32; 2],
        axes: [[u32; 4]; MAX_RANK],
    }
}

/// uint8 is packed four to a u32 word, so an element-indexed copy would move
/// whole words; refusing is better than returning scrambled bytes.
pub(super) fn refuse_uint8(l: &Lowering, id: OperandId, op: &str) -> Result<()> {
    if l.ir.desc(id).data_type == DataType::Uint8 {
        return Err(Error::invalid(format!(
            "{op} does not support uint8 on the GPU; cast first (to int32 or float32)"
        )));
    }
    Ok(())
}

/// Copies the view `x[base + sum_k c[k] * mult[k]]` of `x` into `y`, for
/// every coordinate `c` of `y`'s shape (into its slab of a concat's output
/// where the lowering places it).
pub(super) fn strided_view(
    l: &mut Lowering,
    label: &str,
    x: OperandId,
    y: OperandId,
    base: usize,
    mult: &[usize],
) -> Result<()> {
    let out = l.ir.desc(y).clone();
    let n = out.element_count();
    let (rank, axes) = axes(label, &out.shape, &[mult])?;
    let (place, at) = place(l.placement, n);
    let params = Params {
        n: n as u32,
        rank,
        base: base as u32,
        chunk_in: at.chunk_in,
        chunk_out: at.chunk_out,
        offset: at.offset,
        _pad: [0; 2],
        axes,
    };
    l.kernel(Kernel {
        label: label.into(),
        source: include_str!("slice.wgsl"),
        spec: Specialization::new().code(place),
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

pub(super) fn slice(
    l: &mut Lowering,
    node: &Node,
    starts: &[usize],
    steps: &[usize],
) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    refuse_uint8(l, x, "slice")?;
    let in_strides = strides(&l.ir.desc(x).shape);
    let base = starts.iter().zip(&in_strides).map(|(s, t)| s * t).sum();
    let mult: Vec<usize> = steps.iter().zip(&in_strides).map(|(s, t)| s * t).collect();
    strided_view(l, "slice", x, y, base, &mult)
}
