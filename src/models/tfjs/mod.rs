//! TF.js layers models: `model.json` (Keras topology plus a weights manifest)
//! and the binary weight shards it names, read in manifest order.

mod layers;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{model_error, Companions, Source, TensorInfo};
use crate::error::{Error, Result};
use crate::ml::{DataType, GraphBuilder, Operand};

/// Sniffs a JSON object with a TF.js key, without parsing the whole file; a
/// truncated model.json still counts, so that the JSON error is reported.
pub(crate) fn is_tfjs(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(1 << 20)];
    let text = String::from_utf8_lossy(head);
    text.trim_start().starts_with('{')
        && (text.contains("\"modelTopology\"") || text.contains("\"weightsManifest\""))
}

type Parsed = (Vec<TensorInfo>, Vec<TensorInfo>, Box<dyn Source>);

/// A float32 weight from the shards.
pub(crate) struct Weight {
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

pub(crate) struct Layer {
    pub name: String,
    pub class: String,
    pub config: Value,
    /// (layer name, output index) of each input.
    pub inputs: Vec<String>,
}

pub(crate) struct TfjsSource {
    pub path: PathBuf,
    pub layers: Vec<Layer>,
    pub weights: HashMap<String, Weight>,
    pub input_layers: Vec<String>,
    pub output_layers: Vec<String>,
    /// Declared input shape without the batch: [h?, w?, c].
    pub input_shape: Vec<Option<usize>>,
}

impl TfjsSource {
    pub fn err(&self, location: impl Into<String>, message: impl std::fmt::Display) -> Error {
        model_error(&self.path, location, message)
    }
}

pub(crate) fn parse(path: &Path, bytes: &[u8], files: &Companions<'_>) -> Result<Parsed> {
    let err = |loc: &str, m: String| model_error(path, loc, m);
    let json: Value = serde_json::from_slice(bytes)
        .map_err(|e| err("model.json", format!("is not valid JSON: {e}")))?;
    let topology = json
        .get("modelTopology")
        .ok_or_else(|| err("model.json", "has no \"modelTopology\"".into()))?;
    // Converters write either {model_config: {...}} or the config itself.
    let model_config = topology.get("model_config").unwrap_or(topology);
    let class = model_config.get("class_name").and_then(Value::as_str);
    if !matches!(class, Some("Functional" | "Model")) {
        return Err(err(
            "modelTopology",
            format!("model class {class:?} is not supported (Functional/Model are)"),
        ));
    }
    let config = &model_config["config"];
    let raw_layers = config["layers"]
        .as_array()
        .ok_or_else(|| err("modelTopology", "has no layer list".into()))?;
    let mut layers = Vec::new();
    for (i, l) in raw_layers.iter().enumerate() {
        let name = l["name"]
            .as_str()
            .or_else(|| l["config"]["name"].as_str())
            .ok_or_else(|| err(&format!("layer #{i}"), "has no name".into()))?
            .to_string();
        let class = l["class_name"]
            .as_str()
            .ok_or_else(|| err(&format!("layer '{name}'"), "has no class_name".into()))?
            .to_string();
        let inputs = inbound(&l["inbound_nodes"]).ok_or_else(|| {
            err(
                &format!("layer '{name}'"),
                "inbound_nodes are malformed".into(),
            )
        })?;
        layers.push(Layer {
            name,
            class,
            config: l["config"].clone(),
            inputs,
        });
    }
    let io_names = |key: &str| -> Result<Vec<String>> {
        config[key]
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|e| e.get(0).and_then(Value::as_str).map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            })
            .filter(|v| !v.is_empty())
            .ok_or_else(|| err("modelTopology", format!("{key} is missing or malformed")))
    };
    let input_layers = io_names("input_layers")?;
    let output_layers = io_names("output_layers")?;
    if input_layers.len() != 1 {
        return Err(err(
            "modelTopology",
            format!(
                "has {} inputs; only single-input models are supported",
                input_layers.len()
            ),
        ));
    }
    let input = layers
        .iter()
        .find(|l| l.name == input_layers[0])
        .ok_or_else(|| {
            err(
                "modelTopology",
                format!("input layer '{}' is not defined", input_layers[0]),
            )
        })?;
    let shape = input.config["batch_input_shape"]
        .as_array()
        .ok_or_else(|| {
            err(
                &format!("layer '{}'", input.name),
                "has no batch_input_shape".into(),
            )
        })?;
    // As written in the file (JSON): null is any size.
    let shown = serde_json::to_string(shape).unwrap_or_default();
    // null is any size; anything else must be a size (a negative one would
    // only fail at the first frame).
    let input_shape: Option<Vec<Option<usize>>> = shape
        .iter()
        .skip(1)
        .map(|d| match d {
            Value::Null => Some(None),
            d => d.as_u64().and_then(|d| usize::try_from(d).ok()).map(Some),
        })
        .collect();
    let input_shape = match input_shape {
        Some(s) if s.len() == 3 && s[2].is_some() => s,
        _ => {
            return Err(err(
                &format!("layer '{}'", input.name),
                format!(
                    "batch_input_shape {shown} is not [batch, h, w, channels] of sizes (null: \
                     any), with known channels"
                ),
            ))
        }
    };
    let weights = read_weights(path, &json, files)?;
    let source = TfjsSource {
        path: path.to_path_buf(),
        layers,
        weights,
        input_layers,
        output_layers,
        input_shape: input_shape.clone(),
    };
    let range = Some([0.0, 255.0]);
    let inputs = vec![TensorInfo {
        name: source.input_layers[0].clone(),
        shape: std::iter::once(None).chain(input_shape).collect(),
        data_type: DataType::Float32,
        range,
    }];
    let outputs = source
        .output_layers
        .iter()
        .map(|n| TensorInfo {
            name: n.clone(),
            shape: vec![None, None, None, source.output_channels(n)],
            data_type: DataType::Float32,
            range: None,
        })
        .collect();
    Ok((inputs, outputs, Box::new(source)))
}

