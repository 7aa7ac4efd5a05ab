//! Resize (opsets 10, 11, 13, 18, 19) and Upsample.

use crate::error::Result;
use crate::ml::{CoordinateTransform, InterpolationMode, NearestRounding, Resample2dOptions};
use crate::models::onnx::fold::norm_axis;
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;

type Ints = std::result::Result<Vec<usize>, String>;

/// Scales or sizes for every axis.
type Targets = (Option<Vec<f32>>, Option<Vec<usize>>);

pub(super) fn resize<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = wr.opnd(inputs, 0)?;
    let shape = x.shape().to_vec();
    let rank = shape.len();
    let upsample = n.op_type() == "Upsample";
    let (scales, sizes) = targets(wr, attrs, inputs, &shape, upsample)?;
    // Which axes change: at most two consecutive ones.
    let changed: Vec<usize> = (0..rank)
        .filter(|&a| match (&scales, &sizes) {
            (_, Some(s)) => s[a] != shape[a],
            (Some(s), None) => s[a] != 1.0,
            _ => false,
        })
        .collect();
    if changed.is_empty() {
        return Ok(vec![wr.need(inputs, 0)?.clone()]);
    }
    let a0 = match changed.as_slice() {
        [a] if *a + 1 < rank => *a,
        // The last axis pairs with the one before it, where there is one.
        [a] if *a > 0 => *a - 1,
        [a, c] if *c == a + 1 => *a,
        _ => {
            return Err(wr.err(format!(
                "resizing axes {changed:?} is not supported (two neighbouring axes are)"
            )))
        }
    };
    let mode_attr = attrs.string("mode", "nearest");
    let mode = match mode_attr.as_str() {
        "nearest" => InterpolationMode::NearestNeighbor,
        "linear" | "bilinear" => InterpolationMode::Linear,
        m => {
            return Err(wr.err(format!(
                "mode '{m}' is not supported (nearest and linear are)"
            )))
        }
    };
    let (transform, rounding) = pixel_mapping(wr, attrs, upsample, scales.as_deref(), a0)?;
    let b = wr.b;
    // resample2d takes 4-D input: view the tensor as (outer, 1?, a0, a0+1, inner...).
    let outer: usize = shape[..a0].iter().product();
    let inner: usize = shape[a0 + 2..].iter().product();
    let (x4, axes) = if rank == 4 {
        (x, [a0, a0 + 1])
    } else if inner == 1 {
        (
            wr.ctx(b.reshape(&x, &[outer, 1, shape[a0], shape[a0 + 1]]))?,
            [2, 3],
        )
    } else {
        return Err(wr.err(format!(
            "resizing axes {a0} and {} of {shape:?} is not supported",
            a0 + 1
        )));
    };
    let options = Resample2dOptions {
        mode,
        scales: scales.as_ref().map_or([1.0, 1.0], |s| [s[a0], s[a0 + 1]]),
        sizes: sizes.as_ref().map(|s| [s[a0], s[a0 + 1]]),
        axes,
        coordinate_transform: transform,
        nearest_rounding: rounding,
    };
    let y = wr.ctx(b.resample2d(&x4, options))?;
    let y = if rank == 4 {
        y
    } else {
        let mut out = shape.clone();
        out[a0] = y.shape()[2];
        out[a0 + 1] = y.shape()[3];
        wr.ctx(b.reshape(&y, &out))?
    };
    Ok(wr.one(y))
}

