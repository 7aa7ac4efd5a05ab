//! conv2d and convTranspose2d, computed in NHWC (channels innermost) on the
//! SGEMM of `sgemm.rs`: regular convolutions as im2col (1x1 ones straight on
//! the input), depthwise ones as a loop over channels, convTranspose2d as a
//! GEMM into per-pixel columns gathered onto the output (col2im). Inputs in
//! NCHW are permuted first and the result permuted back.

use multiversion::multiversion;
use rayon::prelude::*;

use super::epilogue::Epilogue;
use super::sgemm::{sgemm, Mat, MatMut};
use super::Values;
use crate::ml::ops::{Conv2dOptions, ConvTranspose2dOptions, InputLayout};
use crate::ml::shape::{conv_filter_ochw, conv_transpose_filter_iohw, nchw};
use crate::ml::types::OperandDescriptor;

const NHWC_TO_NCHW: [usize; 4] = [0, 3, 1, 2];
const NCHW_TO_NHWC: [usize; 4] = [0, 2, 3, 1];

/// `src` of 4-D `shape` with its axes reordered: axis k of the result is
/// axis `order[k]` of the source.
fn permute4(src: &[f32], shape: [usize; 4], order: [usize; 4]) -> Vec<f32> {
    let st = [
        shape[1] * shape[2] * shape[3],
        shape[2] * shape[3],
        shape[3],
        1,
    ];
    let os = order.map(|a| shape[a]);
    let ost = order.map(|a| st[a]);
    let mut dst = vec![0.0f32; src.len()];
    let inner = os[2] * os[3];
    if inner == 0 {
        return dst;
    }
    dst.par_chunks_mut(inner)
        .enumerate()
        .for_each(|(i01, plane)| {
            let base = (i01 / os[1]) * ost[0] + (i01 % os[1]) * ost[1];
            for (i2, row) in plane.chunks_exact_mut(os[3]).enumerate() {
                let base = base + i2 * ost[2];
                for (i3, v) in row.iter_mut().enumerate() {
                    *v = src[base + i3 * ost[3]];
                }
            }
        });
    dst
}

pub(super) fn shape4(d: &OperandDescriptor) -> [usize; 4] {
    [d.shape[0], d.shape[1], d.shape[2], d.shape[3]]
}

/// The input as NCHW values.
pub(crate) fn to_nchw(arg: (&Values, &OperandDescriptor), layout: InputLayout) -> Vec<f32> {
    match layout {
        InputLayout::Nchw => arg.0.f32().to_vec(),
        InputLayout::Nhwc => permute4(arg.0.f32(), shape4(arg.1), NHWC_TO_NCHW),
    }
}

/// NCHW values of shape `nchw` back into the requested layout.
pub(crate) fn from_nchw(v: Vec<f32>, shape: [usize; 4], layout: InputLayout) -> Values {
    match layout {
        InputLayout::Nchw => Values::F32(v),
        InputLayout::Nhwc => Values::F32(permute4(&v, shape, NCHW_TO_NHWC)),
    }
}

/// The input as NHWC values, borrowed when it already is.
pub(super) fn to_nhwc<'a>(
    arg: (&'a Values, &OperandDescriptor),
    layout: InputLayout,
) -> std::borrow::Cow<'a, [f32]> {
    match layout {
        InputLayout::Nhwc => std::borrow::Cow::Borrowed(arg.0.f32()),
        InputLayout::Nchw => permute4(arg.0.f32(), shape4(arg.1), NCHW_TO_NHWC).into(),
    }
}

/// NHWC values of shape `nhwc` into the requested layout.
pub(super) fn from_nhwc(v: Vec<f32>, shape: [usize; 4], layout: InputLayout) -> Values {
    match layout {
        InputLayout::Nhwc => Values::F32(v),
        InputLayout::Nchw => Values::F32(permute4(&v, shape, NHWC_TO_NCHW)),
    }
}

/// Output rows per parallel task: enough tasks to balance the threads, each
/// with at most about `max_scratch` values of scratch (`row_scratch` a row).
fn rows_per_task(rows: usize, row_scratch: usize, max_scratch: usize) -> usize {
    let tasks = 4 * rayon::current_num_threads();
    let balanced = rows.div_ceil(tasks).max(1);
    match row_scratch {
        0 => balanced,
        s => balanced.min((max_scratch / s).max(1)),
    }
}

