//! Element-wise ops with numpy broadcasting, the unary functions and cast.

use rayon::prelude::*;

use super::epilogue::Epilogue;
use super::Values;
use crate::ml::ops::{Activation, BinaryOp};
use crate::ml::types::{strides, DataType, OperandDescriptor};

/// Per axis of `out`, the stride into an operand of shape `shape` broadcast
/// (numpy rules) to it: 0 along axes the operand lacks or has as 1.
pub(crate) fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let offset = out.len() - shape.len();
    let s = strides(shape);
    (0..out.len())
        .map(|k| match k.checked_sub(offset) {
            Some(j) if shape[j] != 1 => s[j],
            _ => 0,
        })
        .collect()
}

/// For each output element, the index into an operand broadcast to `out`.
/// Called once per element, so it walks the coordinates without allocating.
pub(crate) fn broadcast_index(
    d: &OperandDescriptor,
    out: &OperandDescriptor,
) -> impl Fn(usize) -> usize + Sync {
    // (extent, stride into the operand) per output axis, innermost first.
    let axes: Vec<(usize, usize)> = out
        .shape
        .iter()
        .copied()
        .zip(broadcast_strides(&d.shape, &out.shape))
        .rev()
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
pub(crate) fn map_elements<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
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
        BinaryOp::Pow => a.powf(b),
    }
}

fn apply_i32(op: BinaryOp, a: i32, b: i32) -> i32 {
    match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        // Truncating, as ONNX's integer Div and WGSL do; division by zero
        // gives 0 rather than trapping, like the GPU kernel, and
        // i32::MIN / -1 wraps to i32::MIN, as WGSL defines it.
        BinaryOp::Div if b == 0 => 0,
        BinaryOp::Div => a.wrapping_div(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
        BinaryOp::Pow => unreachable!("pow is float-only (checked at build)"),
    }
}

/// Output elements per parallel task of the row-wise kernels.
const TASK_ELEMENTS: usize = 1 << 14;

/// A broadcast walked one innermost run at a time. Axes of extent 1 are
/// dropped and neighbouring axes along which both operands stay contiguous
/// (or both stay broadcast) are merged, so the run is as long as the layout
/// allows and each operand steps through it by 0 or 1.
struct Broadcast {
    /// Extent of each remaining outer axis, innermost first, with each
    /// operand's stride along it.
    outer: Vec<(usize, [usize; 2])>,
    run: usize,
    step: [usize; 2],
}

impl Broadcast {
    fn new(da: &OperandDescriptor, db: &OperandDescriptor, out: &OperandDescriptor) -> Broadcast {
        let (sa, sb) = (
            broadcast_strides(&da.shape, &out.shape),
            broadcast_strides(&db.shape, &out.shape),
        );
        // (extent, strides), innermost first, extent-1 axes dropped.
        let mut axes: Vec<(usize, [usize; 2])> = Vec::new();
        for k in (0..out.rank()).rev().filter(|&k| out.shape[k] != 1) {
            let st = [sa[k], sb[k]];
            match axes.last_mut() {
                Some((extent, inner)) if (0..2).all(|o| st[o] == inner[o] * *extent) => {
                    *extent *= out.shape[k];
                }
                _ => axes.push((out.shape[k], st)),
            }
        }
        let (run, step) = match axes.first() {
            Some(&(extent, st)) if st.iter().all(|&s| s <= 1) => {
                axes.remove(0);
                (extent, st)
            }
            _ => (1, [0, 0]),
        };
        Broadcast {
            outer: axes,
            run,
            step,
        }
    }

    /// Each operand's index of the first element of run `r`.
    fn starts(&self, mut r: usize) -> [usize; 2] {
        let mut at = [0, 0];
        for &(extent, st) in &self.outer {
            let c = r % extent;
            r /= extent;
            at[0] += c * st[0];
            at[1] += c * st[1];
        }
        at
    }

    /// `f` over every output element, filled run by run on all cores, with
    /// `post` run on each task's share. The four step patterns get loops of
    /// their own so each one vectorises.
    fn map<T: Copy + Default + Send + Sync>(
        &self,
        n: usize,
        (x, y): (&[T], &[T]),
        f: impl Fn(T, T) -> T + Sync,
        post: &(impl Fn(&mut [T]) + Sync),
    ) -> Vec<T> {
        let mut dst = vec![T::default(); n];
        if n == 0 {
            return dst;
        }
        let run = self.run;
        // Tasks split the output evenly; a task may start or end inside a run.
        let chunk = TASK_ELEMENTS;
        let fill = |(t, task): (usize, &mut [T])| {
            let mut p = t * chunk;
            let mut out = &mut *task;
            while !out.is_empty() {
                let (r, off) = (p / run, p % run);
                let len = (run - off).min(out.len());
                let (seg, rest) = out.split_at_mut(len);
                let [ia, ib] = self.starts(r);
                let (ia, ib) = (ia + off * self.step[0], ib + off * self.step[1]);
                match self.step {
                    [1, 1] => {
                        let (a, b) = (&x[ia..][..len], &y[ib..][..len]);
                        for ((o, &p), &q) in seg.iter_mut().zip(a).zip(b) {
                            *o = f(p, q);
                        }
                    }
                    [1, 0] => {
                        let q = y[ib];
                        for (o, &p) in seg.iter_mut().zip(&x[ia..][..len]) {
                            *o = f(p, q);
                        }
                    }
                    [0, 1] => {
                        let p = x[ia];
                        for (o, &q) in seg.iter_mut().zip(&y[ib..][..len]) {
                            *o = f(p, q);
                        }
                    }
                    _ => seg.fill(f(x[ia], y[ib])),
                }
                out = rest;
                p += len;
            }
            post(task);
        };
        if n <= chunk {
            fill((0, &mut dst));
        } else {
            dst.par_chunks_mut(chunk).enumerate().for_each(fill);
        }
        dst
    }
}

