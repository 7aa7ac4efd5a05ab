//! Element-wise ops with numpy broadcasting, softmax and cast.

use rayon::prelude::*;

use super::Values;
use crate::ml::ops::BinaryOp;
use crate::ml::types::{strides, DataType, OperandDescriptor};

/// For each output element, the index into an operand broadcast to `out`.
/// Called once per element, so it walks the coordinates without allocating.
pub(crate) fn broadcast_index(
    d: &OperandDescriptor,
    out: &OperandDescriptor,
) -> impl Fn(usize) -> usize + Sync {
    let offset = out.rank() - d.rank();
    let s = strides(&d.shape);
    // (extent, stride into the operand) per output axis, innermost first.
    let axes: Vec<(usize, usize)> = (0..out.rank())
        .rev()
        .map(|k| {
            let stride = if k < offset || d.shape[k - offset] == 1 {
                0
            } else {
                s[k - offset]
            };
            (out.shape[k], stride)
        })
        .collect();
    move |mut i| {
        let mut index = 0;
        for &(extent, stride) in &axes {
            index += (i % extent) * stride;
            i /= extent;
        }
        index
    }
}

/// Below this many elements a kernel stays on the calling thread.
const PARALLEL_MIN: usize = 1 << 14;

/// `f(i)` for every output element, on all cores for large outputs.
fn map_elements<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if n < PARALLEL_MIN {
        (0..n).map(f).collect()
    } else {
        (0..n).into_par_iter().with_min_len(4096).map(f).collect()
    }
}

fn apply_f32(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
    }
}

fn apply_i32(op: BinaryOp, a: i32, b: i32) -> i32 {
    match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        // Division by zero gives 0 rather than trapping, like the GPU kernel.
        BinaryOp::Div => a.checked_div(b).unwrap_or(0),
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
    }
}

pub(crate) fn binary(
    op: BinaryOp,
    (a, da): (&Values, &OperandDescriptor),
    (b, db): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
) -> Values {
    let ia = broadcast_index(da, out);
    let ib = broadcast_index(db, out);
    let n = out.element_count();
    // The common cases in real models: same shapes, or a per-channel or
    // scalar operand; the index closures cover them all.
    match (a, b) {
        (Values::F32(x), Values::F32(y)) if da.shape == db.shape => {
            Values::F32(map_elements(n, |i| apply_f32(op, x[i], y[i])))
        }
        (Values::F32(x), Values::F32(y)) => {
            Values::F32(map_elements(n, |i| apply_f32(op, x[ia(i)], y[ib(i)])))
        }
        (Values::I32(x), Values::I32(y)) => {
            Values::I32(map_elements(n, |i| apply_i32(op, x[ia(i)], y[ib(i)])))
        }
        _ => unreachable!("binary operand types are checked at build"),
    }
}

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

pub(crate) fn softmax((x, d): (&Values, &OperandDescriptor), axis: usize) -> Values {
    let x = x.f32();
    let len = d.shape[axis];
    let inner: usize = d.shape[axis + 1..].iter().product();
    let outer: usize = d.shape[..axis].iter().product();
    let mut y = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * len * inner + k * inner + i;
            let max = (0..len).map(|k| x[at(k)]).fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = (0..len).map(|k| (x[at(k)] - max).exp()).sum();
            for k in 0..len {
                y[at(k)] = (x[at(k)] - max).exp() / sum;
            }
        }
    }
    Values::F32(y)
}

/// float -> int truncates toward zero and saturates; int -> uint8 saturates.
pub(crate) fn cast(v: &Values, to: DataType) -> Values {
    let as_f32: Vec<f32> = match v {
        Values::F32(x) => x.clone(),
        Values::I32(x) => x.iter().map(|&e| e as f32).collect(),
        Values::U8(x) => x.iter().map(|&e| e as f32).collect(),
    };
    match (v, to) {
        (_, DataType::Float32 | DataType::Float16) => Values::F32(as_f32),
        (Values::I32(x), DataType::Int32) => Values::I32(x.clone()),
        (Values::U8(x), DataType::Int32) => Values::I32(x.iter().map(|&e| e as i32).collect()),
        (Values::F32(x), DataType::Int32) => {
            Values::I32(x.iter().map(|&e| e.trunc() as i32).collect())
        }
        (Values::U8(x), DataType::Uint8) => Values::U8(x.clone()),
        (Values::I32(x), DataType::Uint8) => {
            Values::U8(x.iter().map(|&e| e.clamp(0, 255) as u8).collect())
        }
        (Values::F32(x), DataType::Uint8) => Values::U8(
            x.iter()
                .map(|&e| e.trunc().clamp(0.0, 255.0) as u8)
                .collect(),
        ),
    }
}
