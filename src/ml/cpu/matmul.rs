//! matmul (batched, broadcast), on the SGEMM of `sgemm.rs`.

use rayon::prelude::*;

use super::elementwise::broadcast_strides;
use super::layout::coords;
use super::sgemm::{sgemm, Mat, MatMut};
use super::Values;
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
