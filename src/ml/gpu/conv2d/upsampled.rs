//! `conv2d_upsampled.wgsl`: a conv2d reading its input through a fused
//! nearest upsample, as one small convolution of the input per output
//! phase (see the shader's header; choose.rs decides when it is chosen).
//!
//! Why (ESRGAN-slim x2's last conv, 3x3 12 -> 3 at 1920x1080 from 12
//! channels at 960x540, on an H100): the narrow kernel took 0.176 ms in
//! float16 (0.19 in float32), one invocation per output pixel walking 9
//! taps x 12 channels. The output's 2x2 phases each reach 2x2 input pixels,
//! so the same outputs take 4 taps instead of 9, and one invocation per
//! input pixel loads its 3x3 window once for the 4 output pixels.

use crate::gpu::Specialization;
use crate::ml::ops::Conv2dOptions;
use crate::ml::shape::conv_filter_ochw;
use crate::ml::types::DataType;

use super::super::lower::{grid, Lowering};
use super::params::filter_strides;
use super::params::{bindings_after, shape4, table_inputs, Conv, WG};
use super::tables::float_at;
use crate::error::Result;

/// Output channels (one group) up to which it is chosen: the narrow
/// kernel's, where fusion leaves upsamples (`ml::fuse::NARROW_MAX_OUTPUTS`).
const MAX_OUTPUTS: usize = crate::ml::fuse::NARROW_MAX_OUTPUTS;
/// The most phases times window pixels: the invocation keeps its window
/// and every phase's sums in registers.
const MAX_WINDOW: usize = 16;
const MAX_PHASES: usize = 16;

/// `floor(v / d)` for a positive `d`.
fn floor_div(v: isize, d: isize) -> isize {
    v.div_euclid(d)
}

/// The kernel's shape for a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Upsampled {
    /// Upsample factors (rows, columns).
    up: [usize; 2],
    /// Filter size and top/left padding.
    kernel: [usize; 2],
    pad: [usize; 2],
    /// The window: first input row and column relative to the output's
    /// input pixel, and its extent.
    first: [isize; 2],
    extent: [usize; 2],
    ocg: usize,
}

impl Upsampled {
    /// The kernel for a conv2d of `strides`, `dilations`, `groups` and
    /// `padding` with a `kh` x `kw` filter over
    /// an input upsampled by `up`, `icg` input and `ocg` output channels,
    /// if it takes it: stride and dilation 1, one group of up to 8 outputs,
    /// NHWC in and out (`nhwc`) with channels in runs of 4, and a window
    /// and phase count that fit in registers. The caller checks a constant
    /// filter and float types.
    pub fn choose(
        (strides, dilations, groups): ([usize; 2], [usize; 2], usize),
        padding: [usize; 4],
        up: [usize; 2],
        [kh, kw]: [usize; 2],
        icg: usize,
        ocg: usize,
        nhwc: bool,
    ) -> Option<Upsampled> {
        let takes = strides == [1, 1]
            && dilations == [1, 1]
            && groups == 1
            && (1..=MAX_OUTPUTS).contains(&ocg)
            && icg % 4 == 0
            && nhwc
            && up[0] * up[1] <= MAX_PHASES;
        if !takes {
            return None;
        }
        let pad = [padding[0], padding[2]];
        let window = |s: usize, k: usize, p: usize| {
            let (s, k, p) = (s as isize, k as isize, p as isize);
            let first = floor_div(-p, s);
            let last = floor_div(s - 1 + k - 1 - p, s);
            (first, (last - first + 1) as usize)
        };
        let (fy, fh) = window(up[0], kh, pad[0]);
        let (fx, fw) = window(up[1], kw, pad[1]);
        (fh * fw <= MAX_WINDOW).then_some(Upsampled {
            up,
            kernel: [kh, kw],
            pad,
            first: [fy, fx],
            extent: [fh, fw],
            ocg,
        })
    }