/// Output pixels start out as the bias (or zero): `dst` is `bias` repeated.
/// The filled prefix is doubled each step: a few large copies rather than
/// one small one per pixel.
fn fill_bias(dst: &mut [f32], bias: Option<&[f32]>) {
    let Some(b) = bias.filter(|b| !b.is_empty() && dst.len() >= b.len()) else {
        dst.fill(0.0);
        return;
    };
    dst[..b.len()].copy_from_slice(b);
    let mut filled = b.len();
    while filled < dst.len() {
        let n = filled.min(dst.len() - filled);
        dst.copy_within(..n, filled);
        filled += n;
    }
}

/// Sizes of a conv2d, with the input in NHWC and the filter in HWIO.
struct Conv {
    n: usize,
    h: usize,
    w: usize,
    c: usize,
    oh: usize,
    ow: usize,
    oc: usize,
    kh: usize,
    kw: usize,
    icg: usize,
    groups: usize,
    strides: [usize; 2],
    dilations: [usize; 2],
    /// Padding at the top and at the left.
    pad: [usize; 2],
}

impl Conv {
    /// Sizes in NHWC; `padding` as WebNN gives it (top, bottom, left, right).
    fn new(
        [n, h, w, c]: [usize; 4],
        [oh, ow, oc]: [usize; 3],
        [kh, kw]: [usize; 2],
        groups: usize,
        strides: [usize; 2],
        dilations: [usize; 2],
        padding: [usize; 4],
    ) -> Conv {
        Conv {
            n,
            h,
            w,
            c,
            oh,
            ow,
            oc,
            kh,
            kw,
            icg: c / groups,
            groups,
            strides,
            dilations,
            pad: [padding[0], padding[2]],
        }
    }

    /// The input row read by output row `oy` through filter row `ky`.
    fn iy(&self, oy: usize, ky: usize) -> Option<usize> {
        window_tap(
            oy,
            ky,
            self.strides[0],
            self.dilations[0],
            self.pad[0],
            self.h,
        )
    }

    /// The input column read by output column `ox` through filter column `kx`.
    fn ix(&self, ox: usize, kx: usize) -> Option<usize> {
        window_tap(
            ox,
            kx,
            self.strides[1],
            self.dilations[1],
            self.pad[1],
            self.w,
        )
    }
}

/// Along one axis of a sliding window (convolution or pooling): the input
/// coordinate that output coordinate `out` reads through window tap `k`,
/// `None` where it falls in the padding.
pub(super) fn window_tap(
    out: usize,
    k: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    len: usize,
) -> Option<usize> {
    (out * stride + k * dilation)
        .checked_sub(pad)
        .filter(|&i| i < len)
}

pub(crate) fn conv2d(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    o: &Conv2dOptions,
    ep: Epilogue,
) -> Values {
    use crate::ml::ops::Conv2dFilterLayout::*;
    let [n, c, h, w] = nchw(o.input_layout, shape4(args[0].1));
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape4(args[1].1));
    let [_, _, oh, ow] = nchw(o.input_layout, shape4(out));
    let x = to_nhwc(args[0], o.input_layout);
    // The filter as HWIO: [kh][kw][in channel of the group][out channel].
    let order = match o.filter_layout {
        Oihw => [2, 3, 1, 0],
        Hwio => [0, 1, 2, 3],
        Ohwi => [1, 2, 3, 0],
        Ihwo => [1, 2, 0, 3],
    };
    let f = permute4(args[1].0.f32(), shape4(args[1].1), order);
    let bias = args.get(2).map(|b| b.0.f32());
    let cv = Conv::new(
        [n, h, w, c],
        [oh, ow, oc],
        [kh, kw],
        o.groups,
        o.strides,
        o.dilations,
        o.padding,
    );
    let mut y = vec![0.0f32; n * oh * ow * oc];
    if y.is_empty() {
        return from_nhwc(y, [n, oh, ow, oc], o.input_layout);
    }
    if icg == 1 && o.groups == c {
        depthwise(&cv, &x, &f, bias, &mut y, ep);
    } else {
        gemm_conv(&cv, &x, &f, bias, &mut y, ep);
    }
    from_nhwc(y, [n, oh, ow, oc], o.input_layout)
}

