//! The blocked tensor-core conv2d: `conv2d_coop_block.wgsl` copies the
//! float16 NHWC input, zero-padded, into a scratch buffer laid out so that
//! every A block is 512 contiguous bytes, then `conv2d_coop_blocked.wgsl`
//! runs the products from it (see the shaders' headers; choose.rs decides
//! when it is chosen).
//!
//! Why: `wgnn-bench tensor-cores` on an H100 puts 16x16x16 products with
//! both operands loaded contiguously each step at ~295 TFLOP/s, with A's
//! rows an NHWC pixel apart (how conv2d_coop_direct.wgsl reads them) at
//! ~145, and with A from workgroup memory (conv2d_coop_tile.wgsl) at ~100.
//! The copy costs one read and one write of the input (33 MB each for
//! 512x512x64: ~0.03 ms), once per convolution instead of per tap.

use super::super::lower::{grid, Kernel, Lowering};
use super::params::load4;
use super::params::{table_inputs, tensor_core_bindings, Conv, CoopTiles};
use crate::error::Result;
use crate::gpu::Specialization;

/// Invocations of a workgroup of the copy.
const COPY_WG: u32 = 256;

/// The blocked copy's shape for a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::ml::gpu) struct Blocked {
    /// 16-channel input blocks over all groups.
    pub channel_blocks: usize,
    /// Padded rows and columns.
    pub rows: usize,
    pub columns: usize,
    /// Output pixels of a row a workgroup takes (`CoopTile::run`).
    pub run: usize,
}

impl Blocked {
    /// The copy for `images` of an `oh` x `ow` output in runs of `run`
    /// pixels from a `kh` x `kw` filter over `groups` groups of `icg`
    /// input channels, if the kernel
    /// takes the convolution: stride and dilation 1 (a tap's A block is
    /// then 16 adjacent pixels) and more than one tap (a 1x1 reads each
    /// input once anyway, so the copy would only add to it).
    pub fn choose(
        (kh, kw): (usize, usize),
        strides: [usize; 2],
        dilations: [usize; 2],
        (oh, ow, run): (usize, usize, usize),
        groups: usize,
        icg: usize,
    ) -> Option<Blocked> {
        if strides != [1, 1] || dilations != [1, 1] || kh * kw < 2 {
            return None;
        }
        Some(Blocked {
            channel_blocks: groups * icg.div_ceil(16),
            rows: oh + kh - 1,
            columns: ow.div_ceil(run) * run + kw - 1,
            run,
        })
    }

    /// Bytes of the copy of `images` images.
    pub fn bytes(self, images: usize) -> u64 {
        (images * self.channel_blocks * self.rows * self.columns * 16 * 2) as u64
    }

    /// Invocations of the copy for `icg` input channels a group: one per
    /// 8 channels of a padded pixel where they come in runs of 8, else per 4.
    pub fn copy_invocations(self, images: usize, icg: usize) -> usize {
        images * self.channel_blocks * self.rows * self.columns * 16 / copy_unit(icg)
    }

    pub fn copy_workgroup_size() -> u32 {
        COPY_WG
    }

    /// The copy's WGSL and constants, reading x for `icg` input channels a
    /// group.
    pub fn copy_source() -> String {
        format!(
            "{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_coop_block.wgsl")
        )
    }

    pub fn copy_spec(self, icg: usize) -> Specialization {
        let spec = Specialization::new()
            .u32("UNIT", copy_unit(icg) as u32)
            .u32("TP", self.run as u32);
        if copy_unit(icg) == 8 {
            // A pure copy: the bits move as they are, 16 bytes at a time.
            spec.code(
                "@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;\n\
                 @group(0) @binding(2) var<storage, read_write> xb: array<vec4<u32>>;\n\
                 fn load_unit(at: u32, c: u32, ok: bool) -> vec4<u32> {\n\
                 \x20   let keep = ok & (c < params.icg);\n\
                 \x20   return select(vec4<u32>(0u), x[select(0u, at / 8u, keep)], keep);\n}\n",
            )
        } else {
            spec.code(&load4(icg)).code(
                "@group(0) @binding(2) var<storage, read_write> xb: array<vec4<f16>>;\n\
                 fn load_unit(at: u32, c: u32, ok: bool) -> vec4<f16> { return load4(at, c, ok); }\n",
            )
        }
    }

    /// The kernel's constants for a `kh` x `kw` filter over `icg` input
    /// channels a group, after `bindings` (the tile's BN and the bindings
    /// it shares with the other tensor-core kernels). The step loop has a
    /// known length for one 16-channel block (an RGB head): on an H100,
    /// ESRGAN-slim's 3 -> 64 3x3 at 960x540 took 0.088 ms that way against
    /// 0.138 with the loop to params; its 64 -> 64 with a residual, whose
    /// loop is 36 steps, went 0.431 -> 0.510, so it keeps params.
    pub fn spec(
        self,
        bindings: Specialization,
        (kh, kw): (usize, usize),
        icg: usize,
    ) -> Specialization {
        let icb = icg.div_ceil(16);
        bindings
            .u32("TP", self.run as u32)
            .u32("KH", kh as u32)
            .u32("KW", kw as u32)
            .u32("ICB", icb as u32)
            .bool("FIXED_STEPS", icb == 1)
            // One subgroup a tile (conv2d_coop_epilogue.wgsl).
            .u32("SK", 1)
    }

    pub fn source() -> String {
        format!(
            "enable wgpu_cooperative_matrix;\n{}{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_coop_epilogue.wgsl"),
            include_str!("conv2d_coop_blocked.wgsl")
        )
    }
}

