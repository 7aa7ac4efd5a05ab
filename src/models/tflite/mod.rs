//! TFLite flatbuffers. Parsed with the `flatbuffers` crate through code that
//! `flatc` generated from TensorFlow's official `schema.fbs` (see
//! `schema/README.md` beside this file), so every access is verified.

mod densify;
mod ops;
mod quant;
mod strided_slice;
#[allow(
    clippy::all,
    clippy::pedantic,
    dead_code,
    deprecated,
    mismatched_lifetime_syntaxes,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unsafe_op_in_unsafe_fn,
    unused_imports
)]
#[rustfmt::skip]
mod schema_generated;

use std::path::{Path, PathBuf};

use schema_generated::tflite as fb;

use super::{model_error, Source, TensorInfo};
use crate::error::Result;
use crate::ml::{DataType, GraphBuilder, Operand};

pub(crate) fn is_tflite(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(b"TFL3")
}

type Parsed = (Vec<TensorInfo>, Vec<TensorInfo>, Box<dyn Source>);

pub(crate) fn parse(path: &Path, bytes: Vec<u8>) -> Result<Parsed> {
    let source = TfliteSource {
        path: path.to_path_buf(),
        bytes,
        real_io: false,
    };
    let model = source.root()?;
    let graph = source.subgraph(&model)?;
    source.check_quantization(&graph)?;
    let tensors = graph.tensors.len();
    let info = |list: Option<flatbuffers::Vector<'_, i32>>, what: &str, range| {
        let list = list.ok_or_else(|| source.err("subgraph 0", format!("has no {what}s")))?;
        list.iter()
            .map(|t| {
                let index = usize::try_from(t)
                    .ok()
                    .filter(|&i| i < tensors)
                    .ok_or_else(|| {
                        source.err(
                            "subgraph 0",
                            format!("{what} tensor {t} is out of range ({tensors} tensors)"),
                        )
                    })?;
                let tensor = graph.tensors.get(index);
                let (data_type, shape) = source.tensor_type(&tensor, index)?;
                // A quantized input holds integers: the range they take.
                let range = match (range, quant::of(&tensor).ok().flatten()) {
                    (Some(r), Some(q)) => quant::input_range(&q, r),
                    (r, _) => r,
                };
                Ok(TensorInfo {
                    name: tensor.name().unwrap_or_default().to_string(),
                    shape: shape.into_iter().map(Some).collect(),
                    data_type,
                    range,
                })
            })
            .collect::<Result<Vec<_>>>()
    };
    let inputs = info(graph.subgraph.inputs(), "input", Some([0.0, 1.0]))?;
    let outputs = info(graph.subgraph.outputs(), "output", None)?;
    Ok((inputs, outputs, Box::new(source)))
}

struct TfliteSource {
    path: PathBuf,
    bytes: Vec<u8>,
    /// Real values at quantized inputs and outputs ([`Source::set_real_io`]).
    real_io: bool,
}

struct Subgraph<'a> {
    subgraph: fb::SubGraph<'a>,
    tensors: flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<fb::Tensor<'a>>>,
}

impl TfliteSource {
    fn err(&self, location: impl Into<String>, message: impl std::fmt::Display) -> crate::Error {
        model_error(&self.path, location, message)
    }

