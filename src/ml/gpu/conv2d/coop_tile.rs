//! `conv2d_coop_tile.wgsl`: the tensor-core conv2d with its input staged
//! through workgroup memory (see the shader's header; choose.rs decides
//! when it is chosen, over `conv2d_coop_direct.wgsl`).
//!
//! Why: the direct kernel reads every A block (16 pixels x 16 channels)
//! from memory once per tap, with rows an NHWC pixel apart, which
//! `wgnn-bench tensor-cores` puts at half the throughput of contiguous
//! loads (3x3 64 -> 64 at 512x512 on an H100: 0.303 ms, 64 TFLOP/s). Here
//! a workgroup of R subgroups stages the (R + kh - 1) x (64 + kw - 1)
//! pixel patch of 16 input channels once, with 8-byte loads, and every
//! tap reads its A blocks from it: for 3x3 and R = 4, 1.6 input loads per
//! output pixel and 16 channels instead of 9. Measured on an H100: 3x3
//! 64 -> 64 at 512x512 0.303 -> 0.236 ms, ESRGAN-slim's 960x540 body 0.55
//! -> 0.43 and its 5x5 1.46 -> 0.93. With a fused residual it is slower
//! than the blocked kernel (0.71 against 0.52 ms for the body), and
//! workgroups of 2 rows (R = 2) were slower everywhere (0.41 ms for the
//! 512x512), so choose.rs sends residuals to conv2d/coop_blocked.rs.

use super::super::lower::Lowering;
use super::params::load4;
use super::params::{folded, table_inputs, tensor_core_bindings, Conv, CoopTiles};
use crate::error::Result;
use crate::gpu::Specialization;

/// Output rows of a workgroup, one subgroup each (unsplit).
pub(super) const ROWS: u32 = 4;
/// The most subgroups a split workgroup's reduction goes over
/// ([`Staged::split`]): 8 x 32 invocations, and 16-channel patches of
/// a 3x3 over a run of 32 pixels and their sums within
/// [`WORKGROUP_BYTES`].
pub(super) const MAX_SPLITS: usize = 8;
/// Workgroup memory the kernel may use: the 48 KiB every tensor-core
/// adapter we know offers (Vulkan's maxComputeSharedMemorySize on NVIDIA;
/// 64 KiB on AMD and Intel).
pub(super) const WORKGROUP_BYTES: usize = 49152;
/// The epilogue's per-subgroup tile of sums, 16 x TCS float32.
const TCS: usize = 36;
/// Halves from one patch pixel to the next: its 16 channels, unpadded.
const PIXEL: usize = 16;

/// The kernel's shape for a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Staged {
    /// Output rows of a workgroup ([`ROWS`], or 1 split).
    rows: usize,
    /// Subgroups a row's reduction is split over (1: not split).
    splits: usize,
    /// The stride, in both directions (1, or 2 split).
    stride: usize,
    kh: usize,
    kw: usize,
    /// Patch rows and columns.
    pr: usize,
    pc: usize,
    /// Output pixels of a row a workgroup takes (`CoopTile::run`).
    run: usize,
    /// Patch buffers: 1 (filled after a barrier) or 2 (the next one
    /// filled while this one is read).
    buffers: usize,
}

impl Staged {
    /// The kernel for a `kh` x `kw` filter at `strides` and `dilations`
    /// in runs of `run` pixels, if it takes it: stride and dilation 1 (a tap's A block is then a
    /// run of adjacent patch pixels) and more than one tap (a 1x1 reads
    /// each input once anyway), with its patch buffers and the
    /// epilogue's tiles within [`WORKGROUP_BYTES`]. The caller checks the
    /// rest (float16 NHWC, a constant filter, 16-channel runs, no input
    /// scale, tensor cores).
    pub fn choose(
        kh: usize,
        kw: usize,
        strides: [usize; 2],
        dilations: [usize; 2],
        run: usize,
    ) -> Option<Staged> {
        // Filters past 7x7 stay direct: their patches now fit (up to 13x13),
        // but each invocation would hold 27 or more patch vectors in flight
        // (FILL), a register load no hardware run has measured; before the
        // unpadded layout they did not fit.
        if strides != [1, 1] {
            return None;
        }
        Staged::shaped(kh, kw, dilations, run, (ROWS as usize, 1, 1))
    }

