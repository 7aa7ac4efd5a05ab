//! resample2d: nearest and linear, with the coordinate mappings WebNN, TF
//! and TFLite use (the taps come from `ml::resample_taps`, shared with the GPU).

use rayon::prelude::*;

use super::Values;
use crate::ml::ops::Resample2dOptions;
use crate::ml::resample_taps::{scales, taps};
use crate::ml::types::OperandDescriptor;

pub(crate) fn resample2d(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    o: &Resample2dOptions,
) -> Values {
    let x = v.f32();
    // The two axes are consecutive (checked at build), so the tensor is
    // [outer, in_h, in_w, inner]: each output pixel blends four runs of
    // `inner` values (the channels in NHWC, a single value in NCHW).
    let [ay, ax] = o.axes;
    let (h, w) = (d.shape[ay], d.shape[ax]);
    let (oh, ow) = (out.shape[ay], out.shape[ax]);
    let inner: usize = d.shape[ax + 1..].iter().product();
    let sc = scales(d, out, o);
    let ty = taps(h, oh, sc[0], o);
    let tx = taps(w, ow, sc[1], o);
    let mut y = vec![0.0f32; out.element_count()];
    if y.is_empty() {
        return Values::F32(y);
    }
    y.par_chunks_mut(ow * inner)
        .enumerate()
        .for_each(|(row, dst)| {
            let (b, a) = (row / oh, ty[row % oh]);
            let plane = &x[b * h * w * inner..][..h * w * inner];
            let (top, bottom) = (
                &plane[a.i0 * w * inner..][..w * inner],
                &plane[a.i1 * w * inner..][..w * inner],
            );
            for (px, t) in dst.chunks_exact_mut(inner).zip(&tx) {
                let (l, r) = (t.i0 * inner, t.i1 * inner);
                let runs = top[l..][..inner]
                    .iter()
                    .zip(&top[r..][..inner])
                    .zip(bottom[l..][..inner].iter().zip(&bottom[r..][..inner]));
                for (out, ((&tl, &tr), (&bl, &br))) in px.iter_mut().zip(runs) {
                    let upper = tl * (1.0 - t.w) + tr * t.w;
                    let lower = bl * (1.0 - t.w) + br * t.w;
                    *out = upper * (1.0 - a.w) + lower * a.w;
                }
            }
        });
    Values::F32(y)
}

/// `x` upsampled by integer factors `s` along the consecutive axes `axes`,
/// nearest neighbour (output (y, x) is input (y / sy, x / sx)): what a
/// conv2d with a fused input upsample reads. The fusion only takes
/// resamples whose taps are exactly these.
pub(crate) fn upsample_nearest(
    (v, d): (&Values, &OperandDescriptor),
    axes: [usize; 2],
    s: [usize; 2],
) -> (Values, OperandDescriptor) {
    let x = v.f32();
    let [ay, ax] = axes;
    let (h, w) = (d.shape[ay], d.shape[ax]);
    let (oh, ow) = (h * s[0], w * s[1]);
    let inner: usize = d.shape[ax + 1..].iter().product();
    let mut shape = d.shape.clone();
    shape[ay] = oh;
    shape[ax] = ow;
    let out = OperandDescriptor::new(d.data_type, shape);
    let mut y = vec![0.0f32; out.element_count()];
    if !y.is_empty() {
        y.par_chunks_mut(ow * inner)
            .enumerate()
            .for_each(|(row, dst)| {
                let (b, iy) = (row / oh, row % oh / s[0]);
                let src = &x[((b * h + iy) * w) * inner..][..w * inner];
                for (ox, px) in dst.chunks_exact_mut(inner).enumerate() {
                    px.copy_from_slice(&src[ox / s[1] * inner..][..inner]);
                }
            });
    }
    (Values::F32(y), out)
}

#[cfg(test)]
mod tests {
    //! Whole-row resampling against a per-element blend of the same taps.

    use super::*;
    use crate::ml::ops::{CoordinateTransform, InterpolationMode};
    use crate::ml::types::strides;

    #[test]
    fn rows_match_per_element_blend() {
        let cases: [(&[usize], [usize; 2], [usize; 2]); 4] = [
            (&[1, 5, 7, 3], [1, 2], [11, 4]),
            (&[2, 3, 6, 5], [2, 3], [13, 9]),
            (&[4, 3, 2, 2], [0, 1], [9, 6]),
            (&[1, 1, 1, 1], [2, 3], [3, 5]),
        ];
        for (i, (shape, axes, sizes)) in cases.into_iter().enumerate() {
            let d = OperandDescriptor::f32(shape);
            let mut oshape = shape.to_vec();
            oshape[axes[0]] = sizes[0];
            oshape[axes[1]] = sizes[1];
            let out = OperandDescriptor::f32(oshape.clone());
            let x: Vec<f32> = (0..d.element_count())
                .map(|e| (e as f32 * 0.37).sin())
                .collect();
            for mode in [
                InterpolationMode::Linear,
                InterpolationMode::NearestNeighbor,
            ] {
                for coordinate_transform in [
                    CoordinateTransform::HalfPixel,
                    CoordinateTransform::AlignCorners,
                    CoordinateTransform::Asymmetric,
                ] {
                    let o = Resample2dOptions {
                        mode,
                        sizes: Some(sizes),
                        axes,
                        coordinate_transform,
                        ..Default::default()
                    };
                    let got = resample2d((&Values::F32(x.clone()), &d), &out, &o);
                    let sc = scales(&d, &out, &o);
                    let ty = taps(shape[axes[0]], sizes[0], sc[0], &o);
                    let tx = taps(shape[axes[1]], sizes[1], sc[1], &o);
                    let s = strides(shape);
                    let mut want = Vec::new();
                    let mut c = [0; 4];
                    for e in 0..out.element_count() {
                        let mut r = e;
                        for k in (0..4).rev() {
                            c[k] = r % oshape[k];
                            r /= oshape[k];
                        }
                        let base: usize = (0..4)
                            .filter(|k| !axes.contains(k))
                            .map(|k| c[k] * s[k])
                            .sum();
                        let at = |yy: usize, xx: usize| x[base + yy * s[axes[0]] + xx * s[axes[1]]];
                        let (a, b) = (ty[c[axes[0]]], tx[c[axes[1]]]);
                        let top = at(a.i0, b.i0) * (1.0 - b.w) + at(a.i0, b.i1) * b.w;
                        let bottom = at(a.i1, b.i0) * (1.0 - b.w) + at(a.i1, b.i1) * b.w;
                        want.push(top * (1.0 - a.w) + bottom * a.w);
                    }
                    assert_eq!(
                        got.f32(),
                        &want[..],
                        "case {i} {mode:?} {coordinate_transform:?}"
                    );
                }
            }
        }
    }
}
