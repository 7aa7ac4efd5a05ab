//! Data movement: concat, transpose, slice, pad, split.

use super::Values;
use crate::ml::ops::PaddingMode;
use crate::ml::types::{strides, OperandDescriptor};

/// Applies `f(out_index) -> Option<in_index>` for every output element,
/// filling `None` with `fill` (used by pad).
fn gather(src: &Values, n: usize, fill: f32, f: impl Fn(usize) -> Option<usize> + Sync) -> Values {
    match src {
        Values::F32(v) => Values::F32((0..n).map(|i| f(i).map_or(fill, |j| v[j])).collect()),
        Values::I32(v) => Values::I32((0..n).map(|i| f(i).map_or(fill as i32, |j| v[j])).collect()),
        Values::U8(v) => Values::U8((0..n).map(|i| f(i).map_or(fill as u8, |j| v[j])).collect()),
    }
}

/// Splits a flat index into coordinates of `shape`.
pub(crate) fn coords(mut i: usize, shape: &[usize], out: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        out[d] = i % shape[d];
        i /= shape[d];
    }
}

pub(crate) fn transpose((v, d): (&Values, &OperandDescriptor), perm: &[usize]) -> Values {
    let in_strides = strides(&d.shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| d.shape[p]).collect();
    let n = d.element_count();
    gather(v, n, 0.0, |i| {
        let mut c = vec![0; out_shape.len()];
        coords(i, &out_shape, &mut c);
        Some(c.iter().zip(perm).map(|(&ci, &p)| ci * in_strides[p]).sum())
    })
}

pub(crate) fn concat(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    axis: usize,
) -> Values {
    let outer: usize = out.shape[..axis].iter().product();
    let inner: usize = out.shape[axis + 1..].iter().product();
    let mut result = match args[0].0 {
        Values::F32(_) => Values::F32(Vec::with_capacity(out.element_count())),
        Values::I32(_) => Values::I32(Vec::with_capacity(out.element_count())),
        Values::U8(_) => Values::U8(Vec::with_capacity(out.element_count())),
    };
    for o in 0..outer {
        for (v, d) in args {
            let chunk = d.shape[axis] * inner;
            let range = o * chunk..(o + 1) * chunk;
            match (&mut result, v) {
                (Values::F32(r), Values::F32(x)) => r.extend_from_slice(&x[range]),
                (Values::I32(r), Values::I32(x)) => r.extend_from_slice(&x[range]),
                (Values::U8(r), Values::U8(x)) => r.extend_from_slice(&x[range]),
                _ => unreachable!("concat of mixed types is refused at build"),
            }
        }
    }
    result
}

pub(crate) fn slice(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    starts: &[usize],
    steps: &[usize],
) -> Values {
    let in_strides = strides(&d.shape);
    gather(v, out.element_count(), 0.0, |i| {
        let mut c = vec![0; out.rank()];
        coords(i, &out.shape, &mut c);
        Some(
            (0..c.len())
                .map(|k| (starts[k] + c[k] * steps[k]) * in_strides[k])
                .sum(),
        )
    })
}

pub(crate) fn pad(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    beginning: &[usize],
    mode: PaddingMode,
    value: f32,
) -> Values {
    let in_strides = strides(&d.shape);
    gather(v, out.element_count(), value, |i| {
        let mut c = vec![0; out.rank()];
        coords(i, &out.shape, &mut c);
        let mut j = 0;
        for k in 0..c.len() {
            let n = d.shape[k] as isize;
            let mut x = c[k] as isize - beginning[k] as isize;
            if x < 0 || x >= n {
                match mode {
                    PaddingMode::Constant => return None,
                    PaddingMode::Edge => x = x.clamp(0, n - 1),
                    PaddingMode::Reflection => {
                        x = if x < 0 { -x } else { 2 * (n - 1) - x };
                    }
                }
            }
            j += x as usize * in_strides[k];
        }
        Some(j)
    })
}

pub(crate) fn split(
    (v, d): (&Values, &OperandDescriptor),
    sizes: &[usize],
    axis: usize,
) -> Vec<Values> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&s| {
            let mut starts = vec![0; d.rank()];
            starts[axis] = start;
            start += s;
            let mut shape = d.shape.clone();
            shape[axis] = s;
            let out = OperandDescriptor::new(d.data_type, shape);
            slice((v, d), &out, &starts, &vec![1; d.rank()])
        })
        .collect()
}
