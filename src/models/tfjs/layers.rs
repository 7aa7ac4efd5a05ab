//! Keras layers (channels_last) mapped onto wgnn operators.

use std::collections::HashMap;

use serde_json::Value;

use super::{Layer, TfjsSource};
use crate::error::{Error, Result};
use crate::ml::{
    Conv2dFilterLayout, Conv2dOptions, CoordinateTransform, GraphBuilder, InputLayout,
    InterpolationMode, NearestRounding, Operand, OperandDescriptor, Resample2dOptions,
};
use crate::models::same_padding;

impl TfjsSource {
    /// Channels of a layer's output where the topology alone tells them.
    pub(super) fn output_channels(&self, name: &str) -> Option<usize> {
        let layer = self.layers.iter().find(|l| l.name == name)?;
        match layer.class.as_str() {
            "Conv2D" => layer.config["filters"].as_u64().map(|f| f as usize),
            _ => None,
        }
    }
}

pub(super) fn write(
    src: &TfjsSource,
    b: &GraphBuilder,
    hw: Option<(usize, usize)>,
    batch: usize,
) -> Result<Vec<(String, Operand)>> {
    let [h, w, c] = [src.input_shape[0], src.input_shape[1], src.input_shape[2]];
    let (h, w) = match (hw, h, w) {
        (Some((h, w)), _, _) => (h, w),
        (None, Some(h), Some(w)) => (h, w),
        (None, _, _) => {
            return Err(src.err(
                "build",
                "the model takes any height and width: pass the input size",
            ))
        }
    };
    let mut values: HashMap<&str, Operand> = HashMap::new();
    for layer in &src.layers {
        let loc = format!("layer '{}' ({})", layer.name, layer.class);
        b.note_origin(&loc);
        let err = |m: &dyn std::fmt::Display| src.err(&loc, m);
        let mut inputs = Vec::new();
        for i in &layer.inputs {
            inputs.push(
                values.get(i.as_str()).cloned().ok_or_else(|| {
                    err(&format!("input '{i}' is not computed before this layer"))
                })?,
            );
        }
        let y = if layer.class == "InputLayer" {
            if !src.input_layers.contains(&layer.name) {
                return Err(err(&"is not one of the model's input_layers"));
            }
            let shape = [batch, h, w, c.unwrap_or(1)];
            b.input(&layer.name, OperandDescriptor::f32(shape))
                .map_err(|e| err(&e))?
        } else {
            let x = match &inputs[..] {
                [] => return Err(err(&"has no inputs")),
                [x, ..] => x,
            };
            if let Some(f) = layer.config["data_format"].as_str() {
                if f != "channels_last" {
                    return Err(err(&format!("data_format '{f}' is not supported")));
                }
            }
            one_layer(src, b, layer, x, &inputs).map_err(|e| match e {
                Error::Model { .. } => e,
                e => err(&e),
            })?
        };
        values.insert(&layer.name, y);
    }
    src.output_layers
        .iter()
        .map(|n| {
            values
                .get(n.as_str())
                .map(|o| (n.clone(), o.clone()))
                .ok_or_else(|| src.err("output_layers", format!("layer '{n}' is not defined")))
        })
        .collect()
}

fn usize_pair(v: &Value, default: [usize; 2]) -> Option<[usize; 2]> {
    match v {
        Value::Null => Some(default),
        Value::Number(n) => n.as_u64().map(|n| [n as usize; 2]),
        Value::Array(a) if a.len() == 2 => Some([a[0].as_u64()? as usize, a[1].as_u64()? as usize]),
        _ => None,
    }
    .filter(|p| p[0] > 0 && p[1] > 0)
}

