//! Operators whose result sizes depend on the data (NonZero,
//! NonMaxSuppression) or that exporters write in the post-processing after
//! them or in its place (ScatterND, TopK, GatherElements), computed on
//! the host: at import when their inputs are constants, else per run in the
//! graph's host stage (`models/onnx/tail.rs`), which also computes the
//! graph operators that come after them there (GatherND, Pad, Split: [`host`];
//! reductions, which also fold at import on small constants such as the
//! image sizes torchvision's transform computes: [`fold_reduce`]).

use super::super::fold::{get, index_map, norm_axis, take, Args, Msg};
use super::super::graph::{Attrs, Value, Writer};
use super::super::proto;
use super::super::tensor::{Const, Data, Elem};
use crate::error::Result;

/// A host operator's graph form: never written (`graph.rs` defers a node
/// whose inputs the graph computes to the host stage, and folds one whose
/// inputs are constants).
pub(super) fn in_tail<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    _inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    Err(wr.err("computed on the host only, after the graph"))
}

/// The host evaluation of a graph operator (one the importer otherwise
/// writes as graph operations) where it follows a data-dependent size.
pub(super) fn host(op: &str) -> Option<fn(&Args<'_>) -> Msg> {
    match op {
        "GatherND" => Some(fold_gather_nd),
        "Pad" => Some(fold_pad),
        "Split" => Some(fold_split),
        _ => None,
    }
}

/// ONNX NonZero: the coordinates of the non-zero elements, [rank, count],
/// in row-major order.
pub(super) fn fold_non_zero(args: &Args<'_>) -> Msg {
    let x = get(args.c, 0)?;
    let nonzero: Vec<usize> = match &x.data {
        Data::F(v) => (0..v.len()).filter(|&i| v[i] != 0.0).collect(),
        Data::I(v) => (0..v.len()).filter(|&i| v[i] != 0).collect(),
    };
    let rank = x.shape.len();
    let mut coords = vec![0i64; rank * nonzero.len()];
    for (k, &i) in nonzero.iter().enumerate() {
        let mut rest = i;
        for axis in (0..rank).rev() {
            coords[axis * nonzero.len() + k] = (rest % x.shape[axis]) as i64;
            rest /= x.shape[axis];
        }
    }
    Ok(vec![Const::ints(
        Elem::I64,
        vec![rank, nonzero.len()],
        coords,
    )])
}

/// Which slice of `data_shape` each of `indices`' last-axis tuples names
/// (its flat index over the tuple's axes), and the size of those slices.
pub(super) fn tuple_offsets(
    data_shape: &[usize],
    indices: &Const,
) -> std::result::Result<(Vec<usize>, usize), String> {
    let k = *indices
        .shape
        .last()
        .ok_or("indices must have at least one dimension")?;
    if k == 0 || k > data_shape.len() {
        return Err(format!(
            "index tuples of {k} do not fit data of rank {}",
            data_shape.len()
        ));
    }
    let inner: usize = data_shape[k..].iter().product();
    let values = indices.as_i64();
    let mut slices = Vec::with_capacity(values.len() / k);
    for tuple in values.chunks(k) {
        let mut flat = 0usize;
        for (axis, &i) in tuple.iter().enumerate() {
            let d = data_shape[axis] as i64;
            let i = if i < 0 { i + d } else { i };
            if !(0..d).contains(&i) {
                return Err(format!(
                    "index {tuple:?} is out of range for {data_shape:?}"
                ));
            }
            flat = flat * data_shape[axis] + i as usize;
        }
        slices.push(flat);
    }
    Ok((slices, inner))
}

fn fold_gather_nd(args: &Args<'_>) -> Msg {
    if args.attrs.int("batch_dims", 0) != 0 {
        return Err("batch_dims other than 0 is not supported".into());
    }
    let (x, indices) = (get(args.c, 0)?, get(args.c, 1)?);
    let (slices, inner) = tuple_offsets(&x.shape, indices)?;
    let k = indices.shape[indices.shape.len() - 1];
    let mut shape = indices.shape[..indices.shape.len() - 1].to_vec();
    shape.extend_from_slice(&x.shape[k..]);
    let idx: Vec<usize> = slices
        .iter()
        .flat_map(|&s| s * inner..(s + 1) * inner)
        .collect();
    Ok(vec![take(x, shape, &idx)])
}