/// Depthwise conv2d (one input channel per group, `oc / c` outputs each):
/// per output pixel, a sum over the window of channel vectors.
fn depthwise(cv: &Conv, x: &[f32], f: &[f32], bias: Option<&[f32]>, y: &mut [f32], ep: Epilogue) {
    let streaming = cv.strides[1] == 1 && cv.oc == cv.c;
    // Stride 1 along x: each filter tap scales a contiguous span of an input
    // row by the same channel vector, so the filter is laid out once per tap
    // repeated across a whole output row, and every tap becomes a long,
    // branch-free multiply-add over the row.
    let mut repeated = Vec::new();
    if streaming {
        repeated.resize(f.len() * cv.ow, 0.0);
        for (row, tap) in repeated
            .chunks_exact_mut(cv.ow * cv.oc)
            .zip(f.chunks_exact(cv.oc))
        {
            fill_bias(row, Some(tap));
        }
    }
    y.par_chunks_mut(cv.ow * cv.oc)
        .enumerate()
        .for_each(|(row, dst)| {
            fill_bias(dst, bias);
            if streaming {
                depthwise_row_streaming(cv, x, &repeated, row, dst);
            } else {
                depthwise_row(cv, x, f, row, dst);
            }
            ep.apply(dst);
        });
}

/// One output row of a depthwise conv2d with unit stride along x and one
/// output channel per input channel; `repeated` holds each tap's channel
/// vector repeated `ow` times.
#[multiversion(targets = "simd")]
fn depthwise_row_streaming(cv: &Conv, x: &[f32], repeated: &[f32], row: usize, dst: &mut [f32]) {
    let Conv {
        h,
        w,
        c,
        oh,
        ow,
        kh,
        kw,
        ..
    } = *cv;
    let (b, oy) = (row / oh, row % oh);
    for ky in 0..kh {
        let Some(iy) = cv.iy(oy, ky) else { continue };
        let src = &x[(b * h + iy) * w * c..][..w * c];
        for kx in 0..kw {
            // Output columns whose input column ox + kx·dilation − pad is inside.
            let shift = kx * cv.dilations[1];
            let lo = cv.pad[1].saturating_sub(shift);
            let hi = (w + cv.pad[1]).saturating_sub(shift).min(ow);
            if lo >= hi {
                continue;
            }
            let ix0 = lo + shift - cv.pad[1];
            let n = (hi - lo) * c;
            let out = &mut dst[lo * c..][..n];
            let xs = &src[ix0 * c..][..n];
            let fs = &repeated[(ky * kw + kx) * ow * c + lo * c..][..n];
            for ((o, &xv), &fv) in out.iter_mut().zip(xs).zip(fs) {
                *o += xv * fv;
            }
        }
    }
}

/// One output row of a depthwise conv2d, pixel by pixel (strided, or with
/// several output channels per input channel).
#[multiversion(targets = "simd")]
fn depthwise_row(cv: &Conv, x: &[f32], f: &[f32], row: usize, dst: &mut [f32]) {
    let Conv {
        h,
        w,
        c,
        oh,
        oc,
        kh,
        kw,
        ..
    } = *cv;
    let mult = oc / c;
    let (b, oy) = (row / oh, row % oh);
    for (ox, acc) in dst.chunks_exact_mut(oc).enumerate() {
        for ky in 0..kh {
            let Some(iy) = cv.iy(oy, ky) else { continue };
            for kx in 0..kw {
                let Some(ix) = cv.ix(ox, kx) else { continue };
                let xs = &x[((b * h + iy) * w + ix) * c..][..c];
                let fs = &f[(ky * kw + kx) * oc..][..oc];
                if mult == 1 {
                    for ((a, &xv), &fv) in acc.iter_mut().zip(xs).zip(fs) {
                        *a += xv * fv;
                    }
                } else {
                    for (m, (a, &fv)) in acc.iter_mut().zip(fs).enumerate() {
                        *a += xs[m / mult] * fv;
                    }
                }
            }
        }
    }
}

