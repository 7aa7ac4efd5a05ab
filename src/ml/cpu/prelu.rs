//! prelu: x where x >= 0, else x times the slope broadcast to it.

use super::elementwise::{broadcast_index, map_elements};
use super::Values;
use crate::ml::types::OperandDescriptor;

pub(crate) fn prelu(
    (x, _): (&Values, &OperandDescriptor),
    (s, ds): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
) -> Values {
    let is = broadcast_index(ds, out);
    let (x, s) = (x.f32(), s.f32());
    Values::F32(map_elements(out.element_count(), |i| {
        if x[i] >= 0.0 {
            x[i]
        } else {
            x[i] * s[is(i)]
        }
    }))
}
