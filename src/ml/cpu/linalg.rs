//! matmul (batched, broadcast) and gemm, on the SGEMM of `gemm.rs`.

use rayon::prelude::*;

use super::elementwise::broadcast_strides;
use super::gemm::{sgemm, Mat, MatMut};
use super::layout::coords;
use super::Values;
use crate::ml::ops::GemmOptions;
use crate::ml::shape::broadcast_shapes;
use crate::ml::types::OperandDescriptor;

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
        broadcast_strides(own, batch_shape)
    };
    let (sa, sb) = (batch_of(da), batch_of(db));
    let mut y = vec![0.0f32; out.element_count()];
    if y.is_empty() {
        return Values::F32(y);
    }
    // Few batches: split each product's rows over the threads too.
    let batches = y.len() / (m * n);
    let rows = m
        .div_ceil((2 * rayon::current_num_threads()).div_ceil(batches))
        .max(1);
    y.par_chunks_mut(m * n).enumerate().for_each(|(bi, dst)| {
        let mut c = vec![0; batch_shape.len()];
        coords(bi, batch_shape, &mut c);
        let oa: usize = c.iter().zip(&sa).map(|(x, s)| x * s).sum::<usize>() * m * k;
        let ob: usize = c.iter().zip(&sb).map(|(x, s)| x * s).sum::<usize>() * k * n;
        dst.par_chunks_mut(rows * n)
            .enumerate()
            .for_each(|(t, dst)| {
                sgemm(
                    dst.len() / n,
                    k,
                    n,
                    1.0,
                    Mat {
                        data: a,
                        off: oa + t * rows * k,
                        rs: k,
                        cs: 1,
                    },
                    Mat {
                        data: b,
                        off: ob,
                        rs: n,
                        cs: 1,
                    },
                    0.0,
                    MatMut {
                        data: dst,
                        off: 0,
                        rs: n,
                        cs: 1,
                    },
                );
            });
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
    // A is m x k (stored k x m when transposed), B k x n (stored n x k).
    let av = if o.a_transpose {
        Mat {
            data: a,
            off: 0,
            rs: 1,
            cs: m,
        }
    } else {
        Mat {
            data: a,
            off: 0,
            rs: k,
            cs: 1,
        }
    };
    let bv = if o.b_transpose {
        Mat {
            data: b,
            off: 0,
            rs: 1,
            cs: k,
        }
    } else {
        Mat {
            data: b,
            off: 0,
            rs: n,
            cs: 1,
        }
    };
    let c = args
        .get(2)
        .map(|(c, dc)| (c.f32(), super::elementwise::broadcast_index(dc, out)));
    let mut y = vec![0.0f32; m * n];
    if y.is_empty() {
        return Values::F32(y);
    }
    // y = beta c, then y += alpha A B, over chunks of rows.
    let rows = m.div_ceil(2 * rayon::current_num_threads()).max(1);
    y.par_chunks_mut(rows * n).enumerate().for_each(|(t, dst)| {
        let i0 = t * rows;
        if let Some((c, ic)) = &c {
            for (j, v) in dst.iter_mut().enumerate() {
                *v = o.beta * c[ic(i0 * n + j)];
            }
        }
        let a = Mat {
            off: i0 * av.rs,
            ..av
        };
        let c = MatMut {
            data: dst,
            off: 0,
            rs: n,
            cs: 1,
        };
        sgemm(c.data.len() / n, k, n, o.alpha, a, bv, 1.0, c);
    });
    Values::F32(y)
}
