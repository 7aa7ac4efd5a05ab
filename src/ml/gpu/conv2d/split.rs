//! `conv2d_split.wgsl`: conv2d for few output channels over a long
//! reduction, with each pixel's input channels split over lanes so that
//! loads are contiguous (see the shader's header; choose.rs decides when it
//! is chosen).
//!
//! Why, in bytes and instructions (ESRGAN-slim's 3x3 64 -> 4 at 960x540,
//! float32, on an H100): conv2d_narrow.wgsl took 0.78 ms for a convolution
//! that reads 132 MB (0.045 ms at the H100's memory bandwidth) and does
//! 1.2 G multiply-adds (0.04 ms at its float32 rate). Per tap and 16 lanes
//! of a pixel, the narrow kernel's subgroup vec4 load of x touches 32 cache
//! lines (one per pixel) and each input vec4 reloads the filter (5 loads per
//! 16 multiply-adds). Here, per tap, a subgroup (two groups of 16 lanes)
//! makes P = 8 loads of x, each two runs of 256 contiguous bytes (4 lines),
//! and 4 loads of the filter (2 lines, shared by the two groups): about 40
//! L1 wavefronts for 4096 multiply-adds (32 cycles of an SM's float32
//! units). Estimate: 0.1-0.15 ms (bounded by L1 and address arithmetic),
//! against 0.78. The 32 -> 12 3x3 (UPN3; the vec4 GEMM's 64-channel tile
//! left 52 columns idle): P = 4, 16 loads for 192 multiply-adds per lane and
//! tap, 3.6 GFLOP at ~1/2 of the float32 rate: ~0.15 ms against ~0.6.
//! In float16 the tensor-core kernel pads 4 or 12 outputs to a 64-column
//! tile (0.61 ms for the 64 -> 4): this kernel's loads are half as wide and
//! its sums the same, so it is chosen there too (estimate ~0.1 ms).

use crate::gpu::Specialization;
use crate::ml::ops::Conv2dOptions;
use crate::ml::shape::conv_filter_ochw;
use crate::ml::types::DataType;

use super::super::lower::{grid, Lowering};
use super::params::filter_strides;
use super::params::{shape4, table_inputs, Conv};
use super::tables::float_at;
use crate::error::Result;

/// Output channels (one group) up to which the kernel is chosen: past 16
/// its per-lane filter loads (4 per output vec4 per tap) outweigh the
/// input's, and the vec4 GEMM's 32-channel tile is better fed.
pub(super) const MAX_OUTPUTS: usize = 16;
/// Input channels from which it is chosen: 32 float32 channels are a whole
/// 128-byte cache line per pixel for 8 lanes. Narrower inputs (ESRGAN's
/// 12 -> 3 SR conv, 108 long) stay on conv2d_narrow.wgsl, whose per-pixel
/// runs are short there anyway.
pub(super) const MIN_CHANNELS: usize = 32;
/// Reduction length (icg kh kw) from which it is chosen: below it the sums
/// through workgroup memory (L OCG4 vec4 per pixel) are a large part of
/// the work.
pub(super) const MIN_REDUCTION: usize = 256;
/// Invocations of a workgroup.
const WG: u32 = 64;

/// The kernel's shape for a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Split {
    /// Output channels.
    pub ocg: usize,
    /// Lanes sharing a pixel's input channels (8 or 16).
    pub lanes: usize,
    /// Output pixels a group of lanes computes.
    pub pixels: usize,
    /// The filter's width when a group's pixels share their input rows
    /// (see [`Split::rows`]), else `None`.
    pub row: Option<usize>,
}

impl Split {
    /// The kernel for one group of `ocg` outputs from `icg` input channels
    /// with a `kh` x `kw` filter, if it takes it (the caller checks what is
    /// not a size: NHWC, a constant filter, float types, no upsample).
    pub fn choose(groups: usize, icg: usize, ocg: usize, kh: usize, kw: usize) -> Option<Split> {
        let takes = groups == 1
            && (1..=MAX_OUTPUTS).contains(&ocg)
            && icg >= MIN_CHANNELS
            && icg % 4 == 0
            && icg * kh * kw >= MIN_REDUCTION;
        takes.then(|| {
            // A power of two up to 16 that the channel runs fill (at least 8
            // here): lane l takes runs l, l + L, ...
            let runs = icg / 4;
            let lanes = 1 << runs.min(16).ilog2();
            // Accumulators: P x OCG4 vec4, at most 12 (48 registers).
            let pixels = [8, 4, 4, 2][ocg.div_ceil(4) - 1];
            Split {
                ocg,
                lanes,
                pixels,
                row: None,
            }
        })
    }