fn one_layer(
    src: &TfjsSource,
    b: &GraphBuilder,
    layer: &Layer,
    x: &Operand,
    inputs: &[Operand],
) -> Result<Operand> {
    let cfg = &layer.config;
    let bad = |m: String| Error::invalid(m);
    match layer.class.as_str() {
        "Conv2D" => {
            let weight = |suffix: &str| {
                let name = format!("{}/{suffix}", layer.name);
                src.weights
                    .get(&name)
                    .ok_or_else(|| bad(format!("weight '{name}' is not in the manifest")))
            };
            let kernel = weight("kernel")?;
            let ks = usize_pair(&cfg["kernel_size"], [1, 1])
                .ok_or_else(|| bad(format!("kernel_size {} is malformed", cfg["kernel_size"])))?;
            let strides = usize_pair(&cfg["strides"], [1, 1])
                .ok_or_else(|| bad(format!("strides {} are malformed", cfg["strides"])))?;
            let dilations = usize_pair(&cfg["dilation_rate"], [1, 1]).ok_or_else(|| {
                bad(format!(
                    "dilation_rate {} is malformed",
                    cfg["dilation_rate"]
                ))
            })?;
            let groups = cfg["groups"].as_u64().unwrap_or(1);
            if groups != 1 {
                return Err(bad(format!("groups {groups} is not supported")));
            }
            let filters = cfg["filters"].as_u64().map(|f| f as usize);
            let in_c = x.shape().get(3).copied().unwrap_or(0);
            let want = [ks[0], ks[1], in_c, filters.unwrap_or(0)];
            if kernel.shape != want {
                return Err(bad(format!(
                    "kernel {:?} does not match kernel_size {ks:?}, {in_c} input channels and {} filters",
                    kernel.shape,
                    cfg["filters"]
                )));
            }
            let filter = b.constant_f32(&kernel.shape, &kernel.values)?;
            let bias = if cfg["use_bias"].as_bool().unwrap_or(true) {
                let bias = weight("bias")?;
                Some(b.constant_f32(&bias.shape, &bias.values)?)
            } else {
                None
            };
            let [_, h, w, _] = x
                .shape()
                .try_into()
                .map_err(|_| bad("input is not 4-D".into()))?;
            let padding = match cfg["padding"].as_str() {
                Some("valid") => [0; 4],
                Some("same") => {
                    let (t, bo) = same_padding(h, ks[0], strides[0], dilations[0]);
                    let (l, r) = same_padding(w, ks[1], strides[1], dilations[1]);
                    [t, bo, l, r]
                }
                p => return Err(bad(format!("padding {p:?} is not supported"))),
            };
            let options = Conv2dOptions {
                padding,
                strides,
                dilations,
                input_layout: InputLayout::Nhwc,
                filter_layout: Conv2dFilterLayout::Hwio,
                ..Conv2dOptions::new()
            };
            let y = b.conv2d(x, &filter, bias.as_ref(), options)?;
            activation(b, &y, &cfg["activation"])
        }
        "Activation" => activation(b, x, &cfg["activation"]),
        "Concatenate" => {
            let rank = x.shape().len() as i64;
            let axis = cfg["axis"].as_i64().unwrap_or(-1);
            let axis = if axis < 0 { axis + rank } else { axis };
            if !(0..rank).contains(&axis) {
                return Err(bad(format!("axis {} is out of range", cfg["axis"])));
            }
            let refs: Vec<&Operand> = inputs.iter().collect();
            b.concat(&refs, axis as usize)
        }
        "Add" => {
            let mut y = x.clone();
            for o in &inputs[1..] {
                y = b.add(&y, o)?;
            }
            Ok(y)
        }
        "UpSampling2D" => {
            let size = usize_pair(&cfg["size"], [2, 2])
                .ok_or_else(|| bad(format!("size {} is malformed", cfg["size"])))?;
            // TF.js resizes with neither align_corners nor half_pixel_centers:
            // source = floor(dst / scale) for nearest.
            let mode = match cfg["interpolation"].as_str().unwrap_or("nearest") {
                "nearest" => InterpolationMode::NearestNeighbor,
                "bilinear" => InterpolationMode::Linear,
                i => return Err(bad(format!("interpolation '{i}' is not supported"))),
            };
            let [_, h, w, _]: [usize; 4] = x
                .shape()
                .try_into()
                .map_err(|_| bad("input is not 4-D".into()))?;
            let options = Resample2dOptions {
                mode,
                sizes: Some([h * size[0], w * size[1]]),
                axes: [1, 2],
                coordinate_transform: CoordinateTransform::Asymmetric,
                nearest_rounding: NearestRounding::Floor,
                ..Resample2dOptions::default()
            };
            b.resample2d(x, options)
        }
        // UpscalerJS's residual scaling layer: x * beta.
        "MultiplyBeta" => {
            let beta = cfg["beta"].as_f64().unwrap_or(0.2) as f32;
            let c = b.constant_f32(&[1], &[beta])?;
            b.mul(x, &c)
        }
        // UpscalerJS's depth_to_space (TF's DCR order):
        // out[n, h*r+i, w*r+j, c] = in[n, h, w, (i*r + j)*C + c].
        "PixelShuffle" => {
            let r =
                cfg["scale"].as_u64().filter(|&r| r > 0).ok_or_else(|| {
                    bad(format!("scale {} is missing or not positive", cfg["scale"]))
                })? as usize;
            let [n, h, w, c]: [usize; 4] = x
                .shape()
                .try_into()
                .map_err(|_| bad("input is not 4-D".into()))?;
            if c % (r * r) != 0 {
                return Err(bad(format!(
                    "{c} channels do not divide by scale² = {}",
                    r * r
                )));
            }
            let oc = c / (r * r);
            let y = b.reshape(x, &[n, h, w, r, r, oc])?;
            let y = b.transpose(&y, Some(&[0, 1, 3, 2, 4, 5]))?;
            b.reshape(&y, &[n, h * r, w * r, oc])
        }
        other => Err(bad(format!("layer class '{other}' is not supported"))),
    }
}

fn activation(b: &GraphBuilder, x: &Operand, name: &Value) -> Result<Operand> {
    match name.as_str().unwrap_or("linear") {
        "linear" => Ok(x.clone()),
        "relu" => b.relu(x),
        "relu6" => b.clamp(x, 0.0, 6.0),
        "sigmoid" => b.sigmoid(x),
        "tanh" => b.tanh(x),
        "hard_swish" => b.hard_swish(x),
        a => Err(Error::invalid(format!("activation '{a}' is not supported"))),
    }
}
