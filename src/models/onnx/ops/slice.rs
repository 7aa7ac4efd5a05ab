//! Operators that pick or join parts: Concat, Split, Slice, Pad, Gather and
//! GatherND.

use std::sync::Arc;

use crate::error::Result;
use crate::ml::{DataType, Operand, OperandDescriptor, PaddingMode};
use crate::models::onnx::fold::{
    flat, get, index_map, norm_axis, slice_ranges, take, Args, Msg, SliceArgs,
};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::{Const, Data, Elem};

pub(super) fn concat<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let elem = wr.need(inputs, 0)?.elem();
    let mut parts = Vec::new();
    for v in inputs.iter().flatten() {
        // Empty pieces (shape subgraphs make them) add nothing.
        if !v.shape().contains(&0) {
            parts.push(wr.operand(v)?);
        }
    }
    let first = parts
        .first()
        .ok_or_else(|| wr.err("all inputs are empty"))?;
    let axis = wr.msg(norm_axis(attrs.int("axis", 0), first.shape().len()))?;
    let refs: Vec<&Operand> = parts.iter().collect();
    let y = if refs.len() == 1 {
        parts[0].clone()
    } else {
        wr.ctx(b.concat(&refs, axis))?
    };
    Ok(wr.keep(y, elem))
}

pub(super) fn gather<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let elem = wr.need(inputs, 0)?.elem();
    let x = wr.opnd(inputs, 0)?;
    let i = wr.opnd(inputs, 1)?;
    let axis = wr.msg(norm_axis(attrs.int("axis", 0), x.shape().len()))?;
    Ok(wr.keep(wr.ctx(b.gather(&x, &i, axis))?, elem))
}

/// GatherND (batch_dims 0) with constant indices: the index tuples become
/// flat offsets into the leading axes at import, and one gather reads them.
pub(super) fn gather_nd<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    if attrs.int("batch_dims", 0) != 0 {
        return Err(wr.err("batch_dims other than 0 is not supported"));
    }
    let elem = wr.need(inputs, 0)?.elem();
    let x = wr.opnd(inputs, 0)?;
    let idx = wr.need_const(inputs, 1, "indices")?.ok_or_else(|| {
        wr.err("input 1 (indices) must be known at import (a constant or from shapes)")
    })?;
    let ishape = idx.shape.clone();
    let shape = x.shape().to_vec();
    let (slices, _) = wr.msg(super::late::tuple_offsets(&shape, &idx))?;
    let k = ishape[ishape.len() - 1];
    let lead: usize = shape[..k].iter().product();
    let flat: Vec<i32> = slices.iter().map(|&s| s as i32).collect();
    let mut rest = vec![lead];
    rest.extend_from_slice(&shape[k..]);
    let b = wr.b;
    let data = wr.ctx(b.reshape(&x, &rest))?;
    let outer = &ishape[..ishape.len() - 1];
    let indices = wr.ctx(b.constant(
        OperandDescriptor::new(DataType::Int32, outer.to_vec()),
        bytemuck::cast_slice(&flat),
    ))?;
    Ok(wr.keep(wr.ctx(b.gather(&data, &indices, 0))?, elem))
}

