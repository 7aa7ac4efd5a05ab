//! averagePool2d / maxPool2d (padding excluded from averages, as TFLite does)
//! and reduceMean.

use rayon::prelude::*;

use super::conv::{from_nchw, to_nchw};
use super::layout::coords;
use super::Values;
use crate::ml::ops::{Pool2dOptions, PoolKind};
use crate::ml::shape::nchw;
use crate::ml::types::{strides, OperandDescriptor};

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

pub(crate) fn reduce_mean(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    axes: &[usize],
) -> Values {
    let x = v.f32();
    // Output coordinates keep every non-reduced axis in order.
    let kept: Vec<usize> = (0..d.rank()).filter(|a| !axes.contains(a)).collect();
    let kept_shape: Vec<usize> = kept.iter().map(|&a| d.shape[a]).collect();
    let mut sums = vec![0.0f64; out.element_count()];
    let mut c = vec![0; d.rank()];
    let out_strides = strides(&kept_shape);
    for (i, &value) in x.iter().enumerate() {
        coords(i, &d.shape, &mut c);
        let j: usize = kept.iter().zip(&out_strides).map(|(&a, &s)| c[a] * s).sum();
        sums[j] += value as f64;
    }
    let count: usize = axes.iter().map(|&a| d.shape[a]).product();
    Values::F32(
        sums.into_iter()
            .map(|s| (s / count as f64) as f32)
            .collect(),
    )
}
