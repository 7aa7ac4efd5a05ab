//! `conv2d_coop_tile.wgsl`: the tensor-core conv2d with its input staged
//! through workgroup memory (see the shader's header; conv2d.rs decides
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
//! 512x512), so conv2d.rs sends residuals to conv2d_coop_blocked.rs.

use super::conv2d_coop_blocked::{load4, RUN};
use crate::gpu::Specialization;

/// Output rows of a workgroup, one subgroup each.
pub(super) const ROWS: u32 = 4;
/// Workgroup memory the kernel may use: the 48 KiB every tensor-core
/// adapter we know offers (Vulkan's maxComputeSharedMemorySize on NVIDIA;
/// 64 KiB on AMD and Intel).
pub(super) const WORKGROUP_BYTES: usize = 49152;
/// The epilogue's per-subgroup tile of sums, 16 x TCS float32.
const TCS: usize = 36;
/// Patch layouts in order of preference: (halves per pixel, buffers).
const LAYOUTS: [(usize, usize); 3] = [(24, 2), (16, 2), (24, 1)];

/// The kernel's shape for a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Staged {
    /// Patch rows and columns.
    pr: usize,
    pc: usize,
    /// Halves from one patch pixel to the next.
    ps: usize,
    /// Patch buffers: 2 (the next one filled during the products) or 1.
    buffers: usize,
}

impl Staged {
    /// The kernel for a `kh` x `kw` filter at `strides` and `dilations`,
    /// if it takes it: stride and dilation 1 (a tap's A block is then a
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
    ) -> Option<Staged> {
        if strides != [1, 1] || dilations != [1, 1] || kh * kw < 2 {
            return None;
        }
        let (pr, pc) = (ROWS as usize + kh - 1, RUN + kw - 1);
        let epilogue = ROWS as usize * 16 * TCS * 4;
        // 48-byte pixels spread a matrix load's rows over the banks; where
        // two buffers of them do not fit, two at 32 bytes, then one at 48
        // (ESRGAN-slim's 5x5, 8 x 68 pixels, on an H100: 0.78 ms with two
        // buffers at 32 bytes against 0.80 with one at 48, both with the
        // loops of known length; 0.93 against 0.89 before them).
        let (ps, buffers) = LAYOUTS
            .into_iter()
            .find(|(ps, buffers)| buffers * pr * pc * ps * 2 + epilogue <= WORKGROUP_BYTES)?;
        Some(Staged {
            pr,
            pc,
            ps,
            buffers,
        })
    }

    pub fn source() -> String {
        format!(
            "enable wgpu_cooperative_matrix;\n{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_coop_tile.wgsl")
        )
    }

    pub fn workgroup_size(self) -> u32 {
        32 * ROWS
    }

    /// Tiles of ROWS rows x RUN pixels over `images` of `oh` x `ow`.
    pub fn tiles(images: usize, oh: usize, ow: usize) -> usize {
        images * oh.div_ceil(ROWS as usize) * ow.div_ceil(RUN)
    }

    /// Its constants, how it reads x for `icg` input channels a group
    /// (`load4`, conv2d_coop_blocked.rs), and `bindings`: the bias,
    /// residual, output and table declarations and the tile's BN that it
    /// shares with the other tensor-core kernels.
    pub fn spec(self, bindings: Specialization, icg: usize) -> Specialization {
        let vectors = self.pr * self.pc * 4;
        bindings
            .code(&load4(icg))
            .u32("R", ROWS)
            .u32("PR", self.pr as u32)
            .u32("PC", self.pc as u32)
            .u32("PS", self.ps as u32)
            .u32("PATCH", (self.pr * self.pc * self.ps) as u32)
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

#[cfg(test)]
mod tests {
    use super::Staged;

    #[test]
    fn the_patch_fits_workgroup_memory_with_padded_pixels_where_it_can() {
        // 3x3: 6 x 66 pixels of 48 bytes, twice, plus the epilogue.
        let s = Staged::choose(3, 3, [1, 1], [1, 1]).unwrap();
        assert_eq!((s.pr, s.pc, s.ps, s.buffers), (6, 66, 24, 2));
        // 5x5: 8 x 68 pixels of 32 bytes fit twice.
        let s = Staged::choose(5, 5, [1, 1], [1, 1]).unwrap();
        assert_eq!((s.pr, s.pc, s.ps, s.buffers), (8, 68, 16, 2));
        // 7x7: 10 x 70 pixels fit once, at 48 bytes.
        let s = Staged::choose(7, 7, [1, 1], [1, 1]).unwrap();
        assert_eq!((s.pr, s.pc, s.ps, s.buffers), (10, 70, 24, 1));
        // Nothing fits a 9x9 patch; strides, dilations and 1x1 go direct.
        assert_eq!(Staged::choose(9, 9, [1, 1], [1, 1]), None);
        assert_eq!(Staged::choose(3, 3, [2, 2], [1, 1]), None);
        assert_eq!(Staged::choose(3, 3, [1, 1], [2, 2]), None);
        assert_eq!(Staged::choose(1, 1, [1, 1], [1, 1]), None);
    }
}
