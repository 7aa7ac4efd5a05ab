//! Operators whose result sizes depend on the data (NonZero,
//! NonMaxSuppression) or that only ever follow them (ScatterND), computed on
//! the host: at import when their inputs are constants, else per run in the
//! graph's host stage (`models/onnx/tail.rs`), which also computes the
//! graph operators that come after them there (GatherND, Pad: [`host`]).

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

/// The flat offsets of `indices`' last-axis tuples into `data_shape`, and
/// the size of the slice each one starts.
fn tuple_offsets(
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
    let mut offsets = Vec::with_capacity(values.len() / k);
    for tuple in values.chunks(k) {
        let mut offset = 0usize;
        for (axis, &i) in tuple.iter().enumerate() {
            let d = data_shape[axis] as i64;
            let i = if i < 0 { i + d } else { i };
            if !(0..d).contains(&i) {
                return Err(format!(
                    "index {i} is out of range for axis {axis} of size {d}"
                ));
            }
            offset = offset * data_shape[axis] + i as usize;
        }
        offsets.push(offset * inner);
    }
    Ok((offsets, inner))
}

fn fold_gather_nd(args: &Args<'_>) -> Msg {
    if args.attrs.int("batch_dims", 0) != 0 {
        return Err("batch_dims other than 0 is not supported".into());
    }
    let (x, indices) = (get(args.c, 0)?, get(args.c, 1)?);
    let (offsets, inner) = tuple_offsets(&x.shape, indices)?;
    let k = indices.shape[indices.shape.len() - 1];
    let mut shape = indices.shape[..indices.shape.len() - 1].to_vec();
    shape.extend_from_slice(&x.shape[k..]);
    let idx: Vec<usize> = offsets.iter().flat_map(|&o| o..o + inner).collect();
    Ok(vec![take(x, shape, &idx)])
}

/// ONNX ScatterND: `data` with the slices `indices` name replaced by (or
/// combined with, by `reduction`) `updates`, in index order.
pub(super) fn fold_scatter_nd(args: &Args<'_>) -> Msg {
    let (x, indices, updates) = (get(args.c, 0)?, get(args.c, 1)?, get(args.c, 2)?);
    let (offsets, inner) = tuple_offsets(&x.shape, indices)?;
    if updates.len() != offsets.len() * inner {
        return Err(format!(
            "updates {:?} do not match {} slices of {inner} elements",
            updates.shape,
            offsets.len()
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
    let positions = offsets.iter().flat_map(|&o| o..o + inner);
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
        let value = c.get(2).copied().flatten().map(|v| v.as_f32()[0]);
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
