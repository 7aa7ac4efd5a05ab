//! pad: constant, edge or reflection padding.

use super::layout::{coords, pick_or_fill};
use super::Values;
use crate::ml::ops::PaddingMode;
use crate::ml::types::{strides, OperandDescriptor};

pub(crate) fn pad(
    (v, d): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    beginning: &[usize],
    mode: PaddingMode,
    value: f32,
) -> Values {
    let in_strides = strides(&d.shape);
    pick_or_fill(v, out.element_count(), value, |i| {
        let mut c = vec![0; out.rank()];
        coords(i, &out.shape, &mut c);
        let mut j = 0;
        for k in 0..c.len() {
            let n = d.shape[k] as isize;
            let mut x = c[k] as isize - beginning[k] as isize;
            if x < 0 || x >= n {
                match mode {
                    PaddingMode::Constant => return None,
                    PaddingMode::Edge => x = x.clamp(0, n - 1),
                    PaddingMode::Reflection => {
                        x = if x < 0 { -x } else { 2 * (n - 1) - x };
                    }
                }
            }
            j += x as usize * in_strides[k];
        }
        Some(j)
    })
}
