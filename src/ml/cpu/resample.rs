//! resample2d: nearest and linear, with the coordinate mappings WebNN, TF
//! and TFLite use.

use super::layout::coords;
use super::Values;
use crate::ml::ops::{CoordinateTransform, InterpolationMode, Resample2dOptions};
use crate::ml::types::{strides, OperandDescriptor};

/// Source coordinate of output coordinate `dst` along one axis.
pub(crate) fn source(
    dst: usize,
    in_len: usize,
    out_len: usize,
    scale: f32,
    t: CoordinateTransform,
    mode: InterpolationMode,
) -> f32 {
    let d = dst as f32;
    match (t, mode) {
        (CoordinateTransform::AlignCorners, _) => {
            if out_len > 1 {
                d * (in_len - 1) as f32 / (out_len - 1) as f32
            } else {
                0.0
            }
        }
        (CoordinateTransform::HalfPixel, InterpolationMode::Linear) => (d + 0.5) / scale - 0.5,
        (CoordinateTransform::HalfPixel, InterpolationMode::NearestNeighbor) => (d + 0.5) / scale,
        (CoordinateTransform::Asymmetric, _) => d / scale,
    }
}

/// The scale along each axis: the given one, or out/in when sizes were given.
pub(crate) fn scales(
    d: &OperandDescriptor,
    out: &OperandDescriptor,
    o: &Resample2dOptions,
) -> [f32; 2] {
    match o.sizes {
        Some(_) => [0, 1].map(|i| out.shape[o.axes[i]] as f32 / d.shape[o.axes[i]] as f32),
        None => o.scales,
    }
}

pub(crate) fn resample2d(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    o: &Resample2dOptions,
) -> Values {
    let x = v.f32();
    let [ay, ax] = o.axes;
    let (ih, iw, oh, ow) = (d.shape[ay], d.shape[ax], out.shape[ay], out.shape[ax]);
    let sc = scales(d, out, o);
    let s = strides(&d.shape);
    let mut c = vec![0; out.rank()];
    let mut y = Vec::with_capacity(out.element_count());
    for i in 0..out.element_count() {
        coords(i, &out.shape, &mut c);
        let base: usize = (0..c.len())
            .filter(|&k| k != ay && k != ax)
            .map(|k| c[k] * s[k])
            .sum();
        let sy = source(c[ay], ih, oh, sc[0], o.coordinate_transform, o.mode);
        let sx = source(c[ax], iw, ow, sc[1], o.coordinate_transform, o.mode);
        let at = |yy: usize, xx: usize| x[base + yy * s[ay] + xx * s[ax]];
        y.push(match o.mode {
            InterpolationMode::NearestNeighbor => {
                let pick = |v: f32, n: usize| {
                    let v = if o.coordinate_transform == CoordinateTransform::AlignCorners {
                        v.round()
                    } else {
                        v.floor()
                    };
                    (v.max(0.0) as usize).min(n - 1)
                };
                at(pick(sy, ih), pick(sx, iw))
            }
            InterpolationMode::Linear => {
                let (sy, sx) = (
                    sy.clamp(0.0, (ih - 1) as f32),
                    sx.clamp(0.0, (iw - 1) as f32),
                );
                let (y0, x0) = (sy.floor() as usize, sx.floor() as usize);
                let (y1, x1) = ((y0 + 1).min(ih - 1), (x0 + 1).min(iw - 1));
                let (fy, fx) = (sy - y0 as f32, sx - x0 as f32);
                let top = at(y0, x0) * (1.0 - fx) + at(y0, x1) * fx;
                let bottom = at(y1, x0) * (1.0 - fx) + at(y1, x1) * fx;
                top * (1.0 - fy) + bottom * fy
            }
        });
    }
    Values::F32(y)
}
