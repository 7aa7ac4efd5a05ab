//! matmul (batched, broadcast) and gemm.

use rayon::prelude::*;

use super::layout::coords;
use super::Values;
use crate::ml::ops::GemmOptions;
use crate::ml::shape::broadcast_shapes;
use crate::ml::types::{strides, OperandDescriptor};

pub(crate) fn matmul(
    (a, da): (&Values, &OperandDescriptor),
    (b, db): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
) -> Values {
    let (a, b) = (a.f32(), b.f32());
    let r = out.rank();
    let (m, n) = (out.shape[r - 2], out.shape[r - 1]);
    let k = da.shape[da.rank() - 1];
    let batch_shape = &out.shape[..r - 2];
    let batch_of = |d: &OperandDescriptor| -> Vec<usize> {
        let own = &d.shape[..d.rank() - 2];
        let full = broadcast_shapes(own, batch_shape).unwrap();
        debug_assert_eq!(full, batch_shape);
        let s = strides(own);
        let off = batch_shape.len() - own.len();
        (0..batch_shape.len())
            .map(|i| {
                if i < off || own[i - off] == 1 {
                    0
                } else {
                    s[i - off]
                }
            })
            .collect()
    };
    let (sa, sb) = (batch_of(da), batch_of(db));
    let mut y = vec![0.0f32; out.element_count()];
    y.par_chunks_mut(m * n).enumerate().for_each(|(bi, dst)| {
        let mut c = vec![0; batch_shape.len()];
        coords(bi, batch_shape, &mut c);
        let oa: usize = c.iter().zip(&sa).map(|(x, s)| x * s).sum::<usize>() * m * k;
        let ob: usize = c.iter().zip(&sb).map(|(x, s)| x * s).sum::<usize>() * k * n;
        for i in 0..m {
            for j in 0..n {
                dst[i * n + j] = (0..k).map(|p| a[oa + i * k + p] * b[ob + p * n + j]).sum();
            }
        }
    });
    Values::F32(y)
}

pub(crate) fn gemm(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    o: &GemmOptions,
) -> Values {
    let (a, da) = args[0];
    let (b, _) = args[1];
    let (a, b) = (a.f32(), b.f32());
    let (m, n) = (out.shape[0], out.shape[1]);
    let k = if o.a_transpose {
        da.shape[0]
    } else {
        da.shape[1]
    };
    let at = |i: usize, p: usize| {
        if o.a_transpose {
            a[p * m + i]
        } else {
            a[i * k + p]
        }
    };
    let bt = |p: usize, j: usize| {
        if o.b_transpose {
            b[j * k + p]
        } else {
            b[p * n + j]
        }
    };
    let c = args
        .get(2)
        .map(|(c, dc)| (c.f32(), super::elementwise::broadcast_index(dc, out)));
    let mut y = vec![0.0f32; m * n];
    y.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for (j, v) in row.iter_mut().enumerate() {
            let dot: f32 = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
            *v = o.alpha * dot + c.as_ref().map_or(0.0, |(c, ic)| o.beta * c[ic(i * n + j)]);
        }
    });
    Values::F32(y)
}
