//! `conv2d_winograd.wgsl`: a 3x3 conv2d at stride and dilation 1 as
//! Winograd F(2x2, 3x3), with the filter transformed here at build (see
//! the shader's header; choose.rs decides when it is chosen).
//!
//! Why: the implicit GEMM (conv2d_gemm_vec.wgsl) does the 9 x icg
//! multiply-adds of every output; Winograd does 16 per 2x2 outputs and
//! input channel, 2.25x fewer, for transforms that only add. Float32 3x3
//! 64 -> 64 at 512x512 on an H100 took 0.698 ms on the GEMM, against
//! cuDNN's 0.554-0.576 in float32 (TF32 off); here 0.488 in NHWC and 0.562
//! in NCHW.

use crate::gpu::Specialization;
use crate::ml::ops::Conv2dOptions;
use crate::ml::shape::conv_filter_ochw;
use crate::ml::types::DataType;

use super::super::lower::Lowering;
use super::params::{bindings_after, filter_strides, LARGE_GPU_MULTIPROCESSORS};
use super::params::{folded, shape4, table_inputs, Conv, Params};
use super::tables::float_at;
use crate::error::Result;

/// Output channels of a workgroup: the table's rows are padded to them.
pub(super) const CHANNELS: usize = 64;
/// Input channels of a chunk: the reduction is padded to them.
const CHUNK: usize = 16;
/// Winograd components: the 4 x 4 transformed patch.
const COMPONENTS: usize = 16;
/// Below this many workgroups an image (blocks x channel tiles x groups)
/// the GEMM keeps the convolution: one a multiprocessor of a large GPU,
/// where one workgroup of 512 invocations fills one.
const MIN_WORKGROUPS: usize = LARGE_GPU_MULTIPROCESSORS;

/// Tile rows of a block: 4 x 8 tiles, 8 x 16 outputs. Blocks of 2 x 8
/// (256 invocations, 16 KiB) read the transformed filter from L2 twice as
/// often and took 0.697 ms against 0.493 (3x3 64 -> 64 at 512x512 on an
/// H100).
const ROWS: usize = 4;

/// The kernel, chosen: blocks of [`ROWS`] x 8 tiles of 2x2 outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Winograd;

impl Winograd {
    /// The kernel for a conv2d of `strides`, `dilations` and `groups` with a `kh` x `kw` filter, `icg`
    /// input and `ocg` output channels a group onto `oh` x `ow` outputs, if
    /// it takes it: 3x3 at stride and dilation 1, at least three quarters
    /// of the padded reduction (16-channel chunks) and of the 64-channel
    /// tile in use (a 32-channel group keeps the GEMM's 32-channel tile),
    /// and enough workgroups an image. The caller checks the rest (float
    /// types, a constant filter, the device's workgroup limits).
    pub fn choose(
        (strides, dilations, groups): ([usize; 2], [usize; 2], usize),
        [kh, kw]: [usize; 2],
        icg: usize,
        ocg: usize,
        [oh, ow]: [usize; 2],
    ) -> Option<Winograd> {
        if [kh, kw] != [3, 3] || strides != [1, 1] || dilations != [1, 1] {
            return None;
        }
        let used = |n: usize, tile: usize| 4 * n >= 3 * n.next_multiple_of(tile);
        if !used(icg, CHUNK) || !used(ocg, CHANNELS) {
            return None;
        }
        let w = Winograd;
        let workgroups = w.blocks(oh, ow) * ocg.div_ceil(CHANNELS) * groups;
        (workgroups >= MIN_WORKGROUPS).then_some(w)
    }

    /// Invocations of a workgroup: 16 components x [`ROWS`] x 8 output
    /// channel octets.
    pub fn workgroup_size(self) -> u32 {
        (128 * ROWS) as u32
    }

    /// Workgroup memory: a chunk's transformed patches, 16 components x
    /// 16 channels x 8 [`ROWS`] tiles, float32.
    pub fn workgroup_bytes(self) -> u32 {
        (COMPONENTS * CHUNK * 8 * ROWS * 4) as u32
    }

    /// Blocks of an image of `oh` x `ow` outputs.
    pub fn blocks(self, oh: usize, ow: usize) -> usize {
        oh.div_ceil(2).div_ceil(ROWS) * ow.div_ceil(2).div_ceil(8)
    }

