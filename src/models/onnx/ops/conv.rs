//! Conv, ConvTranspose and BatchNormalization (folded into a Conv with
//! constant weights that is its only writer), and the spatial attributes
//! they share with the pools.

use std::sync::Arc;

use crate::error::Result;
use crate::ml::{Conv2dOptions, ConvTranspose2dOptions};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::{Const, Elem};

/// The largest stride, dilation, kernel size or padding a spatial
/// attribute may hold: far beyond any real model, and small enough that
/// window arithmetic on tensor sizes cannot overflow (found by fuzz/
/// `onnx_structured`).
pub(super) const MAX_SPATIAL: usize = 1 << 16;

/// A BatchNormalization folded into its Conv: (node index, scale, shift).
type FoldedBn = (usize, Vec<f32>, Vec<f32>);

impl<'s> Writer<'s> {
    /// Spatial attributes of a conv or pool with `spatial` (1 or 2) axes,
    /// given as 2-D ones (a 1-D op is 2-D with height 1).
    pub(super) fn spatial(
        &self,
        attrs: &Attrs<'_>,
        name: &str,
        spatial: usize,
        default: usize,
    ) -> Result<[usize; 2]> {
        let v = attrs
            .ints(name)
            .unwrap_or_else(|| vec![default as i64; spatial]);
        let v: Vec<usize> = v
            .iter()
            .map(|&x| usize::try_from(x).ok().filter(|&x| x <= MAX_SPATIAL))
            .collect::<Option<_>>()
            .filter(|v: &Vec<usize>| v.len() == spatial)
            .ok_or_else(|| {
                self.err(format!(
                    "{name} {v:?} must be {spatial} values from 0 to {MAX_SPATIAL}"
                ))
            })?;
        Ok(if spatial == 1 {
            [default, v[0]]
        } else {
            [v[0], v[1]]
        })
    }

    /// Padding as the builder takes it: [top, bottom, left, right], from
    /// `pads` or `auto_pad` (SAME_UPPER puts the odd pixel at the end).
    pub(super) fn conv_padding(
        &self,
        attrs: &Attrs<'_>,
        spatial: usize,
        input: [usize; 2],
        kernel: [usize; 2],
        strides: [usize; 2],
        dilations: [usize; 2],
    ) -> Result<[usize; 4]> {
        let auto = attrs.string("auto_pad", "NOTSET");
        match auto.as_str() {
            "NOTSET" => {
                let p = attrs.ints("pads").unwrap_or_else(|| vec![0; 2 * spatial]);
                let p: Vec<usize> = p
                    .iter()
                    .map(|&x| usize::try_from(x).ok().filter(|&x| x <= MAX_SPATIAL))
                    .collect::<Option<_>>()
                    .filter(|v: &Vec<usize>| v.len() == 2 * spatial)
                    .ok_or_else(|| {
                        self.err(format!(
                            "pads {p:?} must be {} values from 0 to {MAX_SPATIAL}",
                            2 * spatial
                        ))
                    })?;
                Ok(if spatial == 1 {
                    [0, 0, p[0], p[1]]
                } else {
                    [p[0], p[2], p[1], p[3]]
                })
            }
            "VALID" => Ok([0; 4]),
            "SAME_UPPER" | "SAME_LOWER" => {
                let mut out = [0; 4];
                for a in 0..2 {
                    let eff = (kernel[a].max(1) - 1) * dilations[a] + 1;
                    let o = input[a].div_ceil(strides[a].max(1));
                    let total = ((o.max(1) - 1) * strides[a] + eff).saturating_sub(input[a]);
                    let (small, big) = (total / 2, total - total / 2);
                    let (p0, p1) = if auto == "SAME_UPPER" {
                        (small, big)
                    } else {
                        (big, small)
                    };
                    out[2 * a] = p0;
                    out[2 * a + 1] = p1;
                }
                Ok(out)
            }
            other => Err(self.err(format!("auto_pad '{other}' is not valid"))),
        }
    }

    /// A Conv's options for its 4-D input `x4` and 4-D weights of shape
    /// `ws`, from its spatial attributes and `group`.
    pub(super) fn conv2d_options(
        &self,
        attrs: &Attrs<'_>,
        spatial: usize,
        x4: &crate::ml::Operand,
        ws: &[usize],
    ) -> Result<Conv2dOptions> {
        let kernel = [
            ws.get(2).copied().unwrap_or(1),
            ws.get(3).copied().unwrap_or(1),
        ];
        let strides = self.spatial(attrs, "strides", spatial, 1)?;
        let dilations = self.spatial(attrs, "dilations", spatial, 1)?;
        let hw = [x4.shape()[2], x4.shape()[3]];
        let padding = self.conv_padding(attrs, spatial, hw, kernel, strides, dilations)?;
        let groups = usize::try_from(attrs.int("group", 1))
            .ok()
            .filter(|&g| g > 0)
            .ok_or_else(|| self.err("group must be positive"))?;
        Ok(Conv2dOptions {
            padding,
            strides,
            dilations,
            groups,
            ..Conv2dOptions::new()
        })
    }