/// ONNX ScatterND: `data` with the slices `indices` name replaced by (or
/// combined with, by `reduction`) `updates`, in index order.
pub(super) fn fold_scatter_nd(args: &Args<'_>) -> Msg {
    let (x, indices, updates) = (get(args.c, 0)?, get(args.c, 1)?, get(args.c, 2)?);
    let (slices, inner) = tuple_offsets(&x.shape, indices)?;
    if updates.len() != slices.len() * inner {
        return Err(format!(
            "updates {:?} do not match {} slices of {inner} elements",
            updates.shape,
            slices.len()
        ));
    }
    let reduction = args.attrs.string("reduction", "none");
    let combine: fn(f64, f64) -> f64 = match reduction.as_str() {
        "none" => |_, u| u,
        "add" => |a, u| a + u,
        "mul" => |a, u| a * u,
        "max" => f64::max,
        "min" => f64::min,
        other => return Err(format!("reduction '{other}' is not an ONNX reduction")),
    };
    let mut out = x.clone();
    let positions = slices.iter().flat_map(|&s| s * inner..(s + 1) * inner);
    match (&mut out.data, &updates.data) {
        (Data::F(v), Data::F(u)) => {
            for (p, &new) in positions.zip(u) {
                v[p] = combine(f64::from(v[p]), f64::from(new)) as f32;
            }
        }
        (Data::I(v), Data::I(u)) => {
            for (p, &new) in positions.zip(u) {
                v[p] = combine(v[p] as f64, new as f64) as i64;
            }
        }
        _ => return Err("data and updates differ in type".into()),
    }
    Ok(vec![out])
}

/// ONNX Pad in its constant mode (the form exporters write after a
/// data-dependent size: a result padded to a fixed count of rows).
fn fold_pad(args: &Args<'_>) -> Msg {
    let Args {
        c, attrs, opset, ..
    } = *args;
    let x = get(c, 0)?;
    let mode = attrs.string("mode", "constant");
    if mode != "constant" {
        return Err(format!(
            "mode '{mode}' is computed only in the graph; after a data-dependent size only \
             'constant' is"
        ));
    }
    let rank = x.shape.len();
    let (pads, value) = if opset >= 11 {
        let pads = get(c, 1)?.as_i64();
        let value = c
            .get(2)
            .copied()
            .flatten()
            .and_then(|v| v.as_f32().first().copied());
        (pads, value.unwrap_or(0.0))
    } else {
        (
            attrs.ints("pads").unwrap_or_default(),
            attrs.float("value", 0.0),
        )
    };
    let axes: Vec<usize> = match c.get(3).copied().flatten() {
        Some(a) => a
            .as_i64()
            .iter()
            .map(|&a| norm_axis(a, rank))
            .collect::<std::result::Result<_, _>>()?,
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(format!("pads {pads:?} do not fit {} axes", axes.len()));
    }
    let mut before = vec![0i64; rank];
    let mut after = vec![0i64; rank];
    for (k, &a) in axes.iter().enumerate() {
        before[a] = pads[k];
        after[a] = pads[k + axes.len()];
    }
    let out: Vec<usize> = (0..rank)
        .map(|a| {
            let d = x.shape[a] as i64 + before[a] + after[a];
            usize::try_from(d).map_err(|_| format!("pads {pads:?} leave a negative size"))
        })
        .collect::<std::result::Result<_, _>>()?;
    // Each output element's source, or usize::MAX where it is padding.
    let idx = index_map(&out, |o, _| {
        let mut flat = 0usize;
        for a in 0..rank {
            let i = o[a] as i64 - before[a];
            if i < 0 || i >= x.shape[a] as i64 {
                return usize::MAX;
            }
            flat = flat * x.shape[a] + i as usize;
        }
        flat
    })?;
    let data = match &x.data {
        Data::F(v) => Data::F(
            idx.iter()
                .map(|&i| if i == usize::MAX { value } else { v[i] })
                .collect(),
        ),
        Data::I(v) => Data::I(
            idx.iter()
                .map(|&i| if i == usize::MAX { value as i64 } else { v[i] })
                .collect(),
        ),
    };
    Ok(vec![Const {
        elem: x.elem,
        shape: out,
        data,
    }])
}

