//! argMin / argMax along one axis.

use super::Values;
use crate::ml::types::OperandDescriptor;

/// argMax / argMin along `axis`, as onnxruntime scans: from the first
/// element, a later one replaces the best only if it compares greater (or
/// less; or equal too, with `last`), so ties keep the first index (or the
/// last) and a NaN wins only at index 0.
pub(crate) fn arg_min_max(
    (v, d): (&Values, &OperandDescriptor),
    max: bool,
    axis: usize,
    last: bool,
) -> Values {
    let len = d.shape[axis];
    let inner: usize = d.shape[axis + 1..].iter().product();
    let outputs = d.element_count() / len;
    fn scan<T: PartialOrd + Copy>(
        x: &[T],
        base: usize,
        len: usize,
        inner: usize,
        max: bool,
        last: bool,
    ) -> i32 {
        let mut best = x[base];
        let mut index = 0;
        for k in 1..len {
            let v = x[base + k * inner];
            let better = match (max, last) {
                (true, false) => v > best,
                (true, true) => v >= best,
                (false, false) => v < best,
                (false, true) => v <= best,
            };
            if better {
                best = v;
                index = k;
            }
        }
        index as i32
    }
    let base = |i: usize| (i / inner) * len * inner + i % inner;
    Values::I32(
        (0..outputs)
            .map(|i| match v {
                Values::F32(x) => scan(x, base(i), len, inner, max, last),
                Values::I32(x) => scan(x, base(i), len, inner, max, last),
                Values::U8(x) => scan(x, base(i), len, inner, max, last),
            })
            .collect(),
    )
}
