//! gemm: alpha * A' * B' + beta * C, on the SGEMM of `sgemm.rs`.

use rayon::prelude::*;

use super::sgemm::{sgemm, Mat, MatMut};
use super::Values;
use crate::ml::ops::GemmOptions;
use crate::ml::types::OperandDescriptor;

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