/// Names of the layers feeding one node (Keras 2 format: [[[name, node, tensor, kwargs], ...]]).
fn inbound(nodes: &Value) -> Option<Vec<String>> {
    let nodes = nodes.as_array()?;
    match nodes.len() {
        0 => Some(Vec::new()),
        1 => nodes[0]
            .as_array()?
            .iter()
            .map(|e| e.get(0)?.as_str().map(str::to_string))
            .collect(),
        _ => None,
    }
}

/// Reads every shard named by the manifest, checking sizes before allocating.
fn read_weights(
    path: &Path,
    json: &Value,
    files: &Companions<'_>,
) -> Result<HashMap<String, Weight>> {
    let err = |loc: &str, m: String| model_error(path, loc, m);
    let groups = json["weightsManifest"]
        .as_array()
        .ok_or_else(|| err("weightsManifest", "is missing or not a list".into()))?;
    let mut weights = HashMap::new();
    for (g, group) in groups.iter().enumerate() {
        let loc = format!("weightsManifest group {g}");
        let paths = group["paths"]
            .as_array()
            .and_then(|p| p.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
            .ok_or_else(|| err(&loc, "has no paths".into()))?;
        let entries = group["weights"]
            .as_array()
            .ok_or_else(|| err(&loc, "has no weights".into()))?;
        // Validate every entry and the total size before reading anything.
        let mut specs = Vec::new();
        let mut total: usize = 0;
        for e in entries {
            let name = e["name"]
                .as_str()
                .ok_or_else(|| err(&loc, "has a weight without a name".into()))?;
            let wloc = format!("weight '{name}'");
            if e.get("quantization").is_some_and(|q| !q.is_null()) {
                return Err(err(
                    &wloc,
                    "is quantized; only float32 weights are supported".into(),
                ));
            }
            let dtype = e["dtype"].as_str().unwrap_or("?");
            if dtype != "float32" {
                return Err(err(
                    &wloc,
                    format!("has dtype '{dtype}'; only float32 is supported"),
                ));
            }
            let shape = e["shape"]
                .as_array()
                .and_then(|s| {
                    s.iter()
                        .map(|d| d.as_u64().map(|d| d as usize))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| err(&wloc, "has a malformed shape".into()))?;
            let bytes = shape
                .iter()
                .try_fold(4usize, |n, &d| n.checked_mul(d))
                .filter(|&n| n <= isize::MAX as usize)
                .ok_or_else(|| err(&wloc, format!("shape {shape:?} is absurdly large")))?;
            total = total
                .checked_add(bytes)
                .ok_or_else(|| err(&wloc, "sizes overflow".into()))?;
            specs.push((name.to_string(), shape, bytes));
        }
        let mut sizes = Vec::new();
        let mut available: u64 = 0;
        for p in &paths {
            let len = files
                .len(p)
                .map_err(|e| err(&loc, format!("cannot read shard '{p}': {e}")))?;
            available = available.saturating_add(len);
            sizes.push(len);
        }
        if available != total as u64 {
            return Err(err(
                &loc,
                format!(
                    "shards {} hold {available} bytes, but the manifest's weights need {total}",
                    paths.join(", ")
                ),
            ));
        }
        let mut data = Vec::with_capacity(total);
        for (p, &len) in paths.iter().zip(&sizes) {
            let len =
                usize::try_from(len).map_err(|_| err(&loc, format!("shard '{p}' is too large")))?;
            let bytes = files
                .read(p, 0, len)
                .map_err(|e| err(&loc, format!("cannot read shard '{p}': {e}")))?;
            data.extend_from_slice(&bytes);
        }
        if data.len() != total {
            return Err(err(&loc, "a shard changed size while being read".into()));
        }
        let mut offset = 0;
        for (name, shape, bytes) in specs {
            let values: Vec<f32> = bytemuck::pod_collect_to_vec(&data[offset..offset + bytes]);
            offset += bytes;
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return Err(err(
                    &format!("weight '{name}'"),
                    format!("holds a non-finite value ({}) at element {i}", values[i]),
                ));
            }
            if weights
                .insert(name.clone(), Weight { shape, values })
                .is_some()
            {
                return Err(err(&format!("weight '{name}'"), "is listed twice".into()));
            }
        }
    }
    Ok(weights)
}

impl Source for TfjsSource {
    fn write(
        &self,
        builder: &GraphBuilder,
        hw: Option<(usize, usize)>,
        batch: usize,
    ) -> Result<Vec<(String, Operand)>> {
        layers::write(self, builder, hw, batch)
    }

    fn probe_size(&self) -> Option<(usize, usize)> {
        // Small but large enough for a few stride-2 layers.
        Some((
            self.input_shape[0].unwrap_or(8),
            self.input_shape[1].unwrap_or(8),
        ))
    }

    fn operator_count(&self) -> usize {
        self.layers
            .iter()
            .filter(|l| l.class != "InputLayer")
            .count()
    }
}
