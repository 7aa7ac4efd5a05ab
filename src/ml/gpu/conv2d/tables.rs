//! Constant filters rearranged at build into the tables the conv2d kernels
//! read instead of the filter.

use super::params::filter_strides;
use crate::ml::ops::Conv2dOptions;
use crate::ml::shape::conv_filter_ochw;
use crate::ml::types::DataType;

/// A filter (`bytes` of `es`-byte values, in `o`'s filter layout) as the
/// kernels with a pre-transposed filter read it (`conv2d_gemm_vec.wgsl`,
/// and the tensor-core kernels through [`blocked_filter`]): for group g, tap
/// t = ky * kw + kx and input channel ci, at row g * rows + t * icg + ci, the
/// group's output channels in a row of `ocp` (zero past ocg, and rows past
/// taps * icg zero), packed little-endian into words.
pub(super) fn transposed_filter(
    bytes: &[u8],
    es: usize,
    o: &Conv2dOptions,
    shape: [usize; 4],
    rows: usize,
    ocp: usize,
) -> Vec<u32> {
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
    let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
    let ocg = oc / o.groups;
    let taps = kh * kw;
    let mut table = vec![0u8; (o.groups * rows * ocp * es).next_multiple_of(4)];
    for g in 0..o.groups {
        for t in 0..taps {
            let (ky, kx) = (t / kw, t % kw);
            for ci in 0..icg {
                let row = (g * rows + t * icg + ci) * ocp;
                for m in 0..ocg {
                    let at = es * ((g * ocg + m) * fs[0] + ci * fs[1] + ky * fs[2] + kx * fs[3]);
                    table[es * (row + m)..es * (row + m + 1)].copy_from_slice(&bytes[at..at + es]);
                }
            }
        }
    }
    table
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// A filter (float16 `bytes` in `o`'s filter layout) as the tensor-core
/// kernels read it: for group g, tap t = ky * kw + kx and input channel ci
/// (input channels padded with zeros to `icp`, a multiple of 16), a row of
/// the group's output channels padded with zeros to `ocp` (a multiple of
/// 16), as in [`transposed_filter`]; then cut into 16 x 16 blocks, each
/// block's 256 halves contiguous (row-major), so that a cooperative load of
/// B reads one contiguous run instead of 16 rows `ocp` apart. Block
/// (t, ci / 16, m / 16) of group g starts at half
/// ((g * taps + t) * icp + ci) * ocp + 16 m.
pub(super) fn blocked_filter(
    bytes: &[u8],
    o: &Conv2dOptions,
    shape: [usize; 4],
    icp: usize,
    ocp: usize,
) -> Vec<u32> {
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
    let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
    let ocg = oc / o.groups;
    debug_assert!(icp % 16 == 0 && icp >= icg && ocp % 16 == 0 && ocp >= ocg);
    let taps = kh * kw;
    let mut halves = vec![0u16; o.groups * taps * icp * ocp];
    for g in 0..o.groups {
        for t in 0..taps {
            for ci in 0..icg {
                // The row of (g, t, ci), and where its 16-row block starts.
                let r = (g * taps + t) * icp + ci;
                for m in 0..ocg {
                    let at = 2
                        * ((g * ocg + m) * fs[0]
                            + ci * fs[1]
                            + (t / kw) * fs[2]
                            + (t % kw) * fs[3]);
                    let block = (r / 16) * (ocp / 16) + m / 16;
                    halves[block * 256 + (r % 16) * 16 + m % 16] =
                        u16::from_le_bytes([bytes[at], bytes[at + 1]]);
                }
            }
        }
    }
    halves
        .chunks_exact(2)
        .map(|h| u32::from(h[0]) | u32::from(h[1]) << 16)
        .collect()
}

/// Element `at` of a float16 or float32 constant's little-endian `bytes`,
/// as float32 (the filter tables the lowering builds are float32).
pub(super) fn float_at(bytes: &[u8], dt: DataType, at: usize) -> f32 {
    match dt {
        DataType::Float16 => half::f16::from_le_bytes([bytes[2 * at], bytes[2 * at + 1]]).to_f32(),
        _ => f32::from_le_bytes([
            bytes[4 * at],
            bytes[4 * at + 1],
            bytes[4 * at + 2],
            bytes[4 * at + 3],
        ]),
    }
}

/// A filter (`bytes` of `dt`, in `o`'s filter layout, one group) as
/// `conv2d_narrow.wgsl` reads it: for tap t = ky * kw + kx and input
/// channel ci a row of float32 values holding the output channels, rounded
/// up to 4 with zeros. Returns the table (float32 bits) and the row's
/// length.
pub(super) fn narrow_filter(
    bytes: &[u8],
    dt: DataType,
    o: &Conv2dOptions,
    shape: [usize; 4],
) -> (Vec<u32>, usize) {
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
    let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
    let row = oc.next_multiple_of(4);
    let value = |at: usize| float_at(bytes, dt, at);
    let mut t = vec![0u32; kh * kw * icg * row];
    for ky in 0..kh {
        for kx in 0..kw {
            for ci in 0..icg {
                let start = ((ky * kw + kx) * icg + ci) * row;
                for m in 0..oc {
                    let at = m * fs[0] + ci * fs[1] + ky * fs[2] + kx * fs[3];
                    t[start + m] = value(at).to_bits();
                }
            }
        }
    }
    (t, row)
}

#[cfg(test)]
mod tests {
    use super::{blocked_filter, transposed_filter};
    use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions};

    /// Each filter value is its own OIHW index; the table must hold, for
    /// group g, tap t and input channel ci, the group's output channels in
    /// a row of 64, zero past them, and zero rows past the reduction: in
    /// float16 (the tensor-core kernel's, rows exactly the reduction) and
    /// float32 (conv2d_gemm_vec.wgsl's, rows padded to its 8-row slice).
    #[test]
    fn the_transposed_filter_is_rows_of_output_channels_per_tap_and_input_channel() {
        let (oc, icg, k, groups): (usize, usize, usize, usize) = (6, 2, 3, 2);
        let ocg = oc / groups;
        let kdim = k * k * icg;
        for (es, rows) in [(2, kdim), (4, kdim.next_multiple_of(8))] {
            for layout in [Conv2dFilterLayout::Oihw, Conv2dFilterLayout::Ohwi] {
                let shape = match layout {
                    Conv2dFilterLayout::Oihw => [oc, icg, k, k],
                    _ => [oc, k, k, icg],
                };
                let value =
                    |o: usize, i: usize, y: usize, x: usize| ((o * icg + i) * k + y) * k + x;
                let mut bytes = vec![0u8; es * oc * icg * k * k];
                for o in 0..oc {
                    for i in 0..icg {
                        for y in 0..k {
                            for x in 0..k {
                                let at = es
                                    * match layout {
                                        Conv2dFilterLayout::Oihw => value(o, i, y, x),
                                        _ => ((o * k + y) * k + x) * icg + i,
                                    };
                                let v = value(o, i, y, x) as f32;
                                if es == 2 {
                                    let h = half::f16::from_f32(v).to_le_bytes();
                                    bytes[at..at + 2].copy_from_slice(&h);
                                } else {
                                    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
                                }
                            }
                        }
                    }
                }
                let o = Conv2dOptions {
                    groups,
                    filter_layout: layout,
                    ..Conv2dOptions::new()
                };
                let words = transposed_filter(&bytes, es, &o, shape, rows, 64);
                let values: Vec<f32> = if es == 2 {
                    words
                        .iter()
                        .flat_map(|w| [*w as u16, (*w >> 16) as u16])
                        .map(|h| half::f16::from_bits(h).to_f32())
                        .collect()
                } else {
                    words.iter().map(|w| f32::from_bits(*w)).collect()
                };
                assert_eq!(values.len(), groups * rows * 64);
                for g in 0..groups {
                    for row in 0..rows {
                        let (t, ci) = (row / icg, row % icg);
                        for m in 0..64 {
                            let got = values[(g * rows + row) * 64 + m];
                            let want = if m < ocg && row < kdim {
                                value(g * ocg + m, ci, t / k, t % k) as f32
                            } else {
                                0.0
                            };
                            assert_eq!(got, want, "{es} {layout:?} g{g} row{row} m{m}");
                        }
                    }
                }
            }
        }
    }

    /// Each block of the tensor-core table holds the rows-of-outputs
    /// table's 16 x 16 block, row-major, blocks in (group, row block,
    /// column block) order; input channels past a multiple of 16 are zero
    /// rows.
    #[test]
    fn the_blocked_filter_holds_contiguous_16x16_blocks_of_the_transposed_one() {
        let k = 3usize;
        for (oc, icg, groups, ocp) in [(40usize, 32usize, 2usize, 32usize), (64, 3, 1, 64)] {
            let bytes: Vec<u8> = (0..oc * icg * k * k)
                .flat_map(|i| half::f16::from_f32((i % 2039 + 1) as f32).to_le_bytes())
                .collect();
            let o = Conv2dOptions {
                groups,
                ..Conv2dOptions::new()
            };
            let shape = [oc, icg, k, k];
            let icp = icg.next_multiple_of(16);
            let halves = |words: Vec<u32>| -> Vec<u16> {
                words
                    .iter()
                    .flat_map(|w| [*w as u16, (*w >> 16) as u16])
                    .collect()
            };
            // The rows-of-outputs table with the same padded rows.
            let plain = halves(transposed_filter(&bytes, 2, &o, shape, k * k * icg, ocp));
            let blocked = halves(blocked_filter(&bytes, &o, shape, icp, ocp));
            assert_eq!(blocked.len(), groups * k * k * icp * ocp);
            for g in 0..groups {
                for t in 0..k * k {
                    for ci in 0..icp {
                        let r = (g * k * k + t) * icp + ci;
                        for m in 0..ocp {
                            let at =
                                ((r / 16) * (ocp / 16) + m / 16) * 256 + (r % 16) * 16 + m % 16;
                            let want = match ci < icg {
                                true => plain[(g * k * k * icg + t * icg + ci) * ocp + m],
                                false => 0,
                            };
                            assert_eq!(blocked[at], want, "{icg}: row {r} column {m}");
                        }
                    }
                }
            }
            // The kernels' address of block (t, ci / 16, m / 16) of group g.
            let (g, t, ci, m) = (groups - 1, 4, 0, 16);
            let at = ((g * k * k + t) * icp + ci) * ocp + 16 * m;
            assert_eq!(
                blocked[at],
                plain[(g * k * k * icg + t * icg + ci) * ocp + m]
            );
        }
    }
}
