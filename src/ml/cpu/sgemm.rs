//! A bounds-checked front to `matrixmultiply::sgemm` (pure Rust, with
//! AVX/FMA picked at run time): the one matrix product under conv2d,
//! convTranspose2d, matmul and gemm.

/// A strided matrix view: element (i, j) is `data[off + i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct Mat<'a> {
    pub data: &'a [f32],
    pub off: usize,
    pub rs: usize,
    pub cs: usize,
}

/// A strided mutable matrix view, as [`Mat`].
pub(crate) struct MatMut<'a> {
    pub data: &'a mut [f32],
    pub off: usize,
    pub rs: usize,
    pub cs: usize,
}

/// Whether every element of a `rows` x `cols` view lies inside `len`.
fn fits(len: usize, off: usize, rs: usize, cs: usize, rows: usize, cols: usize) -> bool {
    rows == 0 || cols == 0 || off + (rows - 1) * rs + (cols - 1) * cs < len
}

/// C ← alpha · A B + beta · C, with A m x k, B k x n and C m x n. With
/// `beta == 0` C is only written. Panics on a view that leaves its slice or
/// a C whose elements alias.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: Mat,
    b: Mat,
    beta: f32,
    c: MatMut,
) {
    assert!(
        fits(a.data.len(), a.off, a.rs, a.cs, m, k),
        "A out of bounds"
    );
    assert!(
        fits(b.data.len(), b.off, b.rs, b.cs, k, n),
        "B out of bounds"
    );
    assert!(
        fits(c.data.len(), c.off, c.rs, c.cs, m, n),
        "C out of bounds"
    );
    // C's elements must be distinct: one stride steps over a whole row or
    // column of the other (enough for every layout used here).
    assert!(
        m <= 1 && (n <= 1 || c.cs > 0)
            || n <= 1 && c.rs > 0
            || c.cs > 0 && c.rs >= n * c.cs
            || c.rs > 0 && c.cs >= m * c.rs,
        "C aliases"
    );
    if m == 0 || n == 0 {
        return;
    }
    // The pointers are only offset when the view is non-empty; an empty k
    // makes sgemm touch A and B not at all.
    let ptr = |d: &[f32], off: usize, empty: bool| {
        if empty {
            d.as_ptr()
        } else {
            d[off..].as_ptr()
        }
    };
    let pa = ptr(a.data, a.off, k == 0);
    let pb = ptr(b.data, b.off, k == 0);
    let pc = c.data[c.off..].as_mut_ptr();
    // SAFETY: every element addressed through these pointers and strides was
    // checked above to lie inside its slice, C's elements do not alias, and
    // C is borrowed mutably (so it overlaps neither A nor B).
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            pa,
            a.rs as isize,
            a.cs as isize,
            pb,
            b.rs as isize,
            b.cs as isize,
            beta,
            pc,
            c.rs as isize,
            c.cs as isize,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_naive_product_with_transposed_views() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.91).cos()).collect();
        let mut c = vec![1.0f32; m * n];
        // A read as its transpose's transpose: A stored k x m.
        let at: Vec<f32> = (0..k * m).map(|i| a[(i % m) * k + i / m]).collect();
        sgemm(
            m,
            k,
            n,
            2.0,
            Mat {
                data: &at,
                off: 0,
                rs: 1,
                cs: m,
            },
            Mat {
                data: &b,
                off: 0,
                rs: n,
                cs: 1,
            },
            0.5,
            MatMut {
                data: &mut c,
                off: 0,
                rs: n,
                cs: 1,
            },
        );
        for i in 0..m {
            for j in 0..n {
                let dot: f32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                assert!((c[i * n + j] - (2.0 * dot + 0.5)).abs() < 1e-5);
            }
        }
    }
}
