//! The tiles of `conv2d_gemm_vec.wgsl`, conv2d's implicit GEMM with vec4
//! loads for float32 (and float16) NHWC inputs with a constant filter (see
//! the shader's header for the mapping and conv2d.rs for when it is
//! chosen).

// Tiles from which the 128-pixel tile is used, as for
// conv2d_gemm_wide.wgsl: below it the 64-pixel tile keeps more of a small
// GPU busy.
use super::super::lower::Lowering;
use super::params::WIDE_MIN_TILES;
use super::params::{folded, shape4, table_inputs, Conv, Params};
use super::tables::transposed_filter;
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::types::DataType;

/// Reduction rows of a slice (`TK`): the filter table's rows per group are
/// padded to a multiple of it.
pub(super) const SLICE: usize = 8;
/// Output channels of a tile (`TN`): 64, or 32 for groups of up to 32
/// outputs. ESRGAN-slim's 3x3 64 -> 32 at 960x540 left half of a 64-channel
/// tile idle and took 1.33 ms on an H100, as long as its 64 -> 64 (1.29):
/// the 32-channel tile does half the multiply-adds per pixel for the same
/// loads of x (estimate ~0.7 ms).
const CHANNELS: usize = 64;
const NARROW_CHANNELS: usize = 32;

/// A tile of output pixels x a group's output channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VecTile {
    pub pixels: usize,
    pub channels: usize,
}

impl VecTile {
    /// The tile for `pixels` output pixels and `groups` groups of `ocg`
    /// output channels. Groups of up to 32 outputs take 128 x 32 tiles on
    /// large problems (from [`WIDE_MIN_TILES`] of them); on small ones the
    /// 64 x 32 tile's 32 invocations measured slower than a half-idle
    /// 64 x 64 (selfie, 15 such convolutions on maps up to 128 x 128: 0.548
    /// against 0.583 ms on an H100), so they keep 64 channels.
    pub fn choose(pixels: usize, ocg: usize, groups: usize) -> Self {
        let narrow_tiles = pixels.div_ceil(128) * ocg.div_ceil(NARROW_CHANNELS) * groups;
        if ocg <= NARROW_CHANNELS && narrow_tiles >= WIDE_MIN_TILES {
            return VecTile {
                pixels: 128,
                channels: NARROW_CHANNELS,
            };
        }
        let wide = pixels.div_ceil(128) * ocg.div_ceil(CHANNELS) * groups >= WIDE_MIN_TILES;
        VecTile {
            pixels: if wide { 128 } else { 64 },
            channels: CHANNELS,
        }
    }

    /// The filter table's row: `ocg` padded to whole tiles.
    pub fn row(self, ocg: usize) -> usize {
        ocg.next_multiple_of(self.channels)
    }

    /// Invocations of a workgroup: 8 x 8 outputs each.
    pub fn workgroup_size(self) -> u32 {
        (self.pixels * self.channels / 64) as u32
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
            super::params::bindings_after(2, has_bias, has_scale, has_residual, "vec4<T>");
        Specialization::new()
            .u32("TM", self.pixels as u32)
            .u32("TN", self.channels as u32)
            .u32("A_TILE", (2 * SLICE * row) as u32)
            .u32("B_TILE", (2 * SLICE * self.channels / 4) as u32)
            .code(&code)
            .code(&format!(
                "@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;"
            ))
    }
}

/// The kernel `tile` for `c` (a constant filter), the filter pre-transposed
/// here, once, in float32.
pub(super) fn emit(l: &mut Lowering, c: &Conv, tile: VecTile) -> Result<()> {
    let ocp = tile.row(c.ocg);
    let rows = (c.kh * c.kw * c.icg).next_multiple_of(SLICE);
    let bytes = c.filter.unwrap_or_default();
    let widened: Vec<u8>;
    let bytes = if c.fd.data_type == DataType::Float16 {
        widened = bytes
            .chunks_exact(2)
            .flat_map(|h| {
                half::f16::from_le_bytes([h[0], h[1]])
                    .to_f32()
                    .to_le_bytes()
            })
            .collect();
        &widened
    } else {
        bytes
    };
    let table = transposed_filter(bytes, 4, c.o, shape4(&c.fd.shape), rows, ocp);
    let channel_tiles = ocp / tile.channels;
    let pixel_tiles = c.pixels.div_ceil(tile.pixels);
    let params = Params {
        ocp: ocp as u32,
        channel_tiles: channel_tiles as u32,
        ..c.params
    };
    let spec = tile.spec(c.has_bias, c.has_scale, c.has_residual);
    let dispatch = (
        folded(pixel_tiles, channel_tiles, c.o.groups),
        tile.workgroup_size(),
    );
    l.kernel(c.kernel(
        &VecTile::source(),
        spec,
        &params,
        Some(table),
        table_inputs(c.node),
        dispatch,
    ))
}

#[cfg(test)]
mod tests {
    use super::VecTile;

    #[test]
    fn large_problems_take_the_128_pixel_tile() {
        assert_eq!(VecTile::choose(512 * 512, 64, 1).pixels, 128);
        assert_eq!(VecTile::choose(263 * 128, 64, 1).pixels, 64);
        assert_eq!(VecTile::choose(132 * 128, 128, 1).pixels, 128);
        assert_eq!(VecTile::choose(132 * 128, 64, 1).workgroup_size(), 64);
        assert_eq!(VecTile::choose(264 * 128, 64, 1).workgroup_size(), 128);
    }

    #[test]
    fn up_to_32_outputs_take_the_32_channel_tile_on_large_problems() {
        for (ocg, channels, row) in [(4, 32, 32), (32, 32, 32), (33, 64, 64), (72, 64, 128)] {
            let tile = VecTile::choose(540 * 960, ocg, 1);
            assert_eq!((tile.channels, tile.row(ocg)), (channels, row), "{ocg}");
        }
        // 128 pixels x 32 channels: 64 invocations.
        assert_eq!(VecTile::choose(540 * 960, 32, 1).workgroup_size(), 64);
        // Below 264 tiles of 128 pixels, 64 x 64 tiles.
        assert_eq!(
            VecTile::choose(64 * 64, 32, 1),
            VecTile::choose(64 * 64, 64, 1)
        );
        assert_eq!(VecTile::choose(64 * 64, 32, 1).workgroup_size(), 64);
        // Two groups of 32 count as two tiles for the threshold.
        assert_eq!(VecTile::choose(132 * 128, 32, 2).channels, 32);
        assert_eq!(VecTile::choose(132 * 128, 32, 1).channels, 64);
    }
}
