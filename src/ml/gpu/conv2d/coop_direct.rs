//! `conv2d_coop_direct.wgsl`: the tensor-core conv2d that reads its A
//! blocks (16 pixels x 16 channels, one output row's run of 64 pixels a
//! tile) straight from the float16 NHWC input, and B from the filter
//! rearranged at build into 16 x 16 blocks. An earlier kernel that staged
//! im2col operands through workgroup memory lost to the plain f16 one
//! (1.17 against 1.01 ms, 3x3 64->64 at 512x512 on an H100); this one
//! takes 0.36. It takes strides, dilations and 1x1 filters, input channels
//! in runs of 16.

use super::super::lower::{Kernel, Lowering};
use super::gemm_split::{scratch_bytes, sum_pass};
use super::params::{partial_bindings, table_inputs, tensor_core_bindings, Conv, CoopTiles};
use crate::error::Result;
use crate::gpu::Specialization;

/// The kernel for `c` on `tiles`, its input channels split over `splits`
/// workgroups (1: not split) whose partial sums a second pass adds up.
pub(super) fn emit(l: &mut Lowering, c: &Conv, tiles: CoopTiles, splits: usize) -> Result<()> {
    // Its own epilogue (the output may be bound as pairs); no input scale
    // (A is not touched between memory and the tensor cores).
    let source = format!(
        "enable wgpu_cooperative_matrix;\n{}{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d_coop_epilogue.wgsl"),
        include_str!("conv2d_coop_direct.wgsl")
    );
    let constants = |spec: Specialization| {
        spec.u32("BN", tiles.blocks)
            .u32("TP", tiles.run as u32)
            .u32("ICG", c.icg as u32)
            .u32("KH", c.kh as u32)
            .u32("KW", c.kw as u32)
            .u32("SPLITS", splits as u32)
            .u32("KC", (c.icg / splits) as u32)
    };
    let [x, y, groups] = tiles.run_grid;
    if splits == 1 {
        let spec = tensor_core_bindings(
            Specialization::new(),
            c.has_bias,
            c.has_residual,
            tiles.pairs,
            false,
        );
        return l.kernel(c.kernel(
            &source,
            constants(spec),
            &tiles.params,
            Some(tiles.table),
            table_inputs(c.node),
            ([x, y, groups], 32),
        ));
    }
    let scratch = l.scratch(scratch_bytes(splits, c.total))?;
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
            workgroups: [x, y, groups * splits as u32],
            workgroup_size: 32,
        },
        scratch,
    );
    let sum = partial.and_then(|()| {
        let bias = c.node.op_inputs().get(2).copied();
        let io = (c.xd.data_type, c.yd.data_type);
        sum_pass(
            l,
            scratch,
            splits,
            c.params,
            (bias, c.node.residual(), c.y),
            io,
            c.node,
        )
    });
    l.release_scratch(scratch);
    sum
}