    /// The split kernel for a `kh` x `kw` filter at `strides` (1 or 2 in
    /// both directions) in runs of `run` pixels: workgroups of one output
    /// row whose reduction goes over `splits` subgroups, if their patches
    /// and sums fit [`WORKGROUP_BYTES`]. The caller checks that the group's
    /// input channels come in runs of 16 `splits` (the table's rows a
    /// split reads) and the rest, as for [`Staged::choose`].
    pub fn split(
        (kh, kw): (usize, usize),
        strides: [usize; 2],
        dilations: [usize; 2],
        run: usize,
        splits: usize,
    ) -> Option<Staged> {
        let stride = strides[0];
        if strides[1] != stride || !(1..=2).contains(&stride) || splits > MAX_SPLITS {
            return None;
        }
        Staged::shaped(kh, kw, dilations, run, (1, splits, stride))
    }

    /// The kernel of `rows` rows, `splits` and `stride`, where its patches
    /// and sums fit.
    fn shaped(
        kh: usize,
        kw: usize,
        dilations: [usize; 2],
        run: usize,
        (rows, splits, stride): (usize, usize, usize),
    ) -> Option<Staged> {
        if dilations != [1, 1] || kh * kw < 2 || kh > 7 || kw > 7 {
            return None;
        }
        let pr = (rows - 1) * stride + kh;
        let pc = (run - 1) * stride + kw;
        let epilogue = rows * splits * 16 * TCS * 4;
        // Pixels of 32 bytes, unpadded, and one buffer up to 9 taps: the
        // least workgroup memory, so the most workgroups a multiprocessor.
        // On an H100, 3x3 64 -> 64 at 512x512: one buffer 0.168 ms; two
        // 0.212, with 48-byte pixels (a matrix load's rows in distinct
        // banks) 0.226; one of 48-byte pixels with a four-matrix epilogue
        // 0.215. A 5x5's 25 taps a fill go the other way: ESRGAN-slim's
        // 0.786 ms with two buffers, 0.872 with one.
        let size = |buffers: usize| buffers * splits * pr * pc * PIXEL * 2 + epilogue;
        let buffers = if kh * kw > 9 && size(2) <= WORKGROUP_BYTES {
            2
        } else {
            1
        };
        if size(buffers) > WORKGROUP_BYTES {
            return None;
        }
        Some(Staged {
            rows,
            splits,
            stride,
            kh,
            kw,
            pr,
            pc,
            run,
            buffers,
        })
    }

    /// Subgroups a row's reduction is split over (choose.rs's tests ask).
    #[cfg(test)]
    pub fn splits(self) -> usize {
        self.splits
    }

    pub fn source() -> String {
        format!(
            "enable wgpu_cooperative_matrix;\n{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_coop_tile.wgsl")
        )
    }

    pub fn workgroup_size(self) -> u32 {
        (32 * self.rows * self.splits) as u32
    }

    /// Tiles of `rows` rows x `run` pixels over `images` of `oh` x `ow`.
    pub fn tiles(self, images: usize, oh: usize, ow: usize) -> usize {
        images * oh.div_ceil(self.rows) * ow.div_ceil(self.run)
    }

    /// Its constants, how it reads x for `icg` input channels a group
    /// (`load4`, conv2d/coop_blocked.rs), and `bindings`: the bias,
    /// residual, output and table declarations and the tile's BN that it
    /// shares with the other tensor-core kernels.
    pub fn spec(self, bindings: Specialization, icg: usize) -> Specialization {
        let vectors = self.splits * self.pr * self.pc * 4;
        bindings
            .code(&load4(icg))
            .u32("R", self.rows as u32)
            .u32("SK", self.splits as u32)
            .u32("ST", self.stride as u32)
            .u32("KH", self.kh as u32)
            .u32("KW", self.kw as u32)
            .u32("TP", self.run as u32)
            .u32("PR", self.pr as u32)
            .u32("PC", self.pc as u32)
            .u32("PS", PIXEL as u32)
            .u32("PATCH", (self.pr * self.pc * PIXEL) as u32)
            .u32("BUFFERS", self.buffers as u32)
            .u32("ICG", icg as u32)
            // A channel loop of known length, with two patch buffers: on an
            // H100, ESRGAN-slim's 3x3 64 -> 64 at 960x540 0.418 -> 0.404 ms
            // and 64 -> 32 0.228 -> 0.224; its 5x5 with one buffer went
            // 0.800 -> 0.834 with it.
            .bool("FIXED_CHANNELS", self.buffers == 2)
            .u32(
                "FILL",
                vectors.div_ceil(self.workgroup_size() as usize) as u32,
            )
    }
}