/// Channels the copy moves per invocation: 8 (16 bytes) where each
/// group's channels come in runs of 8, so every run starts at a multiple of
/// 8 elements and lies wholly inside the group or past it, else 4.
fn copy_unit(icg: usize) -> usize {
    if icg % 8 == 0 {
        8
    } else {
        4
    }
}

/// The input copied into the blocked scratch layout, then the tensor-core
/// kernel over it, for `c` on the tensor-core `tiles`.
pub(super) fn emit(l: &mut Lowering, c: &Conv, blocked: Blocked, tiles: CoopTiles) -> Result<()> {
    let images = c.images();
    let scratch = l.scratch(blocked.bytes(images))?;
    let copy = l.kernel_with_scratch(
        Kernel {
            label: "conv2d blocks".into(),
            source: &Blocked::copy_source(),
            spec: blocked.copy_spec(c.icg),
            output_type: c.yd.data_type,
            input_type: c.xd.data_type,
            activations: &[],
            params: Kernel::params(&tiles.params),
            table: None,
            inputs: vec![c.x],
            outputs: vec![],
            workgroups: grid(
                blocked.copy_invocations(images, c.icg),
                Blocked::copy_workgroup_size(),
            ),
            workgroup_size: Blocked::copy_workgroup_size(),
        },
        scratch,
    );
    let bindings = tensor_core_bindings(
        Specialization::new(),
        c.has_bias,
        c.has_residual,
        tiles.pairs,
        true,
    );
    let main = copy.and_then(|()| {
        let spec = blocked.spec(bindings.u32("BN", tiles.blocks), (c.kh, c.kw), c.icg);
        let inputs = table_inputs(c.node)[1..].to_vec();
        let source = Blocked::source();
        let dispatch = (tiles.run_grid, 32);
        let kernel = c.kernel(
            &source,
            spec,
            &tiles.params,
            Some(tiles.table),
            inputs,
            dispatch,
        );
        l.kernel_with_scratch(kernel, scratch)
    });
    l.release_scratch(scratch);
    main
}

#[cfg(test)]
mod tests {
    use super::Blocked;

    #[test]
    fn the_copy_pads_rows_columns_and_channels() {
        // 3x3 over 512x512 with 64 channels: 514 rows, 8 runs of 64 + 2.
        let b = Blocked::choose((3, 3), [1, 1], [1, 1], (512, 512, 64), 1, 64).unwrap();
        assert_eq!((b.channel_blocks, b.rows, b.columns), (4, 514, 514));
        // An RGB head: one block; a short last run pads the row.
        let b = Blocked::choose((5, 5), [1, 1], [1, 1], (540, 960, 64), 2, 3).unwrap();
        assert_eq!((b.channel_blocks, b.rows, b.columns), (2, 544, 964));
        assert_eq!(b.bytes(1), 2 * 544 * 964 * 32);
        assert_eq!(b.copy_invocations(3, 3), 3 * 2 * 544 * 964 * 4);
        assert_eq!(b.copy_invocations(3, 64), 3 * 2 * 544 * 964 * 2);
        // Rows that a short run pads less: 20 pixels in 32, not 64.
        let b = Blocked::choose((3, 3), [1, 1], [1, 1], (20, 20, 32), 1, 64).unwrap();
        assert_eq!((b.run, b.columns), (32, 34));
        // Strides, dilations and 1x1 read x directly.
        assert_eq!(
            Blocked::choose((3, 3), [2, 2], [1, 1], (8, 8, 32), 1, 16),
            None
        );
        assert_eq!(
            Blocked::choose((3, 3), [1, 1], [2, 2], (8, 8, 32), 1, 16),
            None
        );
        assert_eq!(
            Blocked::choose((1, 1), [1, 1], [1, 1], (8, 8, 32), 1, 16),
            None
        );
    }
}