/// One box's corners (x0, y0, x1, y1), ordered, from ONNX
/// NonMaxSuppression's two encodings.
fn corners(b: &[f32], center: bool) -> [f32; 4] {
    if center {
        let (cx, cy, w, h) = (b[0], b[1], b[2], b[3]);
        [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]
    } else {
        // [y0, x0, y1, x1], either corner first.
        [
            b[1].min(b[3]),
            b[0].min(b[2]),
            b[1].max(b[3]),
            b[0].max(b[2]),
        ]
    }
}

/// Whether `a` suppresses `b`: their IoU is above `threshold` (onnxruntime's
/// rule: boxes that do not overlap, or of no area, never do).
fn suppresses(a: &[f32; 4], b: &[f32; 4], threshold: f32) -> bool {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    if inter <= 0.0 {
        return false;
    }
    let area_a = (a[2] - a[0]) * (a[3] - a[1]);
    let area_b = (b[2] - b[0]) * (b[3] - b[1]);
    let union = area_a + area_b - inter;
    if area_a <= 0.0 || area_b <= 0.0 || union <= 0.0 {
        return false;
    }
    inter / union > threshold
}

/// ONNX NonMaxSuppression: per batch item and class, the boxes scoring
/// above `score_threshold` in descending score (ties: the lower index),
/// each kept unless a kept one overlaps it by more than `iou_threshold`, at
/// most `max_output_boxes_per_class`; rows of (batch, class, box).
pub(super) fn fold_nms(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
    let (boxes, scores) = (get(c, 0)?, get(c, 1)?);
    let scalar = |i: usize| {
        c.get(i)
            .copied()
            .flatten()
            .map(|v| v.as_f32().first().copied())
    };
    let max_out = c
        .get(2)
        .copied()
        .flatten()
        .and_then(|v| v.as_i64().first().copied())
        .unwrap_or(0)
        .max(0);
    let iou = scalar(3).flatten().unwrap_or(0.0);
    let score_min = scalar(4).flatten();
    let center = attrs.int("center_point_box", 0) == 1;
    let (Ok([nb, n, four]), Ok([sb, classes, sn])) = (
        <[usize; 3]>::try_from(boxes.shape.as_slice()),
        <[usize; 3]>::try_from(scores.shape.as_slice()),
    ) else {
        return Err(format!(
            "boxes {:?} and scores {:?} are not [B, N, 4] and [B, C, N]",
            boxes.shape, scores.shape
        ));
    };
    if four != 4 || nb != sb || n != sn {
        return Err(format!(
            "boxes {:?} and scores {:?} do not match ([B, N, 4] and [B, C, N])",
            boxes.shape, scores.shape
        ));
    }
    let (b, s) = (boxes.as_f32(), scores.as_f32());
    let mut rows = Vec::new();
    for item in 0..nb {
        let corner: Vec<[f32; 4]> = (0..n)
            .map(|i| corners(&b[(item * n + i) * 4..][..4], center))
            .collect();
        for class in 0..classes {
            let score = &s[(item * classes + class) * n..][..n];
            let mut order: Vec<usize> = (0..n)
                .filter(|&i| score_min.is_none_or(|t| score[i] > t))
                .collect();
            order.sort_by(|&x, &y| score[y].total_cmp(&score[x]).then(x.cmp(&y)));
            let mut kept: Vec<usize> = Vec::new();
            for i in order {
                if kept.len() as i64 >= max_out {
                    break;
                }
                if !kept
                    .iter()
                    .any(|&k| suppresses(&corner[k], &corner[i], iou))
                {
                    kept.push(i);
                }
            }
            rows.extend(
                kept.into_iter()
                    .flat_map(|i| [item as i64, class as i64, i as i64]),
            );
        }
    }
    Ok(vec![Const::ints(Elem::I64, vec![rows.len() / 3, 3], rows)])
}

