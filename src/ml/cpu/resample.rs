//! resample2d: nearest and linear, with the coordinate mappings WebNN, TF
//! and TFLite use (the taps come from `ml::resample_taps`, shared with the GPU).

use super::layout::coords;
use super::Values;
use crate::ml::ops::Resample2dOptions;
use crate::ml::resample_taps::{scales, taps};
use crate::ml::types::{strides, OperandDescriptor};

pub(crate) fn resample2d(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    o: &Resample2dOptions,
) -> Values {
    let x = v.f32();
    let [ay, ax] = o.axes;
    let sc = scales(d, out, o);
    let ty = taps(d.shape[ay], out.shape[ay], sc[0], o);
    let tx = taps(d.shape[ax], out.shape[ax], sc[1], o);
    let s = strides(&d.shape);
    let mut c = vec![0; out.rank()];
    let mut y = Vec::with_capacity(out.element_count());
    for i in 0..out.element_count() {
        coords(i, &out.shape, &mut c);
        let base: usize = (0..c.len())
            .filter(|&k| k != ay && k != ax)
            .map(|k| c[k] * s[k])
            .sum();
        let at = |yy: usize, xx: usize| x[base + yy * s[ay] + xx * s[ax]];
        let (a, b) = (ty[c[ay]], tx[c[ax]]);
        let top = at(a.i0, b.i0) * (1.0 - b.w) + at(a.i0, b.i1) * b.w;
        let bottom = at(a.i1, b.i0) * (1.0 - b.w) + at(a.i1, b.i1) * b.w;
        y.push(top * (1.0 - a.w) + bottom * a.w);
    }
    Values::F32(y)
}