pub(super) fn split<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let elem = wr.need(inputs, 0)?.elem();
    let x = wr.opnd(inputs, 0)?;
    let axis = wr.msg(norm_axis(attrs.int("axis", 0), x.shape().len()))?;
    let dim = x.shape()[axis];
    let given = wr.ints_in(inputs, attrs, 1, "split", 13)?;
    let sizes: Vec<usize> = match given {
        Some(s) if !s.is_empty() => s
            .iter()
            .map(|&v| usize::try_from(v).ok())
            .collect::<Option<_>>()
            .ok_or_else(|| wr.err(format!("split {s:?} must be non-negative")))?,
        _ => {
            let count = n.output.len().max(1);
            // num_outputs names the outputs the node has; a different
            // count (the fuzzers gave 2^62) has nothing to split into.
            if attrs.has("num_outputs") && attrs.int("num_outputs", 1) != count as i64 {
                return Err(wr.err(format!(
                    "num_outputs {} differs from the node's {count} outputs",
                    attrs.int("num_outputs", 1)
                )));
            }
            // Opset 18's num_outputs allows an uneven split: ceil-sized
            // parts, the last one smaller.
            let part = dim.div_ceil(count);
            (0..count)
                .map(|i| part.min(dim.saturating_sub(i * part)))
                .collect()
        }
    };
    if sizes.len() == 1 {
        return Ok(wr.keep(x, elem));
    }
    // Empty parts (sizes of 0) become empty host values: only shape
    // arithmetic and Concat can use them.
    let nonzero: Vec<usize> = sizes.iter().copied().filter(|&s| s > 0).collect();
    let mut parts = if nonzero.len() == 1 {
        vec![x.clone()]
    } else {
        wr.ctx(wr.b.split_sizes(&x, &nonzero, axis))?
    }
    .into_iter();
    Ok(sizes
        .iter()
        .map(|&s| {
            if s == 0 {
                let mut shape = x.shape().to_vec();
                shape[axis] = 0;
                let c = if elem.is_float() {
                    Const::floats(elem, shape, vec![])
                } else {
                    Const::ints(elem, shape, vec![])
                };
                Value::Const(Arc::new(c))
            } else {
                parts.next().map_or_else(
                    || Value::Const(Arc::new(Const::ints(elem, vec![0], vec![]))),
                    |op| Value::Op { op, elem },
                )
            }
        })
        .collect())
}

pub(super) fn slice<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let elem = wr.need(inputs, 0)?.elem();
    let x = wr.opnd(inputs, 0)?;
    let args = if wr.opset >= 10 {
        let c = |w: &Writer<'s>, i: usize, what: &str| -> Result<Option<Vec<i64>>> {
            Ok(w.need_const(inputs, i, what)?.map(|c| c.as_i64()))
        };
        SliceArgs {
            starts: c(wr, 1, "starts")?.unwrap_or_default(),
            ends: c(wr, 2, "ends")?.unwrap_or_default(),
            axes: c(wr, 3, "axes")?,
            steps: c(wr, 4, "steps")?,
        }
    } else {
        SliceArgs {
            starts: attrs.ints("starts").unwrap_or_default(),
            ends: attrs.ints("ends").unwrap_or_default(),
            axes: attrs.ints("axes"),
            steps: None,
        }
    };
    let ranges = wr.msg(slice_ranges(x.shape(), &args))?;
    if ranges.iter().any(|r| r.count == 0) {
        // An empty tensor has no values to compute: a host constant, which
        // the host stage (or a fold) can read; the graph cannot hold one.
        let shape = ranges.iter().map(|r| r.count).collect();
        let empty = if elem.is_float() {
            Const::floats(elem, shape, Vec::new())
        } else {
            Const::ints(elem, shape, Vec::new())
        };
        return Ok(vec![Value::Const(Arc::new(empty))]);
    }
    let b = wr.b;
    // Negative steps: take the same elements forwards, then reverse
    // those axes with a gather.
    let starts: Vec<usize> = ranges
        .iter()
        .map(|r| if r.step > 0 { r.start } else { r.start + (r.count as i64 - 1) * r.step } as usize)
        .collect();
    let sizes: Vec<usize> = ranges.iter().map(|r| r.count).collect();
    let strides: Vec<usize> = ranges
        .iter()
        .map(|r| r.step.unsigned_abs() as usize)
        .collect();
    let mut y = if starts.iter().all(|&s| s == 0)
        && sizes == x.shape()
        && strides.iter().all(|&s| s == 1)
    {
        x
    } else {
        wr.ctx(b.slice(&x, &starts, &sizes, Some(&strides)))?
    };
    for (axis, r) in ranges.iter().enumerate() {
        if r.step < 0 && r.count > 1 {
            let rev: Vec<i64> = (0..r.count as i64).rev().collect();
            let idx = wr.operand(&Value::Const(Arc::new(Const::ints(
                Elem::I64,
                vec![r.count],
                rev,
            ))))?;
            y = wr.ctx(b.gather(&y, &idx, axis))?;
        }
    }
    Ok(wr.keep(y, elem))
}

