//! concat along one axis, in any element type.

use super::Values;
use crate::ml::types::OperandDescriptor;

pub(crate) fn concat(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    axis: usize,
) -> Values {
    let outer: usize = out.shape[..axis].iter().product();
    let inner: usize = out.shape[axis + 1..].iter().product();
    let mut result = match args[0].0 {
        Values::F32(_) => Values::F32(Vec::with_capacity(out.element_count())),
        Values::I32(_) => Values::I32(Vec::with_capacity(out.element_count())),
        Values::U8(_) => Values::U8(Vec::with_capacity(out.element_count())),
    };
    for o in 0..outer {
        for (v, d) in args {
            let chunk = d.shape[axis] * inner;
            let range = o * chunk..(o + 1) * chunk;
            match (&mut result, v) {
                (Values::F32(r), Values::F32(x)) => r.extend_from_slice(&x[range]),
                (Values::I32(r), Values::I32(x)) => r.extend_from_slice(&x[range]),
                (Values::U8(r), Values::U8(x)) => r.extend_from_slice(&x[range]),
                _ => unreachable!("concat of mixed types is refused at build"),
            }
        }
    }
    result
}