    pub fn source() -> String {
        format!(
            "{}{}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_upsampled.wgsl")
        )
    }

    /// Invocations: one per input pixel of the grid that covers `images`
    /// outputs of `oh` x `ow`.
    pub fn invocations(self, images: usize, oh: usize, ow: usize) -> usize {
        images * oh.div_ceil(self.up[0]) * ow.div_ceil(self.up[1])
    }

    /// Each phase's window pixels, in the table's order: (phase, row and
    /// column in the window) for every input pixel some tap of the phase
    /// falls on.
    fn pairs(self) -> Vec<(usize, [usize; 2])> {
        let [sy, sx] = self.up.map(|s| s as isize);
        let span = |phase: isize, s: isize, k: usize, pad: usize, first: isize| {
            let lo = floor_div(phase - pad as isize, s) - first;
            let hi = floor_div(phase + k as isize - 1 - pad as isize, s) - first;
            lo as usize..=hi as usize
        };
        let mut pairs = Vec::new();
        for a in 0..sy {
            for b in 0..sx {
                for dy in span(a, sy, self.kernel[0], self.pad[0], self.first[0]) {
                    for dx in span(b, sx, self.kernel[1], self.pad[1], self.first[1]) {
                        pairs.push(((a * sx + b) as usize, [dy, dx]));
                    }
                }
            }
        }
        pairs
    }

    /// Its constants, what it generates (`window`, `accumulate` and `write`:
    /// conv2d_upsampled.wgsl's header), then `bindings` (x as vec4s, any
    /// bias, input scale and residual, y, and the table `wt` after them).
    pub fn spec(self, bindings: &str) -> Specialization {
        let [fh, fw] = self.extent;
        let ocg4 = self.ocg.div_ceil(4);
        let pairs = self.pairs();
        let mut window = format!(
            "fn window(q: Pixel, c4: u32, s: vec4<f32>) -> array<vec4<f32>, {}> {{\n    return array(\n",
            fh * fw
        );
        for dy in 0..fh {
            for dx in 0..fw {
                let (y, x) = (self.first[0] + dy as isize, self.first[1] + dx as isize);
                window += &format!("        load(q, {y}, {x}, c4, s),\n");
            }
        }
        window += "    );\n}\n";
        let mut accumulate = format!(
            "fn accumulate(t: u32, u: array<vec4<f32>, {}>, acc: ptr<function, array<vec4<f32>, ACC>>) {{\n",
            fh * fw
        );
        for (k, &(ph, [dy, dx])) in pairs.iter().enumerate() {
            for j in 0..ocg4 {
                accumulate += &format!(
                    "    (*acc)[{}] += mv(u[{}], t + {}u, {j}u);\n",
                    ph * ocg4 + j,
                    dy * fw + dx,
                    k * 4 * ocg4
                );
            }
        }
        accumulate += "}\n";
        let mut write = "fn write(q: Pixel, acc: array<vec4<f32>, ACC>) {\n".to_string();
        for a in 0..self.up[0] {
            for b in 0..self.up[1] {
                let ph = a * self.up[1] + b;
                for m in 0..self.ocg {
                    write += &format!(
                        "    store(q, {a}u, {b}u, {m}u, acc[{}][{}]);\n",
                        ph * ocg4 + m / 4,
                        m % 4
                    );
                }
            }
        }
        write += "}\n";
        Specialization::new()
            .u32("SY", self.up[0] as u32)
            .u32("SX", self.up[1] as u32)
            .u32("OCG4", ocg4 as u32)
            .u32("PAIRS", pairs.len() as u32)
            .u32("ACC", (self.up[0] * self.up[1] * ocg4) as u32)
            .code("@group(0) @binding(1) var<storage, read> x: array<vec4<TI>>;")
            .code(bindings)
            .code(&window)
            .code(&accumulate)
            .code(&write)
    }

    /// The filter (`bytes` of `dt` in `o`'s layout) as the table: per
    /// channel run, (phase, window pixel) pair and channel of the run, the
    /// output channels (padded to 4) as float32 bits, each the sum of the
    /// weights of the phase's taps that fall on that window pixel (summed
    /// in float64, rounded once).
    pub fn table(
        self,
        bytes: &[u8],
        dt: DataType,
        o: &Conv2dOptions,
        shape: [usize; 4],
    ) -> Vec<u32> {
        let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
        let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
        let value = |at: usize| f64::from(float_at(bytes, dt, at));
        let [sy, sx] = self.up.map(|s| s as isize);
        let pairs = self.pairs();
        let row = oc.next_multiple_of(4);
        let mut sums = vec![0f64; icg * pairs.len() * row];
        for (k, &(ph, [dy, dx])) in pairs.iter().enumerate() {
            let (a, b) = ((ph / self.up[1]) as isize, (ph % self.up[1]) as isize);
            for ky in 0..kh {
                let ty = floor_div(a + ky as isize - self.pad[0] as isize, sy) - self.first[0];
                for kx in 0..kw {
                    let tx = floor_div(b + kx as isize - self.pad[1] as isize, sx) - self.first[1];
                    if [ty, tx] != [dy as isize, dx as isize] {
                        continue;
                    }
                    for ci in 0..icg {
                        let start = ((ci / 4 * pairs.len() + k) * 4 + ci % 4) * row;
                        for m in 0..oc {
                            let at = m * fs[0] + ci * fs[1] + ky * fs[2] + kx * fs[3];
                            sums[start + m] += value(at);
                        }
                    }
                }
            }
        }
        sums.into_iter().map(|v| (v as f32).to_bits()).collect()
    }
}

