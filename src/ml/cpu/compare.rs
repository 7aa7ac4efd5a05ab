//! Comparisons, logicalNot and where: the ops with uint8 sides, element by
//! element with numpy broadcasting.

use super::elementwise::{broadcast_index, map_elements};
use super::Values;
use crate::ml::ops::CompareOp;
use crate::ml::types::OperandDescriptor;

fn holds<T: PartialOrd>(op: CompareOp, a: T, b: T) -> bool {
    match op {
        CompareOp::Equal => a == b,
        CompareOp::Greater => a > b,
        CompareOp::GreaterOrEqual => a >= b,
        CompareOp::Lesser => a < b,
        CompareOp::LesserOrEqual => a <= b,
    }
}

pub(crate) fn compare(
    op: CompareOp,
    (a, da): (&Values, &OperandDescriptor),
    (b, db): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
) -> Values {
    let (ia, ib) = (broadcast_index(da, out), broadcast_index(db, out));
    let n = out.element_count();
    Values::U8(match (a, b) {
        (Values::F32(x), Values::F32(y)) => {
            map_elements(n, |i| holds(op, x[ia(i)], y[ib(i)]) as u8)
        }
        (Values::I32(x), Values::I32(y)) => {
            map_elements(n, |i| holds(op, x[ia(i)], y[ib(i)]) as u8)
        }
        _ => unreachable!("comparison operand types are checked at build"),
    })
}

pub(crate) fn logical_not(x: &Values) -> Values {
    match x {
        Values::U8(x) => Values::U8(x.iter().map(|&v| (v == 0) as u8).collect()),
        _ => unreachable!("logicalNot takes uint8 (checked at build)"),
    }
}

pub(crate) fn where_(
    (c, dc): (&Values, &OperandDescriptor),
    (t, dt): (&Values, &OperandDescriptor),
    (f, df): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
) -> Values {
    let Values::U8(c) = c else {
        unreachable!("where's condition is uint8 (checked at build)")
    };
    let (ic, it, i_f) = (
        broadcast_index(dc, out),
        broadcast_index(dt, out),
        broadcast_index(df, out),
    );
    let n = out.element_count();
    macro_rules! pick {
        ($wrap:path, $t:expr, $f:expr) => {
            $wrap(map_elements(n, |i| {
                if c[ic(i)] != 0 {
                    $t[it(i)]
                } else {
                    $f[i_f(i)]
                }
            }))
        };
    }
    match (t, f) {
        (Values::F32(t), Values::F32(f)) => pick!(Values::F32, t, f),
        (Values::I32(t), Values::I32(f)) => pick!(Values::I32, t, f),
        (Values::U8(t), Values::U8(f)) => pick!(Values::U8, t, f),
        _ => unreachable!("where's value types are checked at build"),
    }
}