/// The scales or sizes of every axis, from the attribute or inputs the
/// opset holds them in, checked.
fn targets(
    wr: &mut Writer<'_>,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
    shape: &[usize],
    upsample: bool,
) -> Result<Targets> {
    let rank = shape.len();
    let opset = wr.opset;
    let (scales, sizes): Targets = if upsample && opset < 9 {
        (attrs.floats("scales"), None)
    } else if upsample || opset < 11 {
        (
            wr.need_const(inputs, 1, "scales")?.map(|c| c.as_f32()),
            None,
        )
    } else {
        let scales = wr
            .need_const(inputs, 2, "scales")?
            .map(|c| c.as_f32())
            .filter(|s| !s.is_empty());
        let sizes = wr
            .need_const(inputs, 3, "sizes")?
            .map(|c| c.as_i64())
            .filter(|s| !s.is_empty());
        let axes: Vec<usize> = match attrs.ints("axes") {
            Some(a) => a
                .iter()
                .map(|&a| norm_axis(a, rank))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| wr.err(e))?,
            None => (0..rank).collect(),
        };
        let spread_f = |v: Vec<f32>| {
            let mut full = vec![1.0; rank];
            for (k, &a) in axes.iter().enumerate() {
                full[a] = v.get(k).copied().unwrap_or(1.0);
            }
            full
        };
        let spread_i = |v: Vec<i64>| -> Ints {
            let mut full = shape.to_vec();
            for (k, &a) in axes.iter().enumerate() {
                full[a] = v
                    .get(k)
                    .and_then(|&d| usize::try_from(d).ok())
                    .ok_or_else(|| format!("sizes {v:?} do not fit the axes"))?;
            }
            Ok(full)
        };
        let mut sizes = match sizes {
            Some(s) => Some(wr.msg(spread_i(s))?),
            None => None,
        };
        // A batch of items: sizes traced at the single-item batch of 1
        // (an exporter's Shape arithmetic next to a constant 1) keep the
        // batch instead.
        if let Some(s) = sizes.as_mut() {
            if wr.batch > 1 && s[0] == 1 && shape.first().is_some_and(|d| d % wr.batch == 0) {
                s[0] = shape[0];
            }
        }
        (scales.map(spread_f), sizes)
    };
    if scales.is_none() && sizes.is_none() {
        return Err(wr.err("needs scales or sizes"));
    }
    if let Some(s) = &scales {
        if s.len() != rank {
            return Err(wr.err(format!("scales {s:?} need {rank} values")));
        }
    }
    if attrs.string("keep_aspect_ratio_policy", "stretch") != "stretch" {
        return Err(wr.err("keep_aspect_ratio_policy other than 'stretch' is not supported"));
    }
    if attrs.int("antialias", 0) != 0 {
        return Err(wr.err("antialias is not supported"));
    }
    Ok((scales, sizes))
}

/// How output pixels map to input ones: Upsample and Resize-10 by their
/// fixed rule, later opsets by their attributes.
fn pixel_mapping(
    wr: &Writer<'_>,
    attrs: &Attrs<'_>,
    upsample: bool,
    scales: Option<&[f32]>,
    a0: usize,
) -> Result<(CoordinateTransform, NearestRounding)> {
    Ok(if upsample || wr.opset < 11 {
        // Upsample and Resize-10 map asymmetrically; their nearest
        // pixel is onnxruntime's "simple" mode: floor when enlarging,
        // ceil when shrinking.
        let shrink = scales.is_some_and(|s| s[a0] < 1.0 || s[a0 + 1] < 1.0);
        (
            CoordinateTransform::Asymmetric,
            if shrink {
                NearestRounding::Ceil
            } else {
                NearestRounding::Floor
            },
        )
    } else {
        let t = match attrs
            .string("coordinate_transformation_mode", "half_pixel")
            .as_str()
        {
            "half_pixel" => CoordinateTransform::HalfPixel,
            "pytorch_half_pixel" => CoordinateTransform::PytorchHalfPixel,
            "align_corners" => CoordinateTransform::AlignCorners,
            "asymmetric" => CoordinateTransform::Asymmetric,
            "tf_half_pixel_for_nn" => CoordinateTransform::TfHalfPixelForNn,
            m => {
                return Err(wr.err(format!(
                    "coordinate_transformation_mode '{m}' is not supported"
                )))
            }
        };
        let r = match attrs.string("nearest_mode", "round_prefer_floor").as_str() {
            "round_prefer_floor" => NearestRounding::RoundPreferFloor,
            "round_prefer_ceil" => NearestRounding::RoundPreferCeil,
            "floor" => NearestRounding::Floor,
            "ceil" => NearestRounding::Ceil,
            m => return Err(wr.err(format!("nearest_mode '{m}' is not supported"))),
        };
        (t, r)
    })
}