/// The offsets of the lines along `axis` of `shape`: (outer count, axis
/// size, inner stride); line (o, i) starts at o * size * inner + i.
fn lines(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// ONNX TopK: the `k` largest (or smallest) values along `axis` and their
/// indices, best first, ties by the lower index (onnxruntime's order).
pub(super) fn fold_top_k(args: &Args<'_>) -> Msg {
    let Args {
        c, attrs, opset, ..
    } = *args;
    let x = get(c, 0)?;
    let k = if opset >= 10 {
        get(c, 1)?.as_i64().first().copied().ok_or("k is empty")?
    } else {
        attrs.int("k", 0)
    };
    let axis = norm_axis(attrs.int("axis", -1), x.shape.len())?;
    let (outer, size, inner) = lines(&x.shape, axis);
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= size)
        .ok_or_else(|| {
            format!(
                "k {k} is not within 0..={size} (axis {axis} of {:?})",
                x.shape
            )
        })?;
    let largest = attrs.int("largest", 1) == 1;
    let v = x.as_f32();
    let mut shape = x.shape.clone();
    shape[axis] = k;
    let mut picked = vec![0usize; outer * k * inner];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * size + j) * inner + i;
            let mut order: Vec<usize> = (0..size).collect();
            order.sort_by(|&a, &b| {
                let by = v[at(a)].total_cmp(&v[at(b)]);
                if largest { by.reverse() } else { by }.then(a.cmp(&b))
            });
            for (r, &j) in order[..k].iter().enumerate() {
                picked[(o * k + r) * inner + i] = j;
            }
        }
    }
    let idx: Vec<usize> = picked
        .iter()
        .enumerate()
        .map(|(p, &j)| {
            let (o, i) = (p / (k * inner), p % inner);
            (o * size + j) * inner + i
        })
        .collect();
    let indices = picked.iter().map(|&j| j as i64).collect();
    Ok(vec![
        take(x, shape.clone(), &idx),
        Const::ints(Elem::I64, shape, indices),
    ])
}

/// ONNX GatherElements: `data` at `indices` along `axis`, the other
/// coordinates those of the index.
pub(super) fn fold_gather_elements(args: &Args<'_>) -> Msg {
    let (x, indices) = (get(args.c, 0)?, get(args.c, 1)?);
    let rank = x.shape.len();
    let axis = norm_axis(args.attrs.int("axis", 0), rank)?;
    if indices.shape.len() != rank {
        return Err(format!(
            "indices {:?} and data {:?} differ in rank",
            indices.shape, x.shape
        ));
    }
    let values = indices.as_i64();
    let d = x.shape[axis] as i64;
    let idx = index_map(&indices.shape, |coord, i| {
        let j = values[i];
        let j = if j < 0 { j + d } else { j };
        if !(0..d).contains(&j) {
            return usize::MAX;
        }
        coord.iter().enumerate().fold(0, |acc, (a, &c)| {
            acc * x.shape[a] + if a == axis { j as usize } else { c }
        })
    })?;
    if idx.contains(&usize::MAX)
        || indices
            .shape
            .iter()
            .zip(&x.shape)
            .enumerate()
            .any(|(a, (&i, &s))| a != axis && i > s)
    {
        return Err(format!(
            "indices {:?} reach outside data {:?} along axis {axis}",
            indices.shape, x.shape
        ));
    }
    Ok(vec![take(x, indices.shape.clone(), &idx)])
}