/// Grouped or regular conv2d as, per group, (output pixels x window) times
/// (window x output channels): the window is gathered (im2col) unless the
/// conv is 1x1 with unit strides and no padding, where it is the input.
fn gemm_conv(cv: &Conv, x: &[f32], f: &[f32], bias: Option<&[f32]>, y: &mut [f32], ep: Epilogue) {
    let Conv {
        h,
        w,
        c,
        oh,
        ow,
        oc,
        kh,
        kw,
        icg,
        groups,
        ..
    } = *cv;
    let ocg = oc / groups;
    let k = kh * kw * icg;
    let pointwise =
        kh == 1 && kw == 1 && cv.strides == [1, 1] && cv.pad == [0, 0] && (oh, ow) == (h, w);
    let rows = cv.n * oh;
    let per_task = rows_per_task(rows, if pointwise { 0 } else { ow * k }, 1 << 20);
    y.par_chunks_mut(per_task * ow * oc)
        .enumerate()
        .for_each(|(t, dst)| {
            let row0 = t * per_task;
            let pixels = dst.len() / oc;
            fill_bias(dst, bias);
            let mut col = Vec::new();
            for g in 0..groups {
                let a = if pointwise {
                    // Output pixel p reads input pixel p.
                    Mat {
                        data: x,
                        off: row0 * ow * c + g * icg,
                        rs: c,
                        cs: 1,
                    }
                } else {
                    col.clear();
                    col.resize(pixels * k, 0.0);
                    for (p, window) in col.chunks_exact_mut(k).enumerate() {
                        let (row, ox) = (row0 + p / ow, p % ow);
                        let (b, oy) = (row / oh, row % oh);
                        // Without groups or dilation, a window row is one
                        // contiguous run of the input wherever it lies inside.
                        let whole_rows = groups == 1
                            && cv.dilations[1] == 1
                            && cv.ix(ox, 0).is_some()
                            && cv.ix(ox, kw - 1).is_some();
                        for ky in 0..kh {
                            let Some(iy) = cv.iy(oy, ky) else { continue };
                            if whole_rows {
                                let ix = cv.ix(ox, 0).unwrap_or(0);
                                let src = ((b * h + iy) * w + ix) * c;
                                window[ky * kw * c..][..kw * c]
                                    .copy_from_slice(&x[src..][..kw * c]);
                                continue;
                            }
                            for kx in 0..kw {
                                let Some(ix) = cv.ix(ox, kx) else { continue };
                                let src = ((b * h + iy) * w + ix) * c + g * icg;
                                window[(ky * kw + kx) * icg..][..icg]
                                    .copy_from_slice(&x[src..][..icg]);
                            }
                        }
                    }
                    Mat {
                        data: &col,
                        off: 0,
                        rs: k,
                        cs: 1,
                    }
                };
                sgemm(
                    pixels,
                    k,
                    ocg,
                    1.0,
                    a,
                    Mat {
                        data: f,
                        off: g * ocg,
                        rs: oc,
                        cs: 1,
                    },
                    1.0,
                    MatMut {
                        data: dst,
                        off: g * ocg,
                        rs: oc,
                        cs: 1,
                    },
                );
            }
            ep.apply(dst);
        });
}