    fn root(&self) -> Result<fb::Model<'_>> {
        fb::root_as_model(&self.bytes).map_err(|e| {
            self.err(
                "flatbuffer",
                format!("not a valid TFLite model (truncated or corrupted?): {e}"),
            )
        })
    }

    fn subgraph<'a>(&self, model: &fb::Model<'a>) -> Result<Subgraph<'a>> {
        let subgraph = model
            .subgraphs()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| self.err("model", "has no subgraph"))?
            .get(0);
        let tensors = subgraph
            .tensors()
            .ok_or_else(|| self.err("subgraph 0", "has no tensors"))?;
        Ok(Subgraph { subgraph, tensors })
    }

    /// Quantized tensors wgnn cannot hold (int16, int4) are refused up
    /// front, naming the first, before any operator is read.
    /// Whether an input or output of subgraph 0 is quantized.
    fn quantized_io(&self) -> Result<bool> {
        let model = self.root()?;
        let graph = self.subgraph(&model)?;
        let ends = graph
            .subgraph
            .inputs()
            .into_iter()
            .chain(graph.subgraph.outputs());
        let quantized = ends.flatten().any(|t| {
            usize::try_from(t)
                .ok()
                .filter(|&i| i < graph.tensors.len())
                .is_some_and(|i| matches!(quant::of(&graph.tensors.get(i)), Ok(Some(_))))
        });
        Ok(quantized)
    }

    fn check_quantization(&self, graph: &Subgraph<'_>) -> Result<()> {
        for (index, tensor) in graph.tensors.iter().enumerate() {
            quant::of(&tensor).map_err(|e| {
                let name = tensor.name().unwrap_or_default();
                self.err(format!("tensor {index} '{name}'"), e)
            })?;
        }
        Ok(())
    }

    /// The tensor's type and static shape, refusing what wgnn cannot hold.
    /// int64 (indices, shapes) is held as int32 and bool as uint8; constants
    /// of those are converted (and range-checked) where they are read.
    fn tensor_type(&self, tensor: &fb::Tensor<'_>, index: usize) -> Result<(DataType, Vec<usize>)> {
        let name = tensor.name().unwrap_or_default();
        let location = format!("tensor {index} '{name}'");
        let quantized = quant::of(tensor).map_err(|e| self.err(&location, e))?;
        let data_type = match tensor.type_() {
            // Held as the real values they stand for (`quant`).
            _ if quantized.is_some() => DataType::Float32,
            fb::TensorType::FLOAT32 => DataType::Float32,
            fb::TensorType::FLOAT16 => DataType::Float16,
            fb::TensorType::INT32 | fb::TensorType::INT64 => DataType::Int32,
            fb::TensorType::UINT8 | fb::TensorType::BOOL => DataType::Uint8,
            t => {
                return Err(self.err(
                    location,
                    format!(
                        "type {} is not supported (float32, float16, int32, int64, uint8 and \
                         bool are)",
                        t.variant_name().unwrap_or("unknown")
                    ),
                ))
            }
        };
        let shape = tensor
            .shape()
            .map(|s| s.iter().collect::<Vec<i32>>())
            .unwrap_or_default();
        let shape = shape
            .iter()
            .map(|&d| usize::try_from(d).ok().filter(|&d| d > 0))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                self.err(
                    &location,
                    format!("shape {shape:?} has a zero, negative or unknown dimension"),
                )
            })?;
        crate::ml::OperandDescriptor::new(data_type, shape.clone())
            .validate("shape")
            .map_err(|e| self.err(&location, e))?;
        Ok((data_type, shape))
    }
}

/// Bytes per element of a tensor type as stored in the file.
fn file_element_bytes(t: fb::TensorType) -> usize {
    match t {
        fb::TensorType::INT64 => 8,
        fb::TensorType::FLOAT16 => 2,
        fb::TensorType::UINT8 | fb::TensorType::INT8 | fb::TensorType::BOOL => 1,
        _ => 4,
    }
}

impl Source for TfliteSource {
    fn write(
        &self,
        builder: &GraphBuilder,
        hw: Option<(usize, usize)>,
        batch: usize,
    ) -> Result<Vec<(String, Operand)>> {
        let model = self.root()?;
        let graph = self.subgraph(&model)?;
        ops::Writer::new(self, &model, graph, builder, batch)?.write(hw)
    }

    fn probe_size(&self) -> Option<(usize, usize)> {
        None
    }

    fn set_real_io(&mut self) -> bool {
        let Ok(quantized) = self.quantized_io() else {
            return false;
        };
        self.real_io = quantized;
        quantized
    }

    fn operator_count(&self) -> usize {
        self.root()
            .ok()
            .and_then(|m| self.subgraph(&m).ok())
            .and_then(|g| g.subgraph.operators())
            .map_or(0, |o| o.len())
    }
}
