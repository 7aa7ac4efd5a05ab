//! `conv2d_coop_direct.wgsl`: the tensor-core conv2d that reads its A
//! blocks (16 pixels x 16 channels, one output row's run of 64 pixels a
//! tile) straight from the float16 NHWC input, and B from the filter
//! rearranged at build into 16 x 16 blocks. An earlier kernel that staged
//! im2col operands through workgroup memory lost to the plain f16 one
//! (1.17 against 1.01 ms, 3x3 64->64 at 512x512 on an H100); this one
//! takes 0.36. It takes strides, dilations and 1x1 filters, input channels
//! in runs of 16.

use super::super::lower::Lowering;
use super::params::{table_inputs, tensor_core_bindings, Conv, CoopTiles};
use crate::error::Result;
use crate::gpu::Specialization;

pub(super) fn emit(l: &mut Lowering, c: &Conv, tiles: CoopTiles) -> Result<()> {
    // Its own epilogue (the output may be bound as pairs); no input scale
    // (A is not touched between memory and the tensor cores).
    let source = format!(
        "enable wgpu_cooperative_matrix;\n{}{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d_coop_epilogue.wgsl"),
        include_str!("conv2d_coop_direct.wgsl")
    );
    let spec = tensor_core_bindings(
        Specialization::new(),
        c.has_bias,
        c.has_residual,
        tiles.pairs,
        false,
    )
    .u32("BN", tiles.blocks)
    .u32("TP", tiles.run as u32)
    .u32("ICG", c.icg as u32)
    .u32("KH", c.kh as u32)
    .u32("KW", c.kw as u32);
    let dispatch = (tiles.run_grid, 32);
    l.kernel(c.kernel(
        &source,
        spec,
        &tiles.params,
        Some(tiles.table),
        table_inputs(c.node),
        dispatch,
    ))
}