pub(crate) fn conv_transpose2d(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    o: &ConvTranspose2dOptions,
    ep: Epilogue,
) -> Values {
    use crate::ml::ops::ConvTranspose2dFilterLayout::*;
    let [n, c, h, w] = nchw(o.input_layout, shape4(args[0].1));
    let [_, ocg, kh, kw] = conv_transpose_filter_iohw(o.filter_layout, shape4(args[1].1));
    let [_, oc, oh, ow] = nchw(o.input_layout, shape4(out));
    let x = to_nhwc(args[0], o.input_layout);
    // The filter as IHWO: [in channel][kh][kw][out channel of the group].
    let order = match o.filter_layout {
        Iohw => [0, 2, 3, 1],
        Hwoi => [3, 0, 1, 2],
        Ohwi => [3, 1, 2, 0],
    };
    let f = permute4(args[1].0.f32(), shape4(args[1].1), order);
    let bias = args.get(2).map(|b| b.0.f32());
    let groups = o.groups;
    let icg = c / groups;
    let mut y = vec![0.0f32; n * oh * ow * oc];
    if y.is_empty() {
        return from_nhwc(y, [n, oh, ow, oc], o.input_layout);
    }
    let geom = Conv::new(
        [n, h, w, c],
        [oh, ow, oc],
        [kh, kw],
        groups,
        o.strides,
        o.dilations,
        o.padding,
    );
    if ocg < FEW_OUTPUT_CHANNELS {
        direct_conv_transpose(&geom, &x, &f, bias, &mut y, ep);
        return from_nhwc(y, [n, oh, ow, oc], o.input_layout);
    }
    // cols[input pixel][group][ky][kx][out channel of the group]: what each
    // input pixel scatters onto the output through each filter tap.
    let taps = kh * kw * ocg;
    let row_len = groups * taps;
    let mut cols = vec![0.0f32; n * h * w * row_len];
    let per_task = rows_per_task(n * h, 0, 0);
    if !cols.is_empty() {
        cols.par_chunks_mut(per_task * w * row_len)
            .enumerate()
            .for_each(|(t, dst)| {
                let pixels = dst.len() / row_len;
                for g in 0..groups {
                    sgemm(
                        pixels,
                        icg,
                        taps,
                        1.0,
                        Mat {
                            data: &x,
                            off: t * per_task * w * c + g * icg,
                            rs: c,
                            cs: 1,
                        },
                        Mat {
                            data: &f,
                            off: g * icg * taps,
                            rs: taps,
                            cs: 1,
                        },
                        0.0,
                        MatMut {
                            data: dst,
                            off: g * taps,
                            rs: row_len,
                            cs: 1,
                        },
                    );
                }
            });
    }
    // Gather form: each output pixel sums the taps that land on it.
    gather_rows(&geom, &mut y, bias, ep, |b, (rows_from, cols_from), dst| {
        for (acc, cols_at) in dst.chunks_exact_mut(oc).zip(cols_from) {
            for &(ky, iy) in rows_from {
                for &(kx, ix) in cols_at {
                    let p = (b * h + iy) * w + ix;
                    let tap = ky * kw + kx;
                    for (g, acc) in acc.chunks_exact_mut(ocg).enumerate() {
                        let src = &cols[p * row_len + g * taps + tap * ocg..][..ocg];
                        for (a, &v) in acc.iter_mut().zip(src) {
                            *a += v;
                        }
                    }
                }
            }
        }
    });
    from_nhwc(y, [n, oh, ow, oc], o.input_layout)
}

/// A filter tap and the input coordinate it carries, along one axis.
type Source = (usize, usize);

impl Conv {
    /// For the convolution read as a convTranspose2d (`h`, `w` the input's
    /// size, `oh`, `ow` the output's): per output coordinate along one axis
    /// (0: rows, 1: columns), the (filter tap, input coordinate) pairs that
    /// scatter onto it.
    fn sources(&self, axis: usize) -> Vec<Vec<Source>> {
        let (out, k, len) = match axis {
            0 => (self.oh, self.kh, self.h),
            _ => (self.ow, self.kw, self.w),
        };
        let (pad, stride, dilation) = (self.pad[axis], self.strides[axis], self.dilations[axis]);
        (0..out)
            .map(|o| {
                (0..k)
                    .filter_map(|t| {
                        let at = (o + pad).checked_sub(t * dilation)?;
                        (at % stride == 0 && at / stride < len).then_some((t, at / stride))
                    })
                    .collect()
            })
            .collect()
    }
}

/// Below this many output channels per group, the GEMM into per-pixel
/// columns would be a sliver, so each output value is gathered directly as
/// dot products of input pixels with filter taps.
const FEW_OUTPUT_CHANNELS: usize = 8;

/// `f` is IHWO.
fn direct_conv_transpose(
    geom: &Conv,
    x: &[f32],
    f: &[f32],
    bias: Option<&[f32]>,
    y: &mut [f32],
    ep: Epilogue,
) {
    let Conv {
        h,
        w,
        c,
        icg,
        groups,
        ..
    } = *geom;
    let ocg = geom.oc / groups;
    let taps = geom.kh * geom.kw;
    // [group][tap][out channel][in channel]: each dot product reads a row.
    let mut rows = vec![0.0f32; groups * taps * ocg * icg];
    for (r, v) in rows.iter_mut().enumerate() {
        let (i, rest) = (r % icg, r / icg);
        let (o, rest) = (rest % ocg, rest / ocg);
        let (tap, g) = (rest % taps, rest / taps);
        *v = f[((g * icg + i) * taps + tap) * ocg + o];
    }
    gather_rows(geom, y, bias, ep, |b, from, dst| {
        let plane = &x[b * h * w * c..][..h * w * c];
        transpose_row_dots(plane, &rows, from, [w, c, groups, geom.kw], dst);
    });
}