pub(crate) fn binary(
    op: BinaryOp,
    (a, da): (&Values, &OperandDescriptor),
    (b, db): (&Values, &OperandDescriptor),
    out: &OperandDescriptor,
    ep: Epilogue,
) -> Values {
    let walk = Broadcast::new(da, db, out);
    let n = out.element_count();
    // One instance per op, so the operator is not matched per element.
    macro_rules! each_op {
        ($xy:expr, $wrap:path, $apply:ident, $post:expr) => {{
            let (xy, post) = ($xy, $post);
            $wrap(match op {
                BinaryOp::Add => walk.map(n, xy, |p, q| $apply(BinaryOp::Add, p, q), post),
                BinaryOp::Sub => walk.map(n, xy, |p, q| $apply(BinaryOp::Sub, p, q), post),
                BinaryOp::Mul => walk.map(n, xy, |p, q| $apply(BinaryOp::Mul, p, q), post),
                BinaryOp::Div => walk.map(n, xy, |p, q| $apply(BinaryOp::Div, p, q), post),
                BinaryOp::Max => walk.map(n, xy, |p, q| $apply(BinaryOp::Max, p, q), post),
                BinaryOp::Min => walk.map(n, xy, |p, q| $apply(BinaryOp::Min, p, q), post),
                BinaryOp::Pow => walk.map(n, xy, |p, q| $apply(BinaryOp::Pow, p, q), post),
            })
        }};
    }
    match (a, b) {
        (Values::F32(x), Values::F32(y)) => {
            each_op!(
                (&x[..], &y[..]),
                Values::F32,
                apply_f32,
                &|t: &mut [f32]| ep.apply(t)
            )
        }
        // Activations and float16 rounding only ever apply to floats.
        (Values::I32(x), Values::I32(y)) => {
            each_op!(
                (&x[..], &y[..]),
                Values::I32,
                apply_i32,
                &|_: &mut [i32]| {}
            )
        }
        _ => unreachable!("binary operand types are checked at build"),
    }
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

/// A unary function on float or int32 values (`abs` and `neg` take both).
pub(crate) fn unary(a: &Activation, x: &Values) -> Values {
    match x {
        Values::I32(x) if a.takes_int() => Values::I32(x.iter().map(|&v| a.apply_i32(v)).collect()),
        other => Values::F32(other.f32().iter().map(|&v| a.apply(v)).collect()),
    }
}

#[cfg(test)]
mod tests {
    //! The run-wise broadcast against per-element coordinate arithmetic.

    use super::*;
    use crate::ml::cpu::test_values as values;
    use crate::ml::ops::Activation;

    /// Index into an operand of shape `d` broadcast to `out` at element `i`.
    fn naive_index(d: &[usize], out: &[usize], mut i: usize) -> usize {
        let offset = out.len() - d.len();
        let s = strides(d);
        let mut index = 0;
        for k in (0..out.len()).rev() {
            let c = i % out[k];
            i /= out[k];
            if k >= offset && d[k - offset] != 1 {
                index += c * s[k - offset];
            }
        }
        index
    }

    #[test]
    fn binary_matches_per_element_broadcast() {
        let cases: [(&[usize], &[usize], &[usize]); 9] = [
            (&[1, 37, 41, 16], &[1, 1, 1, 16], &[1, 37, 41, 16]),
            (&[1, 5, 130, 130], &[1, 5, 1, 1], &[1, 5, 130, 130]),
            (&[3, 1, 7], &[4, 1], &[3, 4, 7]),
            (&[200, 300], &[200, 300], &[200, 300]),
            (&[1], &[9, 1, 11], &[9, 1, 11]),
            (&[], &[129, 257], &[129, 257]),
            (&[2, 1, 3, 1], &[1, 6, 1, 5], &[2, 6, 3, 5]),
            (&[0, 3], &[1, 3], &[0, 3]),
            (&[65, 1], &[1, 300], &[65, 300]),
        ];
        for (i, (a, b, out)) in cases.into_iter().enumerate() {
            let (da, db) = (OperandDescriptor::f32(a), OperandDescriptor::f32(b));
            let dout = OperandDescriptor::f32(out);
            let x = values(da.element_count(), i as u32);
            let y = values(db.element_count(), 50 + i as u32);
            for op in [BinaryOp::Sub, BinaryOp::Div, BinaryOp::Max] {
                let relu = [Activation::Relu];
                let got = binary(
                    op,
                    (&Values::F32(x.clone()), &da),
                    (&Values::F32(y.clone()), &db),
                    &dout,
                    Epilogue::new(&relu, false),
                );
                let want: Vec<f32> = (0..dout.element_count())
                    .map(|e| {
                        let p = x[naive_index(a, out, e)];
                        let q = y[naive_index(b, out, e)];
                        apply_f32(op, p, q).max(0.0)
                    })
                    .collect();
                assert_eq!(got.f32(), &want[..], "case {i}, {op:?}");
            }
            let xi: Vec<i32> = x.iter().map(|v| (v * 100.0) as i32).collect();
            let yi: Vec<i32> = y.iter().map(|v| (v * 100.0) as i32).collect();
            let got = binary(
                BinaryOp::Sub,
                (&Values::I32(xi.clone()), &da),
                (&Values::I32(yi.clone()), &db),
                &dout,
                Epilogue::new(&[], false),
            );
            let want: Vec<i32> = (0..dout.element_count())
                .map(|e| xi[naive_index(a, out, e)] - yi[naive_index(b, out, e)])
                .collect();
            assert_eq!(got, Values::I32(want), "case {i}, int32");
        }
    }
}
