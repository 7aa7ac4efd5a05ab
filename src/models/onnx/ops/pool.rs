//! MaxPool, AveragePool (2-D, 1-D as 2-D, and 3-D where it is a 2-D one)
//! and the global pools.

use crate::error::Result;
use crate::ml::{DataType, InputLayout, Operand, Pool2dOptions, RoundingType};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;

impl<'s> Writer<'s> {
    /// A 3-D pool whose window, stride and dilation are 1 along the last two
    /// axes, with no padding there: a 2-D pool over [depth, height x width].
    /// PyTorch's legacy export of LocalResponseNorm pools [N, 1, C, H, W]
    /// this way, across channels.
    #[allow(clippy::type_complexity)]
    pub(super) fn pool_3d_as_2d(
        &mut self,
        x: &Operand,
        attrs: &Attrs<'_>,
    ) -> Result<(
        Operand,
        Vec<usize>,
        [usize; 2],
        [usize; 2],
        [usize; 2],
        [usize; 4],
    )> {
        let shape = x.shape().to_vec();
        let list = |name: &str, n: usize, default: i64| -> Result<Vec<usize>> {
            let v = attrs.ints(name).unwrap_or_else(|| vec![default; n]);
            v.iter()
                .map(|&d| usize::try_from(d).ok())
                .collect::<Option<Vec<usize>>>()
                .filter(|v| v.len() == n)
                .ok_or_else(|| self.err(format!("{name} {v:?} must be {n} non-negative values")))
        };
        let kernel = list("kernel_shape", 3, 1)?;
        let strides = list("strides", 3, 1)?;
        let dilations = list("dilations", 3, 1)?;
        let pads = list("pads", 6, 0)?;
        let auto = attrs.string("auto_pad", "NOTSET");
        let trivial = |v: &[usize], one: usize| v[1] == one && v[2] == one;
        if !(trivial(&kernel, 1)
            && trivial(&strides, 1)
            && trivial(&dilations, 1)
            && pads[1] == 0
            && pads[2] == 0
            && pads[4] == 0
            && pads[5] == 0
            && matches!(auto.as_str(), "NOTSET" | "VALID"))
        {
            return Err(self.err(format!(
                "a 3-D pool is supported only with window, strides and dilations of 1 and no \
                 padding along its last two axes (kernel {kernel:?}, strides {strides:?}, pads \
                 {pads:?}, auto_pad {auto})"
            )));
        }
        let x4 = self.ctx(
            self.b
                .reshape(x, &[shape[0], shape[1], shape[2], shape[3] * shape[4]]),
        )?;
        let padding = if auto == "VALID" {
            [0; 4]
        } else {
            [pads[0], pads[3], 0, 0]
        };
        Ok((
            x4,
            shape,
            [kernel[0], 1],
            [strides[0], 1],
            [dilations[0], 1],
            padding,
        ))
    }
}

pub(super) fn global_pool<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let x = wr.opnd(inputs, 0)?;
    let (x4, _) = wr.as_4d(&x)?;
    let o = Pool2dOptions::new();
    let y = wr.ctx(if op_type == "GlobalMaxPool" {
        b.max_pool2d(&x4, o)
    } else {
        b.average_pool2d(&x4, o)
    })?;
    let mut shape = x.shape().to_vec();
    shape[2..].iter_mut().for_each(|d| *d = 1);
    Ok(wr.one(wr.ctx(b.reshape(&y, &shape))?))
}

pub(super) fn pool<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let op_type = n.op_type();
    let x = wr.opnd(inputs, 0)?;
    let in_type = x.data_type();
    // Pools take floats; an integer max pool is exact in float32.
    let x = if in_type.is_float() {
        x
    } else {
        wr.ctx(wr.b.cast(&x, DataType::Float32))?
    };
    let (x4, shape, kernel, strides, dilations, padding) = if x.shape().len() == 5 {
        wr.pool_3d_as_2d(&x, attrs)?
    } else {
        let (x4, shape) = wr.as_4d(&x)?;
        let spatial = shape.len() - 2;
        let kernel = wr.spatial(attrs, "kernel_shape", spatial, 1)?;
        let strides = wr.spatial(attrs, "strides", spatial, 1)?;
        let dilations = wr.spatial(attrs, "dilations", spatial, 1)?;
        let hw = [x4.shape()[2], x4.shape()[3]];
        let padding = wr.conv_padding(attrs, spatial, hw, kernel, strides, dilations)?;
        (x4, shape, kernel, strides, dilations, padding)
    };
    let hw = [x4.shape()[2], x4.shape()[3]];
    let ceil = attrs.int("ceil_mode", 0) != 0;
    // Output sizes as ONNX (and PyTorch) define them: with ceil_mode a
    // last window that would start in the end padding is dropped.
    let mut out = [0; 2];
    for a in 0..2 {
        let eff = (kernel[a].max(1) - 1) * dilations[a] + 1;
        let padded = hw[a] + padding[2 * a] + padding[2 * a + 1];
        if padded < eff || strides[a] == 0 {
            return Err(wr.err(format!(
                "window {eff} is larger than the padded input {padded}"
            )));
        }
        let span = padded - eff;
        let mut o = if ceil {
            span.div_ceil(strides[a]) + 1
        } else {
            span / strides[a] + 1
        };
        if ceil && (o - 1) * strides[a] >= hw[a] + padding[2 * a] {
            o -= 1;
        }
        out[a] = o;
    }
    let options = Pool2dOptions {
        window_dimensions: Some(kernel),
        padding,
        strides,
        dilations,
        layout: InputLayout::Nchw,
        rounding_type: if ceil {
            RoundingType::Ceil
        } else {
            RoundingType::Floor
        },
        output_sizes: Some(out),
        count_include_pad: attrs.int("count_include_pad", 0) != 0,
    };
    let b = wr.b;
    let y = wr.ctx(if op_type == "MaxPool" {
        if attrs.int("storage_order", 0) != 0 {
            return Err(wr.err("storage_order 1 is not supported"));
        }
        b.max_pool2d(&x4, options)
    } else {
        b.average_pool2d(&x4, options)
    })?;
    let y = wr.back_from_4d(y, &shape)?;
    let elem = wr.need(inputs, 0)?.elem();
    if in_type.is_float() {
        return Ok(wr.keep(y, elem));
    }
    Ok(wr.keep(wr.ctx(b.cast(&y, in_type))?, elem))
}