/// Each output row of a convTranspose2d: the bias, then `row(image, taps,
/// row)` adds what lands on it (given, for that row, the taps along y and
/// per output column the taps along x), then the epilogue.
fn gather_rows(
    geom: &Conv,
    y: &mut [f32],
    bias: Option<&[f32]>,
    ep: Epilogue,
    row: impl Fn(usize, (&[Source], &[Vec<Source>]), &mut [f32]) + Sync,
) {
    let (rows_from, cols_from) = (geom.sources(0), geom.sources(1));
    y.par_chunks_mut(geom.ow * geom.oc)
        .enumerate()
        .for_each(|(r, dst)| {
            let (b, oy) = (r / geom.oh, r % geom.oh);
            fill_bias(dst, bias);
            row(b, (&rows_from[oy], &cols_from), dst);
            ep.apply(dst);
        });
}

/// One output row of a convTranspose2d as dot products: `rows` is the
/// filter as [group][tap][out channel][in channel], `plane` one input image.
#[multiversion(targets = "simd")]
fn transpose_row_dots(
    plane: &[f32],
    rows: &[f32],
    (rows_from, cols_from): (&[Source], &[Vec<Source>]),
    [w, c, groups, kw]: [usize; 4],
    dst: &mut [f32],
) {
    let oc = dst.len() / cols_from.len();
    let (icg, ocg) = (c / groups, oc / groups);
    let taps = rows.len() / (groups * ocg * icg);
    for (acc, cols) in dst.chunks_exact_mut(oc).zip(cols_from) {
        for &(ky, iy) in rows_from {
            for &(kx, ix) in cols {
                let xs = &plane[(iy * w + ix) * c..][..c];
                let tap = ky * kw + kx;
                for (g, acc) in acc.chunks_exact_mut(ocg).enumerate() {
                    let xg = &xs[g * icg..][..icg];
                    let fs = &rows[(g * taps + tap) * ocg * icg..][..ocg * icg];
                    for (a, frow) in acc.iter_mut().zip(fs.chunks_exact(icg)) {
                        *a += dot(xg, frow);
                    }
                }
            }
        }
    }
}

