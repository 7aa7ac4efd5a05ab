//! ONNX tensors held on the host at import time: initializers, `Constant`
//! nodes and folded shape arithmetic. Integers stay `i64` here (shape
//! subgraphs use `INT64_MAX` as "to the end"); only a value that becomes a
//! graph constant is narrowed to int32, and range-checked then.

use std::path::Path;

use half::f16;

use super::proto;
use crate::ml::{DataType, HostData, HostTensor, OperandDescriptor};
use crate::models::Companions;

/// As `ml`'s own limit: a lying header cannot ask for an absurd allocation.
const MAX_ELEMENTS: usize = 1 << 31;

/// The ONNX element types wgnn holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    F32,
    F16,
    I64,
    I32,
    Bool,
    U8,
    /// Quantized weights and zero points; held as int32 when a graph value.
    I8,
}

impl Elem {
    pub(crate) fn from_onnx(code: i32) -> std::result::Result<Elem, String> {
        use proto::tensor_proto::DataType as T;
        Ok(match T::try_from(code) {
            Ok(T::Float) => Elem::F32,
            Ok(T::Float16) => Elem::F16,
            Ok(T::Int64) => Elem::I64,
            Ok(T::Int32) => Elem::I32,
            Ok(T::Bool) => Elem::Bool,
            Ok(T::Uint8) => Elem::U8,
            Ok(T::Int8) => Elem::I8,
            Ok(t) => {
                return Err(format!(
                    "type {} is not supported (float, float16, int64, int32, int8, uint8 and \
                     bool are)",
                    t.as_str_name()
                ))
            }
            Err(_) => return Err(format!("unknown tensor type {code}")),
        })
    }

    /// The wgnn type a graph operand of this ONNX type has.
    pub(crate) fn data_type(self) -> DataType {
        match self {
            Elem::F32 => DataType::Float32,
            Elem::F16 => DataType::Float16,
            Elem::I64 | Elem::I32 | Elem::I8 => DataType::Int32,
            Elem::Bool | Elem::U8 => DataType::Uint8,
        }
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F16)
    }

    /// ONNX's spelling, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Elem::F32 => "float",
            Elem::F16 => "float16",
            Elem::I64 => "int64",
            Elem::I32 => "int32",
            Elem::Bool => "bool",
            Elem::U8 => "uint8",
            Elem::I8 => "int8",
        }
    }
}

/// Values of a host tensor: floats (float16 held as the f32 it converts to
/// exactly) or integers (int64, int32, int8, bool and uint8 alike).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    F(Vec<f32>),
    I(Vec<i64>),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Const {
    pub elem: Elem,
    pub shape: Vec<usize>,
    pub data: Data,
}

impl Const {
    pub(crate) fn len(&self) -> usize {
        match &self.data {
            Data::F(v) => v.len(),
            Data::I(v) => v.len(),
        }
    }

    pub(crate) fn ints(elem: Elem, shape: Vec<usize>, values: Vec<i64>) -> Const {
        Const {
            elem,
            shape,
            data: Data::I(values),
        }
    }

    pub(crate) fn floats(elem: Elem, shape: Vec<usize>, values: Vec<f32>) -> Const {
        let values = if elem == Elem::F16 {
            values
                .into_iter()
                .map(|v| f16::from_f32(v).to_f32())
                .collect()
        } else {
            values
        };
        Const {
            elem,
            shape,
            data: Data::F(values),
        }
    }