    /// Reads each input row once for all the taps of a filter row where
    /// a lane group's pixels are adjacent in one output row and their
    /// windows step by one input column: stride and dilation 1 along x and
    /// `ow` a multiple of the group's pixels (ESRGAN's 960). Filters up to
    /// 7 wide, and one output vec4: the loads are kept in registers beside
    /// the sums, and with three output vec4 they cost more than they save
    /// (H100, ESRGAN-slim's 3x3 at 960x540: 64 -> 4 0.177 -> 0.137 ms in
    /// float32, 0.182 -> 0.150 in float16; 32 -> 12 0.240 -> 0.307).
    pub fn rows(self, kw: usize, stride_x: usize, dilation_x: usize, ow: usize) -> Split {
        let takes =
            self.ocg <= 4 && stride_x == 1 && dilation_x == 1 && ow % self.pixels == 0 && kw <= 7;
        Split {
            row: takes.then_some(kw),
            ..self
        }
    }

    fn ocg4(self) -> usize {
        self.ocg.div_ceil(4)
    }

    /// Output pixels of a workgroup.
    pub fn tile_pixels(self) -> usize {
        WG as usize / self.lanes * self.pixels
    }

    pub fn workgroup_size(self) -> u32 {
        WG
    }

    pub fn source() -> String {
        format!(
            "{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_split.wgsl")
        )
    }

    /// The kernel's constants, then the bindings after x: the optional bias,
    /// input scale and residual, the output and the filter table.
    pub fn spec(self, has_bias: bool, has_scale: bool, has_residual: bool) -> Specialization {
        let red = self.tile_pixels() * self.ocg4() * (self.lanes + 1);
        let (code, next) = super::params::bindings_after(2, has_bias, has_scale, has_residual, "T");
        Specialization::new()
            .u32("OCG", self.ocg as u32)
            .u32("OCG4", self.ocg4() as u32)
            .u32("P", self.pixels as u32)
            .u32("L", self.lanes as u32)
            .u32("RED", red as u32)
            .bool("ROW", self.row.is_some())
            .u32("KW", self.row.unwrap_or(1) as u32)
            .u32("RUN", (self.pixels + self.row.unwrap_or(1) - 1) as u32)
            .code(&code)
            .code(&format!(
                "@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;"
            ))
    }
}

/// A one-group filter (`bytes` of `dt`, in `o`'s filter layout) as
/// `conv2d_split.wgsl` reads it, float32 bits: for tap t, input channel
/// ci = 4 c4 + r and output channel m = 4 j + q, the value at
/// (((t * 4 + r) * ocg4 + j) * icg4 + c4) * 4 + q (zero past the outputs).
pub(super) fn split_filter(
    bytes: &[u8],
    dt: DataType,
    o: &Conv2dOptions,
    shape: [usize; 4],
) -> Vec<u32> {
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
    let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
    let (ocg4, icg4) = (oc.div_ceil(4), icg / 4);
    let value = |at: usize| float_at(bytes, dt, at);
    let mut table = vec![0u32; kh * kw * 4 * ocg4 * icg4 * 4];
    for t in 0..kh * kw {
        let (ky, kx) = (t / kw, t % kw);
        for ci in 0..icg {
            let (c4, r) = (ci / 4, ci % 4);
            for m in 0..oc {
                let (j, q) = (m / 4, m % 4);
                let at = m * fs[0] + ci * fs[1] + ky * fs[2] + kx * fs[3];
                table[(((t * 4 + r) * ocg4 + j) * icg4 + c4) * 4 + q] = value(at).to_bits();
            }
        }
    }
    table
}

/// The kernel `split` for `c` (a constant filter).
pub(super) fn emit(l: &mut Lowering, c: &Conv, split: Split) -> Result<()> {
    let bytes = c.filter.unwrap_or_default();
    let table = split_filter(bytes, c.fd.data_type, c.o, shape4(&c.fd.shape));
    let spec = split.spec(c.has_bias, c.has_scale, c.has_residual);
    let workgroups = grid(c.pixels, split.tile_pixels() as u32);
    let dispatch = (workgroups, split.workgroup_size());
    l.kernel(c.kernel(
        &Split::source(),
        spec,
        &c.params,
        Some(table),
        table_inputs(c.node),
        dispatch,
    ))
}