pub(super) fn pad<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let elem = wr.need(inputs, 0)?.elem();
    let x = wr.opnd(inputs, 0)?;
    let rank = x.shape().len();
    let (pads, value) = if wr.opset >= 11 {
        let pads = wr
            .need_const(inputs, 1, "pads")?
            .ok_or_else(|| wr.err("input 1 (pads) is missing"))?
            .as_i64();
        let value = wr
            .need_const(inputs, 2, "constant_value")?
            .map(|c| c.as_f32().first().copied().unwrap_or(0.0))
            .unwrap_or(0.0);
        let axes = wr.need_const(inputs, 3, "axes")?.map(|c| c.as_i64());
        let pads = match axes {
            None => pads,
            Some(axes) => {
                let mut full = vec![0; 2 * rank];
                if pads.len() != 2 * axes.len() {
                    return Err(wr.err("pads and axes differ in length"));
                }
                for (k, &a) in axes.iter().enumerate() {
                    let a = wr.msg(norm_axis(a, rank))?;
                    full[a] = pads[k];
                    full[rank + a] = pads[axes.len() + k];
                }
                full
            }
        };
        (pads, value)
    } else {
        (
            attrs.ints("pads").unwrap_or_default(),
            attrs.float("value", 0.0),
        )
    };
    if pads.len() != 2 * rank {
        return Err(wr.err(format!(
            "pads {pads:?} need {} values for rank {rank}",
            2 * rank
        )));
    }
    // No real padding comes near this; it keeps the crop arithmetic
    // below (negation, sums with the dimensions) from overflowing.
    const MAX_PAD: u64 = 1 << 31;
    if let Some(p) = pads.iter().find(|p| p.unsigned_abs() > MAX_PAD) {
        return Err(wr.err(format!("pad amount {p} is out of range (|pad| <= 2^31)")));
    }
    let mode = match attrs.string("mode", "constant").as_str() {
        "constant" => PaddingMode::Constant,
        "reflect" => PaddingMode::Reflection,
        "edge" => PaddingMode::Edge,
        m => {
            return Err(wr.err(format!(
                "mode '{m}' is not supported (constant, reflect and edge are)"
            )))
        }
    };
    let b = wr.b;
    let mut y = x;
    // Negative amounts crop: a slice first.
    if pads.iter().any(|&p| p < 0) {
        let shape = y.shape().to_vec();
        let starts: Vec<usize> = (0..rank).map(|a| (-pads[a]).max(0) as usize).collect();
        let sizes: Vec<usize> = (0..rank)
            .map(|a| {
                (shape[a] as i64 - (-pads[a]).max(0) - (-pads[rank + a]).max(0)).max(0) as usize
            })
            .collect();
        y = wr.ctx(b.slice(&y, &starts, &sizes, None))?;
    }
    if pads.iter().any(|&p| p > 0) {
        let begin: Vec<usize> = pads[..rank].iter().map(|&p| p.max(0) as usize).collect();
        let end: Vec<usize> = pads[rank..].iter().map(|&p| p.max(0) as usize).collect();
        y = wr.ctx(b.pad(&y, &begin, &end, mode, value))?;
    }
    Ok(wr.keep(y, elem))
}

pub(super) fn fold_concat(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
    concat_consts(c, attrs.int("axis", 0)).map(|c| vec![c])
}

