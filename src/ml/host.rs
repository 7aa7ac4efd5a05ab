//! Typed values on the host, for feeding and reading whole models in tools
//! and tests ([`crate::models::Model::run`]). Pipelines keep tensors on the
//! device and never come through here.

use super::context::Context;
use super::tensor::Tensor;
use super::types::{DataType, OperandDescriptor};
use crate::error::{Error, Result};

/// The values of a [`HostTensor`], one variant per [`DataType`].
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    F32(Vec<f32>),
    F16(Vec<half::f16>),
    I32(Vec<i32>),
    U8(Vec<u8>),
}

/// A tensor's shape and values in host memory.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: HostData,
}

impl HostTensor {
    pub fn f32(shape: impl Into<Vec<usize>>, values: Vec<f32>) -> Self {
        HostTensor {
            shape: shape.into(),
            data: HostData::F32(values),
        }
    }

    pub fn f16(shape: impl Into<Vec<usize>>, values: Vec<half::f16>) -> Self {
        HostTensor {
            shape: shape.into(),
            data: HostData::F16(values),
        }
    }

    pub fn i32(shape: impl Into<Vec<usize>>, values: Vec<i32>) -> Self {
        HostTensor {
            shape: shape.into(),
            data: HostData::I32(values),
        }
    }

    pub fn u8(shape: impl Into<Vec<usize>>, values: Vec<u8>) -> Self {
        HostTensor {
            shape: shape.into(),
            data: HostData::U8(values),
        }
    }

    /// The tensor held by `bytes` (little-endian elements of `desc`).
    pub fn from_bytes(desc: &OperandDescriptor, bytes: &[u8]) -> Result<Self> {
        if bytes.len() != desc.byte_length() {
            return Err(Error::invalid(format!(
                "{desc} needs {} bytes, got {}",
                desc.byte_length(),
                bytes.len()
            )));
        }
        let data = match desc.data_type {
            DataType::Float32 => HostData::F32(bytemuck::pod_collect_to_vec(bytes)),
            DataType::Float16 => HostData::F16(bytemuck::pod_collect_to_vec(bytes)),
            DataType::Int32 => HostData::I32(bytemuck::pod_collect_to_vec(bytes)),
            DataType::Uint8 => HostData::U8(bytes.to_vec()),
        };
        Ok(HostTensor {
            shape: desc.shape.clone(),
            data,
        })
    }

    pub fn data_type(&self) -> DataType {
        match self.data {
            HostData::F32(_) => DataType::Float32,
            HostData::F16(_) => DataType::Float16,
            HostData::I32(_) => DataType::Int32,
            HostData::U8(_) => DataType::Uint8,
        }
    }

    pub fn descriptor(&self) -> OperandDescriptor {
        OperandDescriptor::new(self.data_type(), self.shape.clone())
    }

    /// Number of values held (which may disagree with the shape: see
    /// [`HostTensor::check`]).
    pub fn len(&self) -> usize {
        match &self.data {
            HostData::F32(v) => v.len(),
            HostData::F16(v) => v.len(),
            HostData::I32(v) => v.len(),
            HostData::U8(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks that the values fill the shape exactly.
    pub fn check(&self, what: &str) -> Result<()> {
        let want: usize = self.shape.iter().product();
        if self.len() != want {
            return Err(Error::invalid(format!(
                "{what}: shape {:?} holds {want} values, got {}",
                self.shape,
                self.len()
            )));
        }
        Ok(())
    }

    /// The values as little-endian bytes, as tensors hold them.
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            HostData::F32(v) => bytemuck::cast_slice(v),
            HostData::F16(v) => bytemuck::cast_slice(v),
            HostData::I32(v) => bytemuck::cast_slice(v),
            HostData::U8(v) => v,
        }
    }

    /// Every value converted to f32 (exact for float16, uint8 and integers
    /// up to 2^24), for comparing outputs whatever their type.
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.data {
            HostData::F32(v) => v.clone(),
            HostData::F16(v) => v.iter().map(|h| h.to_f32()).collect(),
            HostData::I32(v) => v.iter().map(|&i| i as f32).collect(),
            HostData::U8(v) => v.iter().map(|&u| f32::from(u)).collect(),
        }
    }
}

impl Context {
    /// Queues a write of `value` into `tensor`, checking type and shape.
    pub fn write_host(&self, tensor: &Tensor, value: &HostTensor) -> Result<()> {
        value.check("write_host")?;
        if value.data_type() != tensor.data_type() || value.shape != tensor.shape() {
            return Err(Error::invalid(format!(
                "write_host: {tensor} cannot take a {} value of shape {:?}",
                value.data_type(),
                value.shape
            )));
        }
        self.write_tensor(tensor, value.bytes())
    }

    /// Reads a tensor of any type and waits for its values.
    pub fn read_host(&self, tensor: &Tensor) -> Result<HostTensor> {
        let bytes = self.read_tensor_blocking(tensor)?;
        HostTensor::from_bytes(&tensor.descriptor().operand(), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::{HostData, HostTensor};
    use crate::ml::{Context, DataType, TensorDescriptor};

    #[test]
    fn every_type_round_trips_through_a_context_and_mismatches_are_refused() {
        let ctx = Context::cpu();
        let values = [
            HostTensor::f32([2, 2], vec![1.5, -2.0, 0.0, 7.25]),
            HostTensor::f16([3], vec![half::f16::from_f32(0.5); 3]),
            HostTensor::i32([1, 3], vec![-7, 0, 1 << 30]),
            HostTensor::u8([5], vec![0, 1, 2, 254, 255]),
        ];
        for v in &values {
            let t = ctx
                .create_tensor(
                    TensorDescriptor::new(v.data_type(), v.shape.clone())
                        .writable()
                        .readable(),
                )
                .unwrap();
            ctx.write_host(&t, v).unwrap();
            assert_eq!(&ctx.read_host(&t).unwrap(), v);
        }
        assert_eq!(values[2].to_f32(), [-7.0, 0.0, 1073741824.0]);
        let t = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [2, 2]).writable())
            .unwrap();
        let e = ctx.write_host(&t, &values[2]).unwrap_err().to_string();
        assert!(
            e.contains("cannot take a int32 value of shape [1, 3]"),
            "{e}"
        );
        let short = HostTensor {
            shape: vec![2, 2],
            data: HostData::F32(vec![1.0]),
        };
        let e = ctx.write_host(&t, &short).unwrap_err().to_string();
        assert!(e.contains("shape [2, 2] holds 4 values, got 1"), "{e}");
    }
}