/// The kernel `phases` for `c` (a constant filter).
pub(super) fn emit(l: &mut Lowering, c: &Conv, phases: Upsampled) -> Result<()> {
    let bytes = c.filter.unwrap_or_default();
    let table = phases.table(bytes, c.fd.data_type, c.o, shape4(&c.fd.shape));
    // The table follows the output (no filter binding).
    let (bindings, next) = bindings_after(2, c.has_bias, c.has_scale, c.has_residual, "T");
    let bindings =
        format!("{bindings}@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;\n");
    let workgroups = grid(phases.invocations(c.images(), c.oh, c.ow), WG);
    l.kernel(c.kernel(
        &Upsampled::source(),
        phases.spec(&bindings),
        &c.params,
        Some(table),
        table_inputs(c.node),
        (workgroups, WG),
    ))
}

#[cfg(test)]
mod tests {
    use super::Upsampled;

    /// [`Upsampled::choose`] for a conv2d of `o`.
    fn choose_for(
        o: &Conv2dOptions,
        up: [usize; 2],
        k: [usize; 2],
        icg: usize,
        ocg: usize,
        nhwc: bool,
    ) -> Option<Upsampled> {
        Upsampled::choose(
            (o.strides, o.dilations, o.groups),
            o.padding,
            up,
            k,
            icg,
            ocg,
            nhwc,
        )
    }
    use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions, InputLayout};
    use crate::ml::types::DataType;

    fn options(padding: [usize; 4]) -> Conv2dOptions {
        Conv2dOptions {
            padding,
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Oihw,
            ..Conv2dOptions::new()
        }
    }

    #[test]
    fn each_phase_reaches_the_input_pixels_its_taps_fall_on() {
        // x2, 3x3 same: rows -1..=1 around the input pixel.
        let u = choose_for(&options([1; 4]), [2, 2], [3, 3], 12, 3, true).unwrap();
        assert_eq!((u.first, u.extent), ([-1, -1], [3, 3]));
        // x4, 3x3 same: still -1..=1.
        let u = choose_for(&options([1; 4]), [4, 4], [3, 3], 48, 3, true).unwrap();
        assert_eq!((u.first, u.extent), ([-1, -1], [3, 3]));
        // x2, 5x5 valid: rows 0..=2.
        let u = choose_for(&options([0; 4]), [2, 1], [5, 5], 4, 8, true).unwrap();
        assert_eq!((u.first, u.extent), ([0, 0], [3, 5]));
        // Not: strides, 9 outputs, channels not in runs of 4, NCHW, a
        // window past 16 pixels.
        let strided = Conv2dOptions {
            strides: [2, 2],
            ..options([1; 4])
        };
        assert_eq!(choose_for(&strided, [2, 2], [3, 3], 12, 3, true), None);
        assert_eq!(
            choose_for(&options([1; 4]), [2, 2], [3, 3], 12, 9, true),
            None
        );
        assert_eq!(
            choose_for(&options([1; 4]), [2, 2], [3, 3], 6, 3, true),
            None
        );
        assert_eq!(
            choose_for(&options([1; 4]), [2, 2], [3, 3], 12, 3, false),
            None
        );
        assert_eq!(
            choose_for(&options([3; 4]), [2, 2], [7, 7], 4, 3, true),
            None
        );
    }

    /// x2 3x3 same, one output, filter values 1..=9 (row-major) on input
    /// channel 0: phase (0, 0) sums tap row 0 alone onto input row -1 and
    /// rows 1 and 2 onto row 0, the same along columns; phase (1, 1) rows
    /// 0 and 1 onto row 0 and row 2 onto row 1.
    #[test]
    fn the_table_sums_the_taps_of_each_phase() {
        let o = options([1; 4]);
        let u = choose_for(&o, [2, 2], [3, 3], 4, 1, true).unwrap();
        let pairs = u.pairs();
        // Four phases of 2 x 2 window pixels.
        assert_eq!(pairs.len(), 16);
        assert_eq!(
            &pairs[..4],
            &[(0, [0, 0]), (0, [0, 1]), (0, [1, 0]), (0, [1, 1])]
        );
        assert_eq!(
            &pairs[12..],
            &[(3, [1, 1]), (3, [1, 2]), (3, [2, 1]), (3, [2, 2])]
        );
        let mut filter = [0f32; 4 * 9];
        for (t, f) in filter.iter_mut().take(9).enumerate() {
            *f = (t + 1) as f32;
        }
        let bytes: Vec<u8> = filter.iter().flat_map(|v| v.to_le_bytes()).collect();
        let table = u.table(&bytes, DataType::Float32, &o, [1, 4, 3, 3]);
        // Channel run 0, pair k, channel 0 of the run, output 0.
        let at = |k: usize| f32::from_bits(table[k * 4 * 4]);
        assert_eq!(at(0), 1.0);
        assert_eq!(at(1), 2.0 + 3.0);
        assert_eq!(at(2), 4.0 + 7.0);
        assert_eq!(at(3), 5.0 + 6.0 + 8.0 + 9.0);
        assert_eq!(at(12), 1.0 + 2.0 + 4.0 + 5.0);
        assert_eq!(at(15), 9.0);
        // Input channel 1 (row 1 of each entry) is all zero.
        assert!((0..16).all(|k| table[k * 16 + 4] == 0));
    }
}