    pub fn source() -> String {
        format!(
            "{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_winograd.wgsl")
        )
    }

    /// Its constants (block rows; `nchw`: the layout of input and output,
    /// else NHWC), then the bindings after x: the optional bias, input
    /// scale and residual, the output and the table.
    pub fn spec(
        self,
        nchw: bool,
        has_bias: bool,
        has_scale: bool,
        has_residual: bool,
    ) -> Specialization {
        let (code, next) = bindings_after(2, has_bias, has_scale, has_residual, "T");
        Specialization::new()
            .u32("TR", ROWS as u32)
            .bool("NCHW", nchw)
            .code(&code)
            .code(&format!(
                "@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;"
            ))
    }

    /// The table's row length: output channels a group padded to the tile.
    pub fn row(ocg: usize) -> usize {
        ocg.next_multiple_of(CHANNELS)
    }

    /// Bytes of the table for `groups` of `icg` -> `ocg` channels.
    pub fn table_bytes(groups: usize, icg: usize, ocg: usize) -> u64 {
        (groups * COMPONENTS * (icg.next_multiple_of(CHUNK) + 2) * Self::row(ocg) * 4) as u64
    }

    /// The filter (`bytes` of `dt` in `o`'s filter layout, a 3x3) as the
    /// kernel reads it, float32 bits: for group g, component xi = 4 i + j
    /// and input channel k, a row of U = G f G^T's (i, j) for each of the
    /// group's output channels, padded with zeros to [`Self::row`]; rows
    /// past icg are zero, up to icg rounded up to a chunk plus two (the
    /// kernel reads two rows ahead). G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2;
    /// 0 0 1]. Computed in float64, rounded once.
    pub fn table(bytes: &[u8], dt: DataType, o: &Conv2dOptions, shape: [usize; 4]) -> Vec<u32> {
        let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
        debug_assert_eq!([kh, kw], [3, 3]);
        let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
        let ocg = oc / o.groups;
        let rows = icg.next_multiple_of(CHUNK) + 2;
        let row = Self::row(ocg);
        let mut table = vec![0u32; o.groups * COMPONENTS * rows * row];
        for g in 0..o.groups {
            for m in 0..ocg {
                for k in 0..icg {
                    let f = |r: usize, c: usize| {
                        let at = (g * ocg + m) * fs[0] + k * fs[1] + r * fs[2] + c * fs[3];
                        f64::from(float_at(bytes, dt, at))
                    };
                    let u = transform_filter([
                        [f(0, 0), f(0, 1), f(0, 2)],
                        [f(1, 0), f(1, 1), f(1, 2)],
                        [f(2, 0), f(2, 1), f(2, 2)],
                    ]);
                    for (xi, v) in u.into_iter().flatten().enumerate() {
                        table[((g * COMPONENTS + xi) * rows + k) * row + m] = (v as f32).to_bits();
                    }
                }
            }
        }
        table
    }
}

/// G f G^T for a 3x3 filter f.
fn transform_filter(f: [[f64; 3]; 3]) -> [[f64; 4]; 4] {
    let g = |[a, b, c]: [f64; 3]| [a, (a + b + c) / 2.0, (a - b + c) / 2.0, c];
    // G f: each column of f through G; then (G f) G^T: each row through G.
    let cols = [0, 1, 2].map(|c| g([f[0][c], f[1][c], f[2][c]]));
    [0, 1, 2, 3].map(|i| g([cols[0][i], cols[1][i], cols[2][i]]))
}

