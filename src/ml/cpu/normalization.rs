//! The normalization core, `(x - mean) / sqrt(variance + epsilon)` with
//! mean and variance broadcast to the input (layer, instance and batch
//! normalization all end in it; see `builder/normalization.rs`).

use super::elementwise::broadcast_index;
use super::Values;
use crate::ml::types::OperandDescriptor;

pub(crate) fn normalize(
    (x, d): (&Values, &OperandDescriptor),
    (mean, dm): (&Values, &OperandDescriptor),
    (variance, dv): (&Values, &OperandDescriptor),
    epsilon: f32,
) -> Values {
    let (x, mean, variance) = (x.f32(), mean.f32(), variance.f32());
    let (im, iv) = (broadcast_index(dm, d), broadcast_index(dv, d));
    Values::F32(
        x.iter()
            .enumerate()
            .map(|(i, &v)| (v - mean[im(i)]) / (variance[iv(i)] + epsilon).sqrt())
            .collect(),
    )
}