pub(super) fn fold_gather(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
    let (x, i) = (get(c, 0)?, get(c, 1)?);
    gather_const(x, i, attrs.int("axis", 0)).map(|c| vec![c])
}

pub(super) fn fold_slice(args: &Args<'_>) -> Msg {
    let Args {
        c, attrs, opset, ..
    } = *args;
    let x = get(c, 0)?;
    let params = if opset >= 10 {
        let opt = |i: usize| c.get(i).copied().flatten().map(Const::as_i64);
        SliceArgs {
            starts: get(c, 1)?.as_i64(),
            ends: get(c, 2)?.as_i64(),
            axes: opt(3),
            steps: opt(4),
        }
    } else {
        SliceArgs {
            starts: attrs.ints("starts").unwrap_or_default(),
            ends: attrs.ints("ends").unwrap_or_default(),
            axes: attrs.ints("axes"),
            steps: None,
        }
    };
    let ranges = slice_ranges(&x.shape, &params)?;
    let out: Vec<usize> = ranges.iter().map(|r| r.count).collect();
    let idx = index_map(&out, |o, i| {
        let v: Vec<usize> = o
            .iter()
            .zip(&ranges)
            .map(|(&k, r)| (r.start + k as i64 * r.step) as usize)
            .collect();
        flat(&x.shape, &v, i)
    })?;
    Ok(vec![take(x, out, &idx)])
}

pub(super) fn concat_consts(c: &[Option<&Const>], axis: i64) -> std::result::Result<Const, String> {
    let parts: Vec<&Const> = c.iter().flatten().copied().collect();
    let first = parts.first().ok_or("no inputs")?;
    let rank = first.shape.len();
    let axis = norm_axis(axis, rank)?;
    let mut out = first.shape.clone();
    out[axis] = 0;
    for p in &parts {
        let fits = p.shape.len() == rank
            && (0..rank).all(|k| k == axis || p.shape[k] == first.shape[k])
            && p.elem == first.elem;
        if !fits {
            return Err(format!(
                "inputs {:?} and {:?} do not concatenate",
                first.shape, p.shape
            ));
        }
        out[axis] += p.shape[axis];
    }
    let outer: usize = out[..axis].iter().product();
    let mut f = Vec::new();
    let mut i = Vec::new();
    for o in 0..outer {
        for p in &parts {
            let block: usize = p.shape[axis..].iter().product();
            match &p.data {
                Data::F(v) => f.extend_from_slice(&v[o * block..(o + 1) * block]),
                Data::I(v) => i.extend_from_slice(&v[o * block..(o + 1) * block]),
            }
        }
    }
    let data = if matches!(first.data, Data::F(_)) {
        Data::F(f)
    } else {
        Data::I(i)
    };
    Ok(Const {
        elem: first.elem,
        shape: out,
        data,
    })
}

pub(super) fn gather_const(
    x: &Const,
    indices: &Const,
    axis: i64,
) -> std::result::Result<Const, String> {
    let axis = norm_axis(axis, x.shape.len())?;
    let d = x.shape[axis] as i64;
    let ind: Vec<usize> = indices
        .as_i64()
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + d } else { i };
            if (0..d).contains(&j) {
                Ok(j as usize)
            } else {
                Err(format!("index {i} is out of range for dimension {d}"))
            }
        })
        .collect::<std::result::Result<_, _>>()?;
    let q = indices.shape.len();
    let mut out = x.shape[..axis].to_vec();
    out.extend(&indices.shape);
    out.extend(&x.shape[axis + 1..]);
    let idx = index_map(&out, |o, _| {
        let inner: usize = o[axis..axis + q]
            .iter()
            .zip(&indices.shape)
            .fold(0, |acc, (&c, &n)| acc * n + c);
        let mut v = o[..axis].to_vec();
        v.push(ind[inner]);
        v.extend(&o[axis + q..]);
        flat(&x.shape, &v, 0)
    })?;
    Ok(take(x, out, &idx))
}
