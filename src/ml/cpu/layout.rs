//! Index helpers the data-movement ops share (concat.rs, transpose.rs,
//! slice.rs, pad.rs, split.rs).

use super::Values;

/// Applies `f(out_index) -> Option<in_index>` for every output element,
/// filling `None` with `fill` (pad; transpose and slice never do).
pub(super) fn pick_or_fill(
    src: &Values,
    n: usize,
    fill: f32,
    f: impl Fn(usize) -> Option<usize> + Sync,
) -> Values {
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
