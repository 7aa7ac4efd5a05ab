//! averagePool2d / maxPool2d (padding excluded from averages, as TFLite does,
//! unless `count_include_pad`).

use rayon::prelude::*;

use super::conv::{from_nchw, to_nchw, window_tap};
use super::Values;
use crate::ml::ops::{InputLayout, Pool2dOptions, PoolKind};
use crate::ml::shape::nchw;
use crate::ml::types::OperandDescriptor;

pub(crate) fn pool2d(
    kind: PoolKind,
    arg: (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    o: &Pool2dOptions,
) -> Values {
    let s = &arg.1.shape;
    let [n, c, h, w] = nchw(o.layout, [s[0], s[1], s[2], s[3]]);
    let so = &out.shape;
    let [_, _, oh, ow] = nchw(o.layout, [so[0], so[1], so[2], so[3]]);
    let [kh, kw] = o.window_dimensions.expect("resolved at build");
    if o.layout == InputLayout::Nhwc {
        return Values::F32(pool_nhwc(kind, arg.0.f32(), [n, h, w, c], [oh, ow], o));
    }
    let x = to_nchw(arg, o.layout);
    let mut y = vec![0.0f32; n * c * oh * ow];
    y.par_chunks_mut(oh * ow)
        .enumerate()
        .for_each(|(plane, dst)| {
            let src = &x[plane * h * w..(plane + 1) * h * w];
            for oy in 0..oh {
                for ox in 0..ow {
                    let (mut acc, mut count) = match kind {
                        PoolKind::Average => (0.0f32, 0usize),
                        PoolKind::Max => (f32::NEG_INFINITY, 0),
                    };
                    for ky in 0..kh {
                        let iy = (oy * o.strides[0] + ky * o.dilations[0]) as isize
                            - o.padding[0] as isize;
                        if iy < 0 || iy >= h as isize {
                            continue;
                        }
                        for kx in 0..kw {
                            let ix = (ox * o.strides[1] + kx * o.dilations[1]) as isize
                                - o.padding[2] as isize;
                            if ix < 0 || ix >= w as isize {
                                continue;
                            }
                            let v = src[iy as usize * w + ix as usize];
                            match kind {
                                PoolKind::Average => acc += v,
                                PoolKind::Max => acc = acc.max(v),
                            }
                            count += 1;
                        }
                    }
                    if o.count_include_pad {
                        count = padded_taps(o, [oy, ox], [h, w]);
                    }
                    dst[oy * ow + ox] = match kind {
                        PoolKind::Average if count > 0 => acc / count as f32,
                        PoolKind::Average => 0.0,
                        PoolKind::Max => acc,
                    };
                }
            }
        });
    from_nchw(y, [n, c, oh, ow], o.layout)
}

/// The taps of output (oy, ox)'s window inside input + padding: the
/// divisor of an average with `count_include_pad` (a window that runs past
/// the end padding, with ceil rounding, is clipped there, as onnxruntime
/// clips it).
pub(crate) fn padded_taps(o: &Pool2dOptions, out: [usize; 2], input: [usize; 2]) -> usize {
    let [kh, kw] = o.window_dimensions.expect("resolved at build");
    let along = |axis: usize, k: usize| {
        // Tap j sits at out * stride + j * dilation in padded coordinates,
        // never before the start padding; count those before its end.
        let end = input[axis] + o.padding[2 * axis] + o.padding[2 * axis + 1];
        let start = out[axis] * o.strides[axis];
        if start >= end {
            0
        } else {
            k.min((end - 1 - start) / o.dilations[axis] + 1)
        }
    };
    along(0, kh) * along(1, kw)
}

/// Pooling with channels innermost: each output pixel folds the channel
/// vectors of its window, so the inner loops run along contiguous memory.
fn pool_nhwc(
    kind: PoolKind,
    x: &[f32],
    [n, h, w, c]: [usize; 4],
    [oh, ow]: [usize; 2],
    o: &Pool2dOptions,
) -> Vec<f32> {
    let [kh, kw] = o.window_dimensions.expect("resolved at build");
    let mut y = vec![0.0f32; n * oh * ow * c];
    if y.is_empty() {
        return y;
    }
    y.par_chunks_mut(ow * c).enumerate().for_each(|(row, dst)| {
        let (b, oy) = (row / oh, row % oh);
        for (ox, acc) in dst.chunks_exact_mut(c).enumerate() {
            acc.fill(match kind {
                PoolKind::Average => 0.0,
                PoolKind::Max => f32::NEG_INFINITY,
            });
            let mut count = 0usize;
            for ky in 0..kh {
                let Some(iy) = window_tap(oy, ky, o.strides[0], o.dilations[0], o.padding[0], h)
                else {
                    continue;
                };
                for kx in 0..kw {
                    let Some(ix) =
                        window_tap(ox, kx, o.strides[1], o.dilations[1], o.padding[2], w)
                    else {
                        continue;
                    };
                    let src = &x[((b * h + iy) * w + ix) * c..][..c];
                    match kind {
                        PoolKind::Average => acc.iter_mut().zip(src).for_each(|(a, &v)| *a += v),
                        PoolKind::Max => acc.iter_mut().zip(src).for_each(|(a, &v)| *a = a.max(v)),
                    }
                    count += 1;
                }
            }
            if o.count_include_pad {
                count = padded_taps(o, [oy, ox], [h, w]);
            }
            if kind == PoolKind::Average {
                match count {
                    0 => acc.fill(0.0),
                    k => acc.iter_mut().for_each(|a| *a /= k as f32),
                }
            }
        }
    });
    y
}

#[cfg(test)]
mod tests {
    //! The channels-innermost pooling against the NCHW one.

    use super::*;
    use crate::ml::cpu::conv::{from_nchw, to_nchw};
    use crate::ml::cpu::test_values as values;

    #[test]
    fn nhwc_pooling_matches_nchw() {
        // (n, c, h, w, window, strides, dilations, padding)
        let cases = [
            (1, 16, 13, 17, [3, 3], [2, 2], [1, 1], [1, 1, 1, 1]),
            (2, 5, 9, 6, [2, 3], [1, 2], [2, 1], [0, 1, 2, 0]),
            (1, 24, 11, 11, [11, 11], [11, 11], [1, 1], [0, 0, 0, 0]),
            (1, 3, 4, 4, [5, 5], [1, 1], [1, 1], [2, 2, 2, 2]),
        ];
        for (i, (n, c, h, w, window, strides, dilations, padding)) in cases.into_iter().enumerate()
        {
            let oh =
                (h + padding[0] + padding[1] - (window[0] - 1) * dilations[0] - 1) / strides[0] + 1;
            let ow =
                (w + padding[2] + padding[3] - (window[1] - 1) * dilations[1] - 1) / strides[1] + 1;
            let x = values(n * c * h * w, i as u32);
            for kind in [PoolKind::Average, PoolKind::Max] {
                let o = |layout| Pool2dOptions {
                    window_dimensions: Some(window),
                    padding,
                    strides,
                    dilations,
                    layout,
                    ..Pool2dOptions::new()
                };
                let dn = OperandDescriptor::f32(vec![n, c, h, w]);
                let want = pool2d(
                    kind,
                    (&Values::F32(x.clone()), &dn),
                    &OperandDescriptor::f32(vec![n, c, oh, ow]),
                    &o(InputLayout::Nchw),
                );
                let xh = from_nchw(x.clone(), [n, c, h, w], InputLayout::Nhwc);
                let dh = OperandDescriptor::f32(vec![n, h, w, c]);
                let got = pool2d(
                    kind,
                    (&xh, &dh),
                    &OperandDescriptor::f32(vec![n, oh, ow, c]),
                    &o(InputLayout::Nhwc),
                );
                let dy = OperandDescriptor::f32(vec![n, oh, ow, c]);
                let got = to_nchw((&got, &dy), InputLayout::Nhwc);
                assert_eq!(got, want.f32(), "case {i}, {kind:?}");
            }
        }
    }
}