/// The kernel `staged` for `c` on the tensor-core `tiles`.
pub(super) fn emit(l: &mut Lowering, c: &Conv, staged: Staged, tiles: CoopTiles) -> Result<()> {
    let grid_tiles = staged.tiles(c.images(), c.oh, c.ow);
    let bindings = tensor_core_bindings(
        Specialization::new(),
        c.has_bias,
        c.has_residual,
        tiles.pairs,
        false,
    );
    let spec = staged.spec(bindings.u32("BN", tiles.blocks), c.icg);
    let channel_tiles = tiles.params.channel_tiles as usize;
    let dispatch = (
        folded(grid_tiles, channel_tiles, c.o.groups),
        staged.workgroup_size(),
    );
    l.kernel(c.kernel(
        &Staged::source(),
        spec,
        &tiles.params,
        Some(tiles.table),
        table_inputs(c.node),
        dispatch,
    ))
}

#[cfg(test)]
mod tests {
    use super::Staged;

    #[test]
    fn the_patch_is_unpadded_in_one_buffer_or_two_for_more_than_9_taps_up_to_7x7() {
        // (4 + kh - 1) x (64 + kw - 1) pixels of 32 bytes: one buffer for
        // a 3x3, two for a 5x5, one where two do not fit.
        let s = Staged::choose(3, 3, [1, 1], [1, 1], 64).unwrap();
        assert_eq!((s.pr, s.pc, s.buffers), (6, 66, 1));
        let s = Staged::choose(5, 5, [1, 1], [1, 1], 64).unwrap();
        assert_eq!((s.pr, s.pc, s.buffers), (8, 68, 2));
        let s = Staged::choose(7, 7, [1, 1], [1, 1], 64).unwrap();
        assert_eq!((s.pr, s.pc, s.buffers), (10, 70, 1));
        // 21 taps, but two 10 x 66 patches and the epilogue pass 48 KiB.
        let s = Staged::choose(7, 3, [1, 1], [1, 1], 64).unwrap();
        assert_eq!((s.pr, s.pc, s.buffers), (10, 66, 1));
        // A short run: 32 + 2 patch columns.
        let s = Staged::choose(3, 3, [1, 1], [1, 1], 32).unwrap();
        assert_eq!((s.pr, s.pc, s.run, s.buffers), (6, 34, 32, 1));
        // Past 7x7, strides, dilations and 1x1 go direct.
        assert_eq!(Staged::choose(9, 9, [1, 1], [1, 1], 64), None);
        assert_eq!(Staged::choose(3, 9, [1, 1], [1, 1], 64), None);
        assert_eq!(Staged::choose(3, 3, [2, 2], [1, 1], 64), None);
        assert_eq!(Staged::choose(3, 3, [1, 1], [2, 2], 64), None);
        assert_eq!(Staged::choose(1, 1, [1, 1], [1, 1], 64), None);
    }

    #[test]
    fn a_split_kernel_takes_one_row_at_stride_1_or_2_where_its_patches_fit() {
        // One row: a 3x3 over a run of 32 reads 3 x 34 pixels a patch, 8
        // patches and 8 subgroups' sums in 44.5 KiB.
        let s = Staged::split((3, 3), [1, 1], [1, 1], 32, 8).unwrap();
        assert_eq!((s.rows, s.splits, s.pr, s.pc, s.buffers), (1, 8, 3, 34, 1));
        assert_eq!(s.workgroup_size(), 256);
        // At stride 2 a patch spans 65 columns: 4 fit, 8 do not; nor 8 of
        // a 64-pixel run's 66.
        let s = Staged::split((3, 3), [2, 2], [1, 1], 32, 4).unwrap();
        assert_eq!((s.stride, s.pr, s.pc), (2, 3, 65));
        assert_eq!(Staged::split((3, 3), [2, 2], [1, 1], 32, 8), None);
        assert_eq!(Staged::split((3, 3), [1, 1], [1, 1], 64, 8), None);
        assert!(Staged::split((3, 3), [1, 1], [1, 1], 64, 4).is_some());
        // Other strides, uneven strides, dilations, 1x1 and more than
        // MAX_SPLITS subgroups: not split.
        assert_eq!(Staged::split((3, 3), [3, 3], [1, 1], 32, 2), None);
        assert_eq!(Staged::split((3, 3), [1, 2], [1, 1], 32, 2), None);
        assert_eq!(Staged::split((3, 3), [1, 1], [2, 2], 32, 2), None);
        assert_eq!(Staged::split((1, 1), [1, 1], [1, 1], 32, 2), None);
        assert_eq!(Staged::split((3, 3), [1, 1], [1, 1], 32, 16), None);
    }
}
