//! The reductions (reduceMean, reduceSum, ... over any set of axes).

use rayon::prelude::*;

use super::transpose::transpose;
use super::Values;
use crate::ml::ops::ReduceKind;
use crate::ml::types::OperandDescriptor;

/// Reduces `v` over `axes` (sorted, unique) into `out`'s elements.
pub(crate) fn reduce(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    kind: ReduceKind,
    axes: &[usize],
) -> Values {
    let count: usize = axes.iter().map(|&a| d.shape[a]).product();
    match v {
        Values::F32(x) => {
            if matches!(kind, ReduceKind::Mean | ReduceKind::Sum) {
                if let Some(mut y) = sum_contiguous(x, d, axes) {
                    if kind == ReduceKind::Mean {
                        y.iter_mut().for_each(|s| *s /= count as f64);
                    }
                    return Values::F32(y.into_iter().map(|s| s as f32).collect());
                }
            }
            let grouped = reduced_innermost(v, d, axes);
            let x = grouped.as_ref().map_or(&x[..], |g| g.f32());
            let mut y = vec![0.0f32; out.element_count()];
            y.par_iter_mut()
                .zip(x.par_chunks(count))
                .for_each(|(y, c)| *y = reduce_f32(kind, c));
            Values::F32(y)
        }
        Values::I32(x) => {
            let grouped = reduced_innermost(v, d, axes);
            let x = match &grouped {
                Some(Values::I32(g)) => &g[..],
                _ => &x[..],
            };
            Values::I32(x.chunks(count).map(|c| reduce_i32(kind, c)).collect())
        }
        Values::U8(_) => unreachable!("uint8 reductions are refused at build"),
    }
}

/// The input with the reduced axes moved innermost (kept axes in order
/// before them), so each output reduces one contiguous chunk; `None` when
/// they already are.
fn reduced_innermost(v: &Values, d: &OperandDescriptor, axes: &[usize]) -> Option<Values> {
    let kept = (0..d.rank()).filter(|a| !axes.contains(a));
    let perm: Vec<usize> = kept.chain(axes.iter().copied()).collect();
    // Moving size-1 axes moves no data.
    let moved = perm
        .iter()
        .enumerate()
        .filter(|&(_, &p)| d.shape[p] != 1)
        .map(|(_, &p)| p)
        .collect::<Vec<_>>();
    (!moved.windows(2).all(|w| w[0] < w[1])).then(|| transpose((v, d), &perm))
}

/// Sums over a block of neighbouring axes (global pooling in NHWC or NCHW)
/// without moving data: the input is [outer, reduced, inner] and each
/// output is a sum of `reduced` rows of `inner` values. `None` for axes
/// with gaps between them.
fn sum_contiguous(x: &[f32], d: &OperandDescriptor, axes: &[usize]) -> Option<Vec<f64>> {
    let (&first, &last) = (axes.first()?, axes.last()?);
    if last - first + 1 != axes.len() {
        return None;
    }
    let outer: usize = d.shape[..first].iter().product();
    let reduced: usize = d.shape[first..=last].iter().product();
    let inner: usize = d.shape[last + 1..].iter().product();
    let mut y = vec![0.0f64; outer * inner];
    y.par_chunks_mut(inner).enumerate().for_each(|(o, sums)| {
        for row in x[o * reduced * inner..][..reduced * inner].chunks_exact(inner) {
            sums.iter_mut().zip(row).for_each(|(s, &v)| *s += v as f64);
        }
    });
    Some(y)
}