    /// When the Conv's only reader is a BatchNormalization with constant
    /// parameters and the Conv's weights (and bias) are constant: that node
    /// and the per-channel (scale, shift) it applies.
    pub(super) fn bn_after(
        &self,
        n: &proto::NodeProto,
        w: &Value,
        bias: &Option<Value>,
    ) -> Result<Option<FoldedBn>> {
        let Some(out) = n.output.first() else {
            return Ok(None);
        };
        if w.konst().is_none() || bias.as_ref().is_some_and(|b| b.konst().is_none()) {
            return Ok(None);
        }
        let readers = self
            .readers
            .get(out.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let &[r] = readers else {
            return Ok(None);
        };
        let Some(bn) = self.nodes().get(r) else {
            return Ok(None);
        };
        if bn.op_type() != "BatchNormalization"
            || bn.input.first() != Some(out)
            || bn
                .output
                .iter()
                .skip(1)
                .any(|o| !o.is_empty() && self.readers.contains_key(o.as_str()))
        {
            return Ok(None);
        }
        let params: Option<Vec<Vec<f32>>> = bn.input[1..]
            .iter()
            .map(|name| match self.values.get(name.as_str()) {
                Some(Value::Const(c)) => Some(c.as_f32()),
                _ => None,
            })
            .collect();
        let Some(p) = params.filter(|p| p.len() == 4) else {
            return Ok(None);
        };
        if w.konst().map(|c| c.shape.first().copied()) != Some(Some(p[0].len())) {
            return Ok(None);
        }
        let eps = Attrs(&bn.attribute).float("epsilon", 1e-5);
        Ok(bn_affine(&p[0], &p[1], &p[2], &p[3], eps).map(|(s, t)| (r, s, t)))
    }
}

pub(super) fn conv<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    if let Some(y) = super::quant_conv::qdq_conv(wr, n, attrs, inputs)? {
        return Ok(y);
    }
    let x = wr.opnd(inputs, 0)?;
    let (x4, shape) = wr.as_4d(&x)?;
    let spatial = shape.len() - 2;
    let wv = wr.need(inputs, 1)?.clone();
    let mut bias = inputs.get(2).cloned().flatten();
    let mut wv = wv;
    // BatchNormalization right after a constant-weight Conv (its only
    // reader) folds into the weights: one kernel, no extra pass.
    if let Some((bn, scale, shift)) = wr.bn_after(n, &wv, &bias)? {
        let w = wv
            .konst()
            .cloned()
            .unwrap_or_else(|| Arc::new(Const::floats(Elem::F32, vec![], vec![])));
        let per = w.len() / scale.len().max(1);
        let weights: Vec<f32> = w
            .as_f32()
            .iter()
            .enumerate()
            .map(|(i, &v)| v * scale[i / per.max(1)])
            .collect();
        let old_bias = bias
            .as_ref()
            .and_then(Value::konst)
            .map(|c| c.as_f32())
            .unwrap_or_else(|| vec![0.0; scale.len()]);
        let new_bias: Vec<f32> = (0..scale.len())
            .map(|c| old_bias[c] * scale[c] + shift[c])
            .collect();
        wv = Value::Const(Arc::new(Const::floats(w.elem, w.shape.clone(), weights)));
        bias = Some(Value::Const(Arc::new(Const::floats(
            w.elem,
            vec![scale.len()],
            new_bias,
        ))));
        wr.folded.insert(bn);
    }
    let w = wr.operand(&wv)?;
    let w4 = if spatial == 1 {
        let s = w.shape().to_vec();
        if s.len() != 3 {
            return Err(wr.err(format!("weights {s:?} must be 3-D for a 1-D conv")));
        }
        wr.ctx(wr.b.reshape(&w, &[s[0], s[1], 1, s[2]]))?
    } else {
        w
    };
    let bias = match bias {
        Some(v) => Some(wr.operand(&v)?),
        None => None,
    };
    let ws = w4.shape().to_vec();
    let options = wr.conv2d_options(attrs, spatial, &x4, &ws)?;
    let y = wr.ctx(wr.b.conv2d(&x4, &w4, bias.as_ref(), options))?;
    let y = wr.back_from_4d(y, &shape)?;
    Ok(wr.one(y))
}

