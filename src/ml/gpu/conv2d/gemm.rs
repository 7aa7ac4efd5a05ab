//! `conv2d_gemm.wgsl` and `conv2d_gemm_wide.wgsl`: the implicit-GEMM
//! kernels that read x and the filter as they are (any layout, any filter):
//! rows are output pixels, columns a group's output channels.

use super::super::lower::Lowering;
use super::params::{bias_and_output, folded, Conv, GEMM_TILE_PIXELS, WIDE_TILE_PIXELS};
use crate::error::Result;
use crate::gpu::Specialization;

/// 64 x 64 tiles, 4 x 4 per invocation (small problems), or with `wide`
/// 128 x 64 tiles, 8 x 4 per invocation, the loaders of x running along
/// the reduction where `along_k` (inputs whose channels are adjacent).
pub(super) fn emit(l: &mut Lowering, c: &Conv, wide: Option<bool>) -> Result<()> {
    let params = include_str!("conv2d_params.wgsl");
    let store = include_str!("conv2d_gemm_store.wgsl");
    let (source, spec, tile_pixels) = match wide {
        None => (
            format!("{params}{store}{}", include_str!("conv2d_gemm.wgsl")),
            // The whole reduction in one workgroup: its epilogue
            // (gemm_split.rs makes the split variant).
            Specialization::new().u32("SPLITS", 1).code(
                "fn emit(pp: u32, m: u32, step: u32, g: u32, v: vec4<f32>) {\n\
                 \x20   store4(pp, m, step, g, v);\n}",
            ),
            GEMM_TILE_PIXELS,
        ),
        Some(along_k) => (
            format!(
                "{params}{store}{}{}",
                include_str!("conv2d_gemm_load.wgsl"),
                include_str!("conv2d_gemm_wide.wgsl")
            ),
            Specialization::new().bool("ALONG_K", along_k),
            WIDE_TILE_PIXELS,
        ),
    };
    let (has_bias, has_scale, has_residual) = c.flags();
    let spec = spec.code(&bias_and_output(has_bias, has_scale, has_residual));
    // Pixel tiles of a large image can pass the 65535 workgroups a grid
    // dimension allows, so they are folded over x and (with the channel
    // tiles) y.
    let pixel_tiles = c.pixels.div_ceil(tile_pixels);
    let dispatch = (folded(pixel_tiles, c.channel_tiles, c.o.groups), 256);
    l.kernel(c.kernel(
        &source,
        spec,
        &c.params,
        None,
        c.node.inputs.clone(),
        dispatch,
    ))
}
