//! The tiles of `conv2d_gemm_vec.wgsl`, conv2d's implicit GEMM with vec4
//! loads for float32 (and float16) NHWC inputs with a constant filter (see
//! the shader's header for the mapping and conv2d.rs for when it is
//! chosen).

use crate::gpu::Specialization;

/// Reduction rows of a slice (`TK`): the filter table's rows per group are
/// padded to a multiple of it.
pub(super) const SLICE: usize = 8;
/// Output channels of a tile (`TN`).
pub(super) const CHANNELS: usize = 64;
/// Tiles from which the 128-pixel tile is used: two per multiprocessor of a
/// large GPU (an H100 has 132), as for conv2d_gemm_wide.wgsl. Below it the
/// 64-pixel tile keeps more of a small GPU busy.
const WIDE_MIN_TILES: usize = 264;

/// A tile of output pixels x a group's output channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VecTile {
    pub pixels: usize,
}

impl VecTile {
    /// The tile for `pixels` output pixels and `channel_tiles * groups`
    /// tiles of 64 channels.
    pub fn choose(pixels: usize, channel_tiles: usize, groups: usize) -> Self {
        let wide = pixels.div_ceil(128) * channel_tiles * groups >= WIDE_MIN_TILES;
        VecTile {
            pixels: if wide { 128 } else { 64 },
        }
    }

    /// Invocations of a workgroup: 8 x 8 outputs each.
    pub fn workgroup_size(self) -> u32 {
        (self.pixels * CHANNELS / 64) as u32
    }

    /// The kernel's WGSL after the shared params (the epilogue is its own:
    /// it writes vec4s).
    pub fn source() -> String {
        format!(
            "{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_gemm_vec.wgsl")
        )
    }

    /// The tile's constants, then the bindings after x: the optional bias,
    /// input scale and residual, the output (as vec4s) and the filter table.
    pub fn spec(self, has_bias: bool, has_scale: bool, has_residual: bool) -> Specialization {
        let row = self.pixels / 4 + 1;
        let (code, next) =
            super::conv2d::bindings_after(2, has_bias, has_scale, has_residual, "vec4<T>");
        Specialization::new()
            .u32("TM", self.pixels as u32)
            .u32("TN", CHANNELS as u32)
            .u32("A_TILE", (2 * SLICE * row) as u32)
            .u32("B_TILE", (2 * SLICE * CHANNELS / 4) as u32)
            .code(&code)
            .code(&format!(
                "@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;"
            ))
    }
}

#[cfg(test)]
mod tests {
    use super::VecTile;

    #[test]
    fn large_problems_take_the_128_pixel_tile() {
        assert_eq!(VecTile::choose(512 * 512, 1, 1).pixels, 128);
        assert_eq!(VecTile::choose(263 * 128, 1, 1).pixels, 64);
        assert_eq!(VecTile::choose(132 * 128, 2, 1).pixels, 128);
        assert_eq!(VecTile::choose(132 * 128, 1, 1).workgroup_size(), 64);
        assert_eq!(VecTile::choose(264 * 128, 1, 1).workgroup_size(), 128);
    }
}