#[cfg(test)]
mod tests {
    use super::{split_filter, Split};
    use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions};
    use crate::ml::types::DataType;

    #[test]
    fn few_outputs_over_long_reductions_take_the_kernel() {
        // ESRGAN-slim's 64 -> 4 and 32 -> 12 3x3.
        let esrgan = Split::choose(1, 64, 4, 3, 3).unwrap();
        assert_eq!(
            (esrgan.lanes, esrgan.pixels, esrgan.tile_pixels()),
            (16, 8, 32)
        );
        let upn3 = Split::choose(1, 32, 12, 3, 3).unwrap();
        assert_eq!((upn3.lanes, upn3.pixels, upn3.tile_pixels()), (8, 4, 32));
        // 68 channels: 17 runs over 16 lanes.
        assert_eq!(Split::choose(1, 68, 16, 3, 3).unwrap().lanes, 16);
        assert_eq!(Split::choose(1, 256, 1, 1, 1).unwrap().pixels, 8);
        // The SR conv (12 -> 3, 108 long), 1x1 reductions under 256,
        // channels not in runs of 4, wider outputs and groups do not.
        assert_eq!(Split::choose(1, 12, 3, 3, 3), None);
        assert_eq!(Split::choose(1, 64, 4, 1, 1), None);
        assert_eq!(Split::choose(1, 66, 4, 3, 3), None);
        assert_eq!(Split::choose(1, 64, 17, 3, 3), None);
        assert_eq!(Split::choose(2, 64, 4, 3, 3), None);
        assert_eq!(Split::choose(1, 64, 0, 3, 3), None);
        // Input rows shared along a lane group's pixels: ESRGAN's 960-wide
        // rows; not with strides or dilations along x, nor when a group
        // would straddle two rows.
        assert_eq!(esrgan.rows(3, 1, 1, 960).row, Some(3));
        assert_eq!(esrgan.rows(5, 1, 1, 16).row, Some(5));
        assert_eq!(upn3.rows(3, 1, 1, 960).row, None);
        assert_eq!(esrgan.rows(3, 2, 1, 960).row, None);
        assert_eq!(esrgan.rows(3, 1, 2, 960).row, None);
        assert_eq!(esrgan.rows(3, 1, 1, 961).row, None);
        assert_eq!(esrgan.rows(9, 1, 1, 960).row, None);
    }

    /// Each filter value is its own OIHW index; the table must hold it at
    /// (((t * 4 + r) * ocg4 + j) * icg4 + c4) * 4 + q, zero past the outputs.
    #[test]
    fn the_split_filter_groups_channel_runs_per_tap_row_and_output_vec4() {
        let (oc, icg, k) = (5usize, 8usize, 3usize);
        for layout in [Conv2dFilterLayout::Oihw, Conv2dFilterLayout::Ohwi] {
            let value = |o: usize, i: usize, y: usize, x: usize| ((o * icg + i) * k + y) * k + x;
            let shape = match layout {
                Conv2dFilterLayout::Oihw => [oc, icg, k, k],
                _ => [oc, k, k, icg],
            };
            let mut bytes = vec![0u8; 4 * oc * icg * k * k];
            for o in 0..oc {
                for i in 0..icg {
                    for y in 0..k {
                        for x in 0..k {
                            let at = match layout {
                                Conv2dFilterLayout::Oihw => value(o, i, y, x),
                                _ => ((o * k + y) * k + x) * icg + i,
                            };
                            let v = value(o, i, y, x) as f32;
                            bytes[4 * at..4 * at + 4].copy_from_slice(&v.to_le_bytes());
                        }
                    }
                }
            }
            let o = Conv2dOptions {
                filter_layout: layout,
                ..Conv2dOptions::new()
            };
            let table = split_filter(&bytes, DataType::Float32, &o, shape);
            let (ocg4, icg4) = (2, 2);
            assert_eq!(table.len(), k * k * 4 * ocg4 * icg4 * 4);
            for (at, bits) in table.iter().enumerate() {
                let q = at % 4;
                let c4 = at / 4 % icg4;
                let j = at / 4 / icg4 % ocg4;
                let r = at / 4 / icg4 / ocg4 % 4;
                let t = at / 4 / icg4 / ocg4 / 4;
                let (m, ci) = (4 * j + q, 4 * c4 + r);
                let want = if m < oc {
                    value(m, ci, t / k, t % k) as f32
                } else {
                    0.0
                };
                assert_eq!(f32::from_bits(*bits), want, "{layout:?} at {at}");
            }
        }
    }
}