/// The kernel `wino` for `c` (a constant filter).
pub(super) fn emit(l: &mut Lowering, c: &Conv, wino: Winograd) -> Result<()> {
    let o = c.o;
    let bytes = c.filter.unwrap_or_default();
    let table = Winograd::table(bytes, c.fd.data_type, o, shape4(&c.fd.shape));
    let ocp = Winograd::row(c.ocg);
    let channel_tiles = ocp / CHANNELS;
    let blocks = c.images() * wino.blocks(c.oh, c.ow);
    let params = Params {
        ocp: ocp as u32,
        channel_tiles: channel_tiles as u32,
        ..c.params
    };
    let spec = wino.spec(c.params.nhwc == 0, c.has_bias, c.has_scale, c.has_residual);
    let dispatch = (
        folded(blocks, channel_tiles, o.groups),
        wino.workgroup_size(),
    );
    l.kernel(c.kernel(
        &Winograd::source(),
        spec,
        &params,
        Some(table),
        table_inputs(c.node),
        dispatch,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ml::ops::Conv2dFilterLayout;

    /// Y = A^T [U (.) (B^T d B)] A for one channel, as the shader computes
    /// it, against the 3x3 correlation of d.
    fn winograd_tile(d: [[f64; 4]; 4], f: [[f64; 3]; 3]) -> [[f64; 2]; 2] {
        let u = transform_filter(f);
        let bt = |[a, b, c, e]: [f64; 4]| [a - c, b + c, c - b, b - e];
        let rows = d.map(bt);
        let v = [0, 1, 2, 3].map(|j| bt([rows[0][j], rows[1][j], rows[2][j], rows[3][j]]));
        // v[j][i] is component (i, j).
        let m = |i: usize, j: usize| u[i][j] * v[j][i];
        let at = |[a, b, c, e]: [f64; 4]| [a + b + c, b - c - e];
        let s = [0, 1, 2, 3].map(|j| at([m(0, j), m(1, j), m(2, j), m(3, j)]));
        [0, 1].map(|a| at([s[0][a], s[1][a], s[2][a], s[3][a]]))
    }

    #[test]
    fn the_transforms_compute_the_correlation() {
        let d = [
            [1.0, -2.0, 3.5, 0.25],
            [4.0, 0.5, -1.0, 2.0],
            [-3.0, 1.5, 2.0, -0.75],
            [0.125, 6.0, -2.5, 1.0],
        ];
        let f = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 3.0, 1.0]];
        let y = winograd_tile(d, f);
        for a in 0..2 {
            for b in 0..2 {
                let want: f64 = (0..3)
                    .flat_map(|r| (0..3).map(move |c| (r, c)))
                    .map(|(r, c)| d[a + r][b + c] * f[r][c])
                    .sum();
                assert!(
                    (y[a][b] - want).abs() < 1e-12,
                    "({a}, {b}): {} {want}",
                    y[a][b]
                );
            }
        }
    }

    #[test]
    fn the_table_holds_each_filters_transform_in_rows_of_output_channels() {
        // Two groups of 2 -> 3 channels, OIHW, values 1, 2, ...
        let o = Conv2dOptions {
            groups: 2,
            filter_layout: Conv2dFilterLayout::Oihw,
            ..Conv2dOptions::new()
        };
        let shape = [6, 2, 3, 3];
        let values: Vec<f32> = (1..=108).map(|v| v as f32).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let table = Winograd::table(&bytes, DataType::Float32, &o, shape);
        let rows = 16 + 2;
        assert_eq!(table.len(), 2 * 16 * rows * 64);
        assert_eq!(Winograd::table_bytes(2, 2, 3), 4 * table.len() as u64);
        for (g, m, k) in [(0, 0, 0), (1, 2, 1), (0, 1, 1)] {
            let f = |r: usize, c: usize| f64::from(values[((g * 3 + m) * 2 + k) * 9 + r * 3 + c]);
            let u = transform_filter([0, 1, 2].map(|r| [0, 1, 2].map(|c| f(r, c))));
            for xi in 0..16 {
                let got = f32::from_bits(table[((g * 16 + xi) * rows + k) * 64 + m]);
                assert_eq!(got, u[xi / 4][xi % 4] as f32, "g {g} m {m} k {k} xi {xi}");
            }
        }
        // Zero past the group's outputs and past its input channels.
        assert_eq!(table[3], 0);
        assert!(table[(2 * 64)..(rows * 64)].iter().all(|&v| v == 0));
    }

    #[test]
    fn it_takes_3x3_at_stride_1_with_enough_channels_and_workgroups() {
        let o = Conv2dOptions::new();
        let take = |k, icg, ocg, size| {
            Winograd::choose((o.strides, o.dilations, o.groups), k, icg, ocg, size).is_some()
        };
        assert!(take([3, 3], 64, 64, [512, 512]));
        assert!(take([3, 3], 64, 64, [540, 960]));
        // 12 of 16 reduction rows and 48 of 64 columns in use: taken.
        assert!(take([3, 3], 12, 48, [512, 512]));
        // ESRGAN-slim's 64 -> 32 and RGB head: the GEMM keeps them.
        assert!(!take([3, 3], 64, 32, [540, 960]));
        assert!(!take([3, 3], 3, 64, [540, 960]));
        assert!(!take([5, 5], 64, 64, [512, 512]));
        let strided = Conv2dOptions {
            strides: [2, 2],
            ..Conv2dOptions::new()
        };
        assert!(Winograd::choose(
            (strided.strides, strided.dilations, strided.groups),
            [3, 3],
            64,
            64,
            [512, 512]
        )
        .is_none());
        // 64 x 128 outputs: 8 x 8 blocks of 4 x 8 tiles, under 132.
        assert!(!take([3, 3], 64, 64, [64, 128]));
        // tests/ml/ops_spatial.rs's shapes: 96 x 176, 12 x 11 = 132
        // blocks; 97 x 181, 13 x 12; two groups of 64 x 132, 2 x 8 x 9; 98
        // x 178 (valid), 13 x 12 x 2 channel tiles.
        assert!(take([3, 3], 16, 64, [96, 176]));
        assert!(take([3, 3], 12, 48, [97, 181]));
        let two = Conv2dOptions {
            groups: 2,
            ..Conv2dOptions::new()
        };
        assert!(Winograd::choose(
            (two.strides, two.dilations, two.groups),
            [3, 3],
            32,
            64,
            [64, 132]
        )
        .is_some());
        assert!(Winograd::choose(
            (o.strides, o.dilations, o.groups),
            [3, 3],
            32,
            64,
            [64, 132]
        )
        .is_none());
        assert!(take([3, 3], 24, 96, [98, 178]));
        // And its NCHW ones: 97 x 181; 95 x 176, 12 x 11.
        assert!(take([3, 3], 24, 64, [97, 181]));
        assert!(take([3, 3], 16, 112, [95, 176]));
    }
}