/// A dot product in eight independent lanes, so it vectorises.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(p, q)| p * q)
        .sum();
    for (p, q) in ca.zip(cb) {
        for k in 0..8 {
            lanes[k] += p[k] * q[k];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    //! The GEMM kernels against direct sums over the window, on odd sizes,
    //! every layout, groups, strides, dilations and padding.

    use super::*;
    use crate::ml::cpu::test_values as values;
    use crate::ml::ops::{Conv2dFilterLayout, ConvTranspose2dFilterLayout};

    fn desc(shape: [usize; 4]) -> OperandDescriptor {
        OperandDescriptor::f32(shape.to_vec())
    }

    /// Direct conv2d in NCHW / OIHW.
    #[allow(clippy::too_many_arguments)]
    fn naive_conv(
        x: &[f32],
        [n, c, h, w]: [usize; 4],
        f: &[f32],
        [oc, icg, kh, kw]: [usize; 4],
        bias: &[f32],
        [oh, ow]: [usize; 2],
        o: &Conv2dOptions,
    ) -> Vec<f32> {
        let ocg = oc / o.groups;
        let mut y = vec![0.0; n * oc * oh * ow];
        for b in 0..n {
            for m in 0..oc {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut acc = bias[m];
                        for ci in 0..icg {
                            let cin = m / ocg * icg + ci;
                            for ky in 0..kh {
                                for kx in 0..kw {
                                    let iy = (oy * o.strides[0] + ky * o.dilations[0]) as isize
                                        - o.padding[0] as isize;
                                    let ix = (ox * o.strides[1] + kx * o.dilations[1]) as isize
                                        - o.padding[2] as isize;
                                    if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                                        continue;
                                    }
                                    acc += x[((b * c + cin) * h + iy as usize) * w + ix as usize]
                                        * f[((m * icg + ci) * kh + ky) * kw + kx];
                                }
                            }
                        }
                        y[((b * oc + m) * oh + oy) * ow + ox] = acc;
                    }
                }
            }
        }
        y
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                (x - y).abs() <= 1e-4 * (1.0 + y.abs()),
                "at {i}: {x} vs {y}"
            );
        }
    }

    #[test]
    fn conv2d_matches_direct_sum() {
        // (n, c, h, w, oc, groups, k, stride, dilation, padding)
        let cases = [
            (1, 3, 7, 5, 4, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            (2, 4, 6, 9, 6, 2, [3, 2], [2, 1], [1, 2], [0, 2, 1, 0]),
            (1, 5, 5, 5, 5, 5, [3, 3], [2, 2], [1, 1], [1, 1, 1, 1]),
            (1, 3, 6, 4, 6, 3, [2, 3], [1, 2], [2, 1], [1, 0, 0, 1]),
            (2, 6, 4, 3, 5, 1, [1, 1], [1, 1], [1, 1], [0, 0, 0, 0]),
            (1, 6, 5, 7, 5, 1, [1, 1], [2, 3], [1, 1], [1, 0, 0, 1]),
            (1, 2, 3, 3, 3, 1, [5, 5], [1, 1], [1, 1], [2, 2, 2, 2]),
            // Depthwise with unit stride along x (streamed rows), dilated,
            // padded unevenly, 11 channels (not a multiple of the lanes).
            (1, 11, 6, 13, 11, 11, [3, 3], [2, 1], [1, 2], [1, 2, 3, 1]),
            (2, 9, 5, 4, 9, 9, [5, 5], [1, 1], [1, 1], [2, 2, 2, 2]),
            // Depthwise with two outputs per channel (pixel by pixel).
            (1, 3, 5, 6, 6, 3, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            // A window wider than the padded input at the edges.
            (1, 4, 3, 2, 3, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
        ];
        let filter_layouts = [
            (Conv2dFilterLayout::Oihw, [0, 1, 2, 3]),
            (Conv2dFilterLayout::Hwio, [2, 3, 1, 0]),
            (Conv2dFilterLayout::Ohwi, [0, 2, 3, 1]),
            (Conv2dFilterLayout::Ihwo, [1, 2, 3, 0]),
        ];
        for (i, &(n, c, h, w, oc, groups, k, strides, dilations, padding)) in
            cases.iter().enumerate()
        {
            let icg = c / groups;
            let oh = (h + padding[0] + padding[1] - (k[0] - 1) * dilations[0] - 1) / strides[0] + 1;
            let ow = (w + padding[2] + padding[3] - (k[1] - 1) * dilations[1] - 1) / strides[1] + 1;
            let x = values(n * c * h * w, i as u32);
            let f = values(oc * icg * k[0] * k[1], 100 + i as u32);
            let bias = values(oc, 200 + i as u32);
            for (layout, to_layout) in [
                (InputLayout::Nchw, [0, 1, 2, 3]),
                (InputLayout::Nhwc, NCHW_TO_NHWC),
            ] {
                for &(fl, forder) in &filter_layouts {
                    if fl == Conv2dFilterLayout::Ihwo && icg != 1 {
                        continue;
                    }
                    let o = Conv2dOptions {
                        padding,
                        strides,
                        dilations,
                        groups,
                        input_layout: layout,
                        filter_layout: fl,
                    };
                    let want = naive_conv(
                        &x,
                        [n, c, h, w],
                        &f,
                        [oc, icg, k[0], k[1]],
                        &bias,
                        [oh, ow],
                        &o,
                    );
                    let fshape = forder.map(|a| [oc, icg, k[0], k[1]][a]);
                    let xs = to_layout.map(|a| [n, c, h, w][a]);
                    let ys = to_layout.map(|a| [n, oc, oh, ow][a]);
                    let xv = Values::F32(permute4(&x, [n, c, h, w], to_layout));
                    let fv = Values::F32(permute4(&f, [oc, icg, k[0], k[1]], forder));
                    let bv = Values::F32(bias.clone());
                    let (dx, df, db) = (desc(xs), desc(fshape), OperandDescriptor::f32(vec![oc]));
                    // Odd cases fuse a relu, which the kernel applies per task.
                    let relu = [crate::ml::ops::Activation::Relu];
                    let ep = Epilogue::new(if i % 2 == 1 { &relu } else { &[] }, false);
                    let got = conv2d(&[(&xv, &dx), (&fv, &df), (&bv, &db)], &desc(ys), &o, ep);
                    let got = match layout {
                        InputLayout::Nchw => got.f32().to_vec(),
                        InputLayout::Nhwc => permute4(got.f32(), ys, NHWC_TO_NCHW),
                    };
                    let want: Vec<f32> = match i % 2 {
                        1 => want.iter().map(|v| v.max(0.0)).collect(),
                        _ => want.clone(),
                    };
                    close(&got, &want);
                }
            }
        }
    }

    #[test]
    fn conv_transpose2d_matches_scatter() {
        // (n, c, h, w, ocg, groups, k, stride, dilation, padding)
        let cases = [
            (1, 3, 4, 5, 2, 1, [2, 2], [2, 2], [1, 1], [0, 0, 0, 0]),
            (2, 4, 3, 3, 3, 2, [3, 2], [2, 1], [1, 2], [1, 0, 0, 1]),
            (1, 2, 5, 4, 1, 1, [3, 3], [1, 3], [2, 1], [1, 1, 2, 0]),
            // Enough output channels for the GEMM-into-columns form.
            (1, 3, 3, 4, 9, 1, [2, 3], [2, 2], [1, 1], [0, 1, 1, 0]),
            (2, 4, 2, 3, 8, 2, [3, 3], [1, 2], [1, 1], [1, 1, 0, 0]),
        ];
        for (i, &(n, c, h, w, ocg, groups, k, strides, dilations, padding)) in
            cases.iter().enumerate()
        {
            let icg = c / groups;
            let oc = ocg * groups;
            let oh = (h - 1) * strides[0] + (k[0] - 1) * dilations[0] + 1 - padding[0] - padding[1];
            let ow = (w - 1) * strides[1] + (k[1] - 1) * dilations[1] + 1 - padding[2] - padding[3];
            let x = values(n * c * h * w, i as u32);
            let f = values(c * ocg * k[0] * k[1], 100 + i as u32);
            let bias = values(oc, 200 + i as u32);
            // Scatter form, NCHW / IOHW.
            let mut want = vec![0.0f32; n * oc * oh * ow];
            for b in 0..n {
                for m in 0..oc {
                    for p in 0..oh * ow {
                        want[(b * oc + m) * oh * ow + p] = bias[m];
                    }
                }
                for cin in 0..c {
                    let g = cin / icg;
                    for mo in 0..ocg {
                        let m = g * ocg + mo;
                        for iy in 0..h {
                            for ix in 0..w {
                                for ky in 0..k[0] {
                                    for kx in 0..k[1] {
                                        let oy = (iy * strides[0] + ky * dilations[0]) as isize
                                            - padding[0] as isize;
                                        let ox = (ix * strides[1] + kx * dilations[1]) as isize
                                            - padding[2] as isize;
                                        if oy < 0
                                            || ox < 0
                                            || oy >= oh as isize
                                            || ox >= ow as isize
                                        {
                                            continue;
                                        }
                                        want[((b * oc + m) * oh + oy as usize) * ow
                                            + ox as usize] += x[((b * c + cin) * h + iy) * w + ix]
                                            * f[((cin * ocg + mo) * k[0] + ky) * k[1] + kx];
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let filter_layouts = [
                (ConvTranspose2dFilterLayout::Iohw, [0, 1, 2, 3]),
                (ConvTranspose2dFilterLayout::Hwoi, [2, 3, 1, 0]),
                (ConvTranspose2dFilterLayout::Ohwi, [1, 2, 3, 0]),
            ];
            for (layout, to_layout) in [
                (InputLayout::Nchw, [0, 1, 2, 3]),
                (InputLayout::Nhwc, NCHW_TO_NHWC),
            ] {
                for &(fl, forder) in &filter_layouts {
                    let o = ConvTranspose2dOptions {
                        padding,
                        strides,
                        dilations,
                        groups,
                        input_layout: layout,
                        filter_layout: fl,
                        ..Default::default()
                    };
                    let fshape = forder.map(|a| [c, ocg, k[0], k[1]][a]);
                    let xs = to_layout.map(|a| [n, c, h, w][a]);
                    let ys = to_layout.map(|a| [n, oc, oh, ow][a]);
                    let xv = Values::F32(permute4(&x, [n, c, h, w], to_layout));
                    let fv = Values::F32(permute4(&f, [c, ocg, k[0], k[1]], forder));
                    let bv = Values::F32(bias.clone());
                    let (dx, df, db) = (desc(xs), desc(fshape), OperandDescriptor::f32(vec![oc]));
                    let got = conv_transpose2d(
                        &[(&xv, &dx), (&fv, &df), (&bv, &db)],
                        &desc(ys),
                        &o,
                        Epilogue::new(&[], false),
                    );
                    let got = match layout {
                        InputLayout::Nchw => got.f32().to_vec(),
                        InputLayout::Nhwc => permute4(got.f32(), ys, NHWC_TO_NCHW),
                    };
                    close(&got, &want);
                }
            }
        }
    }
}