    /// Values as i64 (floats truncated), for index-like inputs.
    pub(crate) fn as_i64(&self) -> Vec<i64> {
        match &self.data {
            Data::I(v) => v.clone(),
            Data::F(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }

    pub(crate) fn as_f32(&self) -> Vec<f32> {
        match &self.data {
            Data::I(v) => v.iter().map(|&x| x as f32).collect(),
            Data::F(v) => v.clone(),
        }
    }

    /// The tensor as a graph constant's descriptor and little-endian bytes;
    /// `what` names it in the error for an int64 value outside int32.
    pub(crate) fn to_bytes(
        &self,
        what: &str,
    ) -> std::result::Result<(OperandDescriptor, Vec<u8>), String> {
        let host = self.to_host(what)?;
        let bytes = match &host.data {
            HostData::F32(v) => bytemuck::cast_slice(v).to_vec(),
            HostData::F16(v) => bytemuck::cast_slice(v).to_vec(),
            HostData::I32(v) => bytemuck::cast_slice(v).to_vec(),
            HostData::U8(v) => v.clone(),
        };
        Ok((host.descriptor(), bytes))
    }

    /// As a wgnn host tensor: int64 narrowed to int32 (range-checked), bool as uint8.
    pub(crate) fn to_host(&self, what: &str) -> std::result::Result<HostTensor, String> {
        let shape = self.shape.clone();
        let data = match (&self.data, self.elem.data_type()) {
            (Data::F(v), DataType::Float16) => {
                HostData::F16(v.iter().map(|&x| f16::from_f32(x)).collect())
            }
            (Data::F(v), _) => HostData::F32(v.clone()),
            (Data::I(v), DataType::Uint8) => HostData::U8(v.iter().map(|&x| x as u8).collect()),
            (Data::I(v), _) => HostData::I32(
                v.iter()
                    .enumerate()
                    .map(|(i, &x)| {
                        i32::try_from(x).map_err(|_| {
                            format!(
                                "{what}: value {x} at element {i} does not fit in int32 \
                                 (wgnn holds int64 as int32)"
                            )
                        })
                    })
                    .collect::<std::result::Result<_, _>>()?,
            ),
        };
        Ok(HostTensor { shape, data })
    }
}

/// Element count of ONNX dims, refusing negative and absurd ones.
pub(crate) fn checked_shape(dims: &[i64]) -> std::result::Result<Vec<usize>, String> {
    let mut n: usize = 1;
    let mut shape = Vec::with_capacity(dims.len());
    for &d in dims {
        let d =
            usize::try_from(d).map_err(|_| format!("shape {dims:?} has a negative dimension"))?;
        n = n
            .checked_mul(d)
            .filter(|&n| n <= MAX_ELEMENTS)
            .ok_or_else(|| format!("shape {dims:?} has more than {MAX_ELEMENTS} elements"))?;
        shape.push(d);
    }
    Ok(shape)
}

/// Decodes a `TensorProto`; `files` are those beside the model, where
/// external data lives (`None`: external data is refused). The caller names
/// the tensor in errors.
pub(crate) fn decode(
    t: &proto::TensorProto,
    files: Option<&Companions<'_>>,
) -> std::result::Result<Const, String> {
    let elem = Elem::from_onnx(t.data_type())?;
    let shape = checked_shape(&t.dims)?;
    let count: usize = shape.iter().product();
    if t.segment.is_some() {
        return Err("segmented tensors are not supported".into());
    }
    let external = t.data_location == Some(proto::tensor_proto::DataLocation::External as i32);
    let raw: Option<Vec<u8>> = if external {
        Some(read_external(t, files, count * byte_size(elem))?)
    } else {
        t.raw_data.clone()
    };
    let short = |have: usize| {
        format!(
            "shape {shape:?} needs {count} {} values, the file holds {have}",
            elem.name()
        )
    };
    let data = if let Some(raw) = raw {
        let size = byte_size(elem);
        if raw.len() != count * size {
            return Err(short(raw.len() / size));
        }
        match elem {
            Elem::F32 => Data::F(
                raw.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            Elem::F16 => Data::F(
                raw.chunks_exact(2)
                    .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
                    .collect(),
            ),
            Elem::I64 => Data::I(
                raw.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
                    .collect(),
            ),
            Elem::I32 => Data::I(
                raw.chunks_exact(4)
                    .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                    .collect(),
            ),
            Elem::Bool | Elem::U8 => Data::I(raw.iter().map(|&b| i64::from(b)).collect()),
            Elem::I8 => Data::I(raw.iter().map(|&b| i64::from(b as i8)).collect()),
        }
    } else {
        let data = match elem {
            Elem::F32 => Data::F(t.float_data.clone()),
            Elem::F16 => Data::F(
                t.int32_data
                    .iter()
                    .map(|&b| f16::from_bits(b as u16).to_f32())
                    .collect(),
            ),
            Elem::I64 => Data::I(t.int64_data.clone()),
            Elem::I32 | Elem::Bool | Elem::U8 | Elem::I8 => {
                Data::I(t.int32_data.iter().map(|&v| i64::from(v)).collect())
            }
        };
        let have = match &data {
            Data::F(v) => v.len(),
            Data::I(v) => v.len(),
        };
        if have != count {
            return Err(short(have));
        }
        data
    };
    Ok(Const { elem, shape, data })
}

fn byte_size(elem: Elem) -> usize {
    match elem {
        Elem::F32 | Elem::I32 => 4,
        Elem::F16 => 2,
        Elem::I64 => 8,
        Elem::Bool | Elem::U8 | Elem::I8 => 1,
    }
}

/// Reads `need` bytes of an initializer stored outside the model
/// (`location`, `offset`, `length` keys; the path relative to the model's folder).
fn read_external(
    t: &proto::TensorProto,
    files: Option<&Companions<'_>>,
    need: usize,
) -> std::result::Result<Vec<u8>, String> {
    let key = |k: &str| {
        t.external_data
            .iter()
            .find(|e| e.key() == k)
            .map(|e| e.value().to_string())
    };
    let location = key("location").ok_or("external data without a 'location'")?;
    let number = |k: &str| -> std::result::Result<Option<u64>, String> {
        key(k)
            .map(|v| {
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("external data {k} '{v}' is not a number"))
            })
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let length = number("length")?;
    let Some(files) = files else {
        return Err(format!(
            "external data ('{location}') needs the model's folder"
        ));
    };
    // The path must stay inside the model's folder: a model file must not
    // make wgnn read arbitrary files.
    crate::files::relative_inside(Path::new(&location))
        .map_err(|e| format!("external data location '{location}': {e}"))?;
    let unreadable =
        |e: std::io::Error| format!("external data file '{location}' cannot be read: {e}");
    let file_len = files.len(&location).map_err(unreadable)?;
    if let Some(l) = length {
        if l != need as u64 {
            return Err(format!(
                "external data length {l} differs from the {need} bytes \
                 its shape and type need"
            ));
        }
    }
    if offset.saturating_add(need as u64) > file_len {
        return Err(format!(
            "external data file '{location}' has {file_len} bytes, \
             too short for {need} bytes at offset {offset}"
        ));
    }
    let bytes = files.read(&location, offset, need).map_err(unreadable)?;
    Ok(bytes)
}