/// One float reduction, accumulated in f64 where it sums or multiplies.
fn reduce_f32(kind: ReduceKind, c: &[f32]) -> f32 {
    let sum = |f: fn(f32) -> f64| c.iter().map(|&v| f(v)).sum::<f64>();
    match kind {
        ReduceKind::Mean => (sum(f64::from) / c.len() as f64) as f32,
        ReduceKind::Sum => sum(f64::from) as f32,
        ReduceKind::SumSquare => sum(|v| f64::from(v) * f64::from(v)) as f32,
        ReduceKind::L2 => sum(|v| f64::from(v) * f64::from(v)).sqrt() as f32,
        ReduceKind::Product => c.iter().map(|&v| f64::from(v)).product::<f64>() as f32,
        ReduceKind::Max => c.iter().copied().fold(f32::NEG_INFINITY, f32::max),
        ReduceKind::Min => c.iter().copied().fold(f32::INFINITY, f32::min),
        ReduceKind::LogSumExp => {
            let m = c.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            if !m.is_finite() {
                return m;
            }
            let s: f64 = c.iter().map(|&v| f64::from(v - m).exp()).sum();
            (f64::from(m) + s.ln()) as f32
        }
    }
}

/// One int32 reduction; sums and products wrap, as on the GPU.
fn reduce_i32(kind: ReduceKind, c: &[i32]) -> i32 {
    let it = c.iter().copied();
    match kind {
        ReduceKind::Sum => it.fold(0, i32::wrapping_add),
        ReduceKind::Product => it.fold(1, i32::wrapping_mul),
        ReduceKind::Max => it.max().unwrap_or(i32::MIN),
        ReduceKind::Min => it.min().unwrap_or(i32::MAX),
        other => unreachable!("{} of int32 is refused at build", other.name()),
    }
}

#[cfg(test)]
mod tests {
    //! The fast paths (contiguous sums, reduced axes already innermost)
    //! against a per-element form of the reduction.

    use super::*;
    use crate::ml::cpu::layout::coords;
    use crate::ml::cpu::test_values as values;
    use crate::ml::types::strides;

    /// Each output as the reduction of the input elements mapping to it,
    /// visited in input order.
    fn per_element(kind: ReduceKind, x: &[f32], d: &OperandDescriptor, axes: &[usize]) -> Vec<f32> {
        let kept: Vec<usize> = (0..d.rank()).filter(|a| !axes.contains(a)).collect();
        let kept_shape: Vec<usize> = kept.iter().map(|&a| d.shape[a]).collect();
        let out_strides = strides(&kept_shape);
        let mut groups = vec![Vec::new(); kept_shape.iter().product()];
        let mut c = vec![0; d.rank()];
        for (i, &v) in x.iter().enumerate() {
            coords(i, &d.shape, &mut c);
            let j: usize = kept.iter().zip(&out_strides).map(|(&a, &s)| c[a] * s).sum();
            groups[j].push(v);
        }
        groups.iter().map(|g| reduce_f32(kind, g)).collect()
    }

    #[test]
    fn reductions_match_a_per_element_form() {
        let shape = vec![2, 7, 1, 9, 5];
        let d = OperandDescriptor::f32(shape.clone());
        let x = values(d.element_count(), 7);
        let kinds = [
            ReduceKind::Mean,
            ReduceKind::Sum,
            ReduceKind::Max,
            ReduceKind::Min,
            ReduceKind::Product,
            ReduceKind::SumSquare,
            ReduceKind::L2,
            ReduceKind::LogSumExp,
        ];
        let all_axes: [&[usize]; 8] = [
            &[1, 2, 3],
            &[0],
            &[4],
            &[0, 1, 2, 3, 4],
            &[3, 4],
            &[0, 3],
            &[2],
            &[],
        ];
        for kind in kinds {
            for axes in all_axes {
                let kept: Vec<usize> = (0..5)
                    .filter(|a| !axes.contains(a))
                    .map(|a| shape[a])
                    .collect();
                let out = OperandDescriptor::f32(kept);
                let got = reduce((&Values::F32(x.clone()), &d), &out, kind, axes);
                let want = per_element(kind, &x, &d, axes);
                for (g, w) in got.f32().iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                        "{kind:?} over {axes:?}: {g} vs {w}"
                    );
                }
            }
        }
    }
}
