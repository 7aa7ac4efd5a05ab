//! `conv2d_coop_direct.wgsl`: the tensor-core conv2d that reads its A
//! blocks (16 pixels x 16 channels, one output row's run of 64 pixels a
//! tile) straight from the float16 NHWC input, and B from the filter
//! rearranged at build into 16 x 16 blocks. An earlier kernel that staged
//! im2col operands through workgroup memory lost to the plain f16 one
//! (1.17 against 1.01 ms, 3x3 64->64 at 512x512 on an H100); this one
//! takes 0.36. It takes strides, dilations and 1x1 filters, input channels
//! in runs of 16.

use super::super::lower::{Kernel, Lowering, ScratchId};
use super::gemm_split::{scratch_bytes, sum_pass};
use super::params::{partial_bindings, table_inputs, tensor_core_bindings, Conv, CoopTiles};
use crate::error::Result;
use crate::gpu::Specialization;

/// The direct kernel's WGSL.
fn source() -> String {
    // Its own epilogue (the output may be bound as pairs); no input scale
    // (A is not touched between memory and the tensor cores).
    format!(
        "enable wgpu_cooperative_matrix;\n{}{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d_coop_epilogue.wgsl"),
        include_str!("conv2d_coop_direct.wgsl")
    )
}

/// How a tile's reduction is split: over `workgroups`, whose partial sums
/// a second pass adds up, and within each over `subgroups`, which add up
/// theirs in the epilogue (1, 1: not split).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Splits {
    pub workgroups: usize,
    pub subgroups: usize,
}

impl Splits {
    pub const NONE: Splits = Splits {
        workgroups: 1,
        subgroups: 1,
    };
}

/// The kernel's constants: the tile's blocks and run, a reduction of `icg`
/// channels at each tap of a `kh` x `kw` filter, split as `splits` says.
fn constants(
    spec: Specialization,
    (blocks, run): (u32, usize),
    (icg, kh, kw): (usize, usize, usize),
    splits: Splits,
) -> Specialization {
    let parts = splits.workgroups * splits.subgroups;
    spec.u32("BN", blocks)
        .u32("TP", run as u32)
        .u32("ICG", icg as u32)
        .u32("KH", kh as u32)
        .u32("KW", kw as u32)
        .u32("SPLITS", splits.workgroups as u32)
        .u32("SK", splits.subgroups as u32)
        .u32("KC", (icg / parts) as u32)
}

/// The unsplit kernel's bindings after x: bias, residual, output, table.
fn unsplit_bindings(c: &Conv, tiles: &CoopTiles) -> Specialization {
    let (bias, residual) = (c.has_bias, c.has_residual);
    tensor_core_bindings(Specialization::new(), bias, residual, tiles.pairs, false)
}

/// The unsplit kernel over A in the scratch buffer `a` (bound as its x)
/// rather than x, as a 1x1 convolution of `icg` input channels that
/// `tiles.params` describe: the im2col kernel's second pass
/// (`coop_im2col.rs`).
pub(super) fn emit_over(
    l: &mut Lowering,
    c: &Conv,
    tiles: CoopTiles,
    a: ScratchId,
    icg: usize,
) -> Result<()> {
    let source = source();
    let spec = unsplit_bindings(c, &tiles);
    let inputs = table_inputs(c.node)[1..].to_vec();
    let kernel = c.kernel(
        &source,
        constants(spec, (tiles.blocks, tiles.run), (icg, 1, 1), Splits::NONE),
        &tiles.params,
        Some(tiles.table),
        inputs,
        (tiles.run_grid, 32),
    );
    l.kernel_reading_scratch(kernel, a)
}

/// The kernel for `c` on `tiles`, its input channels split as `splits`
/// says.
pub(super) fn emit(l: &mut Lowering, c: &Conv, tiles: CoopTiles, splits: Splits) -> Result<()> {
    let source = source();
    let tile = (tiles.blocks, tiles.run);
    let constants = |spec| constants(spec, tile, (c.icg, c.kh, c.kw), splits);
    let [x, y, groups] = tiles.run_grid;
    let size = 32 * splits.subgroups as u32;
    if splits.workgroups == 1 {
        let spec = unsplit_bindings(c, &tiles);
        return l.kernel(c.kernel(
            &source,
            constants(spec),
            &tiles.params,
            Some(tiles.table),
            table_inputs(c.node),
            ([x, y, groups], size),
        ));
    }
    let scratch = l.scratch(scratch_bytes(splits.workgroups, c.total))?;
    let partial = l.kernel_with_scratch(
        Kernel {
            label: "conv2d".into(),
            source: &source,
            spec: constants(partial_bindings(Specialization::new())),
            output_type: c.yd.data_type,
            input_type: c.xd.data_type,
            activations: &[],
            params: Kernel::params(&tiles.params),
            table: Some(tiles.table),
            inputs: vec![c.x],
            outputs: vec![],
            workgroups: [x, y, groups * splits.workgroups as u32],
            workgroup_size: size,
        },
        scratch,
    );
    let sum = partial.and_then(|()| {
        let bias = c.node.op_inputs().get(2).copied();
        let io = (c.xd.data_type, c.yd.data_type);
        sum_pass(
            l,
            scratch,
            splits.workgroups,
            c.params,
            (bias, c.node.residual(), c.y),
            io,
            c.node,
        )
    });
    l.release_scratch(scratch);
    sum
}
