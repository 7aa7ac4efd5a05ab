//! The NCHW <-> NHWC permutations, of shapes, axes and constant bytes.

/// Transpose permutation from NCHW to NHWC (output axis i is input axis
/// `TO_NHWC[i]`), as WebNN's transpose takes it.
pub(super) const TO_NHWC: [usize; 4] = [0, 2, 3, 1];

/// Transpose permutation from NHWC back to NCHW.
pub(super) const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

/// Where NCHW axis `a` is in NHWC.
pub(super) fn axis(a: usize) -> usize {
    TO_NCHW[a]
}

/// An NCHW shape (or per-axis list) in NHWC order.
pub(super) fn nhwc<T: Copy>(v: &[T]) -> Vec<T> {
    TO_NHWC.iter().map(|&i| v[i]).collect()
}

/// A shape of rank up to 4, broadcast to rank 4 (leading 1s), in NHWC.
pub(super) fn broadcast_nhwc(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; 4 - shape.len()];
    s.extend_from_slice(shape);
    nhwc(&s)
}

/// Whether `perm` of `shape` moves only extents of 1, so that the data
/// keep their order (a reshape does it).
pub(super) fn moves_only_ones(shape: &[usize], perm: &[usize]) -> bool {
    let order = |idx: &mut dyn Iterator<Item = usize>| -> Vec<usize> {
        idx.filter(|&i| shape[i] != 1).collect()
    };
    order(&mut (0..shape.len())) == order(&mut perm.iter().copied())
}

/// The bytes of a row-major tensor of `shape` (elements of `size` bytes),
/// transposed by `perm`.
pub(super) fn transpose_bytes(
    bytes: &[u8],
    shape: &[usize],
    perm: &[usize],
    size: usize,
) -> Vec<u8> {
    let strides = crate::ml::types::strides(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let total: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(total * size);
    let mut index = vec![0usize; out_shape.len()];
    for _ in 0..total {
        let from: usize = index.iter().zip(perm).map(|(&i, &p)| i * strides[p]).sum();
        out.extend_from_slice(&bytes[from * size..(from + 1) * size]);
        for k in (0..index.len()).rev() {
            index[k] += 1;
            if index[k] < out_shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
    out
}