/// ONNX ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd on the
/// host (sums in f64), for what follows a host-only operator and for small
/// constants at import.
pub(super) fn fold_reduce(args: &Args<'_>) -> Msg {
    let Args {
        c,
        attrs,
        opset,
        op,
    } = *args;
    let x = get(c, 0)?;
    let input_from = if op == "ReduceSum" { 13 } else { 18 };
    let axes = if opset >= input_from {
        c.get(1).copied().flatten().map(Const::as_i64)
    } else {
        attrs.ints("axes")
    };
    let rank = x.shape.len();
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => a
            .iter()
            .map(|&a| norm_axis(a, rank))
            .collect::<std::result::Result<_, _>>()?,
        _ if attrs.int("noop_with_empty_axes", 0) != 0 => return Ok(vec![x.clone()]),
        _ => (0..rank).collect(),
    };
    let kept: Vec<usize> = (0..rank)
        .map(|a| if axes.contains(&a) { 1 } else { x.shape[a] })
        .collect();
    let (start, combine): (f64, fn(f64, f64) -> f64) = match op {
        "ReduceSum" | "ReduceMean" => (0.0, |a, b| a + b),
        "ReduceProd" => (1.0, |a, b| a * b),
        "ReduceMax" => (f64::NEG_INFINITY, f64::max),
        "ReduceMin" => (f64::INFINITY, f64::min),
        other => return Err(format!("{other} is computed only in the graph")),
    };
    let count: usize = kept.iter().product();
    let mut acc = vec![start; count];
    let source = index_map(&x.shape, |coord, _| {
        coord
            .iter()
            .zip(&kept)
            .fold(0, |flat, (&c, &d)| flat * d + if d == 1 { 0 } else { c })
    })?;
    let values = x.as_f32();
    let ints = x.as_i64();
    for (i, &to) in source.iter().enumerate() {
        let v = match x.data {
            Data::F(_) => f64::from(values[i]),
            Data::I(_) => ints[i] as f64,
        };
        acc[to] = combine(acc[to], v);
    }
    if op == "ReduceMean" {
        let n = (x.len() / count.max(1)).max(1) as f64;
        acc.iter_mut().for_each(|a| *a /= n);
    }
    let shape = if attrs.int("keepdims", 1) != 0 {
        kept
    } else {
        (0..rank)
            .filter(|a| !axes.contains(a))
            .map(|a| x.shape[a])
            .collect()
    };
    Ok(vec![match x.data {
        Data::F(_) => Const::floats(x.elem, shape, acc.iter().map(|&a| a as f32).collect()),
        Data::I(_) => Const::ints(x.elem, shape, acc.iter().map(|&a| a as i64).collect()),
    }])
}

/// ONNX Split on the host, where its part sizes are given (the `split`
/// input, or attribute before opset 13, or opset 18's `num_outputs`).
fn fold_split(args: &Args<'_>) -> Msg {
    let x = get(args.c, 0)?;
    let axis = norm_axis(args.attrs.int("axis", 0), x.shape.len())?;
    let dim = x.shape[axis];
    let given = if args.opset >= 13 {
        args.c.get(1).copied().flatten().map(Const::as_i64)
    } else {
        args.attrs.ints("split")
    };
    let count = args.attrs.int("num_outputs", 0);
    let sizes: Vec<usize> = match given {
        Some(s) if !s.is_empty() => s
            .iter()
            .map(|&v| usize::try_from(v).ok())
            .collect::<Option<_>>()
            .ok_or_else(|| format!("split {s:?} must be non-negative"))?,
        // Ceil-sized parts, the last one smaller (opset 18).
        _ if count >= 1 && count <= dim.max(1) as i64 => {
            let part = dim.div_ceil(count as usize);
            (0..count as usize)
                .map(|i| part.min(dim.saturating_sub(i * part)))
                .collect()
        }
        _ => return Err("its part sizes are not given (a split input or num_outputs)".into()),
    };
    if sizes.iter().sum::<usize>() != dim {
        return Err(format!("split {sizes:?} does not add up to {dim}"));
    }
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    let mut start = 0;
    let mut parts = Vec::with_capacity(sizes.len());
    for &s in &sizes {
        let mut shape = x.shape.clone();
        shape[axis] = s;
        let idx: Vec<usize> = (0..outer)
            .flat_map(|o| (0..s * inner).map(move |k| (o * dim + start) * inner + k))
            .collect();
        parts.push(take(x, shape, &idx));
        start += s;
    }
    Ok(parts)
}