pub(super) fn conv_transpose<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let x = wr.opnd(inputs, 0)?;
    let (x4, shape) = wr.as_4d(&x)?;
    let spatial = shape.len() - 2;
    let w = wr.opnd(inputs, 1)?;
    let w4 = if spatial == 1 {
        let s = w.shape().to_vec();
        if s.len() != 3 {
            return Err(wr.err(format!("weights {s:?} must be 3-D for a 1-D conv")));
        }
        wr.ctx(wr.b.reshape(&w, &[s[0], s[1], 1, s[2]]))?
    } else {
        w
    };
    let bias = wr.opt_opnd(inputs, 2)?;
    let ws = w4.shape().to_vec();
    let kernel = [
        ws.get(2).copied().unwrap_or(1),
        ws.get(3).copied().unwrap_or(1),
    ];
    let strides = wr.spatial(attrs, "strides", spatial, 1)?;
    let dilations = wr.spatial(attrs, "dilations", spatial, 1)?;
    let output_padding = wr.spatial(attrs, "output_padding", spatial, 0)?;
    let groups = usize::try_from(attrs.int("group", 1))
        .ok()
        .filter(|&g| g > 0)
        .ok_or_else(|| wr.err("group must be positive"))?;
    let hw = [x4.shape()[2], x4.shape()[3]];
    let auto = attrs.string("auto_pad", "NOTSET");
    let out_shape = attrs.ints("output_shape").map(|v| {
        let v: Vec<usize> = v.iter().map(|&d| d.max(0) as usize).collect();
        let tail = &v[v.len().saturating_sub(spatial)..];
        if spatial == 1 {
            [1, tail.first().copied().unwrap_or(0)]
        } else {
            [
                tail.first().copied().unwrap_or(0),
                tail.get(1).copied().unwrap_or(0),
            ]
        }
    });
    let same = auto == "SAME_UPPER" || auto == "SAME_LOWER";
    let (padding, output_sizes) = if out_shape.is_some() || same {
        // The padding that gives the wanted size (the input times the
        // stride for SAME); what padding cannot take off is added at the end.
        let target = out_shape.unwrap_or([hw[0] * strides[0], hw[1] * strides[1]]);
        let mut p = [0; 4];
        for a in 0..2 {
            let full =
                strides[a] * (hw[a] - 1) + output_padding[a] + (kernel[a] - 1) * dilations[a] + 1;
            let total = full.saturating_sub(target[a]);
            let (small, big) = (total / 2, total - total / 2);
            let (p0, p1) = if auto == "SAME_UPPER" {
                (small, big)
            } else {
                (big, small)
            };
            p[2 * a] = p0;
            p[2 * a + 1] = p1;
        }
        (p, Some(target))
    } else {
        (
            wr.conv_padding(attrs, spatial, hw, kernel, strides, dilations)?,
            None,
        )
    };
    let options = ConvTranspose2dOptions {
        padding,
        strides,
        dilations,
        output_padding,
        output_sizes,
        groups,
        ..ConvTranspose2dOptions::new()
    };
    let y = wr.ctx(wr.b.conv_transpose2d(&x4, &w4, bias.as_ref(), options))?;
    let y = wr.back_from_4d(y, &shape)?;
    Ok(wr.one(y))
}

pub(super) fn batch_norm<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    if attrs.int("training_mode", 0) != 0 {
        return Err(wr.err("training_mode is not supported"));
    }
    let x = wr.opnd(inputs, 0)?;
    let eps = attrs.float("epsilon", 1e-5);
    let b = wr.b;
    let consts: Option<Vec<Vec<f32>>> = (1..5)
        .map(|i| {
            inputs
                .get(i)
                .and_then(Option::as_ref)
                .and_then(Value::konst)
                .map(|c| c.as_f32())
        })
        .collect();
    let rank = x.shape().len();
    if let Some((s, t)) = consts.and_then(|p| bn_affine(&p[0], &p[1], &p[2], &p[3], eps)) {
        // y = x * s + t with per-channel constants (axis 1).
        let mut shape = vec![s.len()];
        shape.extend(std::iter::repeat_n(1, rank.saturating_sub(2)));
        let so = wr.const_like(&x, &shape, s)?;
        let to = wr.const_like(&x, &shape, t)?;
        let y = wr.ctx(b.mul(&x, &so))?;
        return Ok(wr.one(wr.ctx(b.add(&y, &to))?));
    }
    let scale = wr.opnd(inputs, 1)?;
    let shift = wr.opnd(inputs, 2)?;
    let mean = wr.opnd(inputs, 3)?;
    let var = wr.opnd(inputs, 4)?;
    let y = b.batch_normalization(&x, &mean, &var, Some(&scale), Some(&shift), 1, eps);
    Ok(wr.one(wr.ctx(y)?))
}

/// BatchNormalization as y = x * s + t per channel.
fn bn_affine(
    scale: &[f32],
    bias: &[f32],
    mean: &[f32],
    var: &[f32],
    eps: f32,
) -> Option<(Vec<f32>, Vec<f32>)> {
    let c = scale.len();
    if bias.len() != c || mean.len() != c || var.len() != c {
        return None;
    }
    let s: Vec<f32> = (0..c).map(|i| scale[i] / (var[i] + eps).sqrt()).collect();
    let t: Vec<f32> = (0..c).map(|i| bias[i] - mean[i] * s[i]).collect();
    Some((s, t))
}
