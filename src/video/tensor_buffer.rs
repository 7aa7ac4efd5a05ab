//! The typed hand-off between the video shaders and `ml` tensors: a
//! tensor's GPU buffer together with the data type and shape it holds, so
//! that a shader refuses a tensor of the wrong shape or type with a clear
//! error instead of reading or writing whatever bytes happen to fit.

use crate::error::{Error, Result};
use crate::ml::{DataType, RentedBuffer};

/// A tensor's storage as the video shaders take it: usually a tensor
/// rented with [`Context::export_to_gpu`](crate::ml::Context::export_to_gpu)
/// (`&rented` converts), or any buffer described by hand with
/// [`TensorBuffer::new`].
#[derive(Clone, Copy, Debug)]
pub struct TensorBuffer<'a> {
    buffer: &'a wgpu::Buffer,
    data_type: DataType,
    shape: &'a [usize],
}

impl<'a> TensorBuffer<'a> {
    /// `buffer` holding a packed `data_type` tensor of `shape`.
    pub fn new(buffer: &'a wgpu::Buffer, data_type: DataType, shape: &'a [usize]) -> Self {
        TensorBuffer {
            buffer,
            data_type,
            shape,
        }
    }

    pub fn buffer(&self) -> &'a wgpu::Buffer {
        self.buffer
    }

    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    /// Checks the tensor is `data_type` of `shape`; `what` names the user
    /// (e.g. "tensorize: the destination").
    pub(crate) fn expect(&self, what: &str, data_type: DataType, shape: &[usize]) -> Result<()> {
        if self.data_type == data_type && self.shape == shape {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "{what} tensor is {} {:?}; it must be {data_type} {shape:?}",
            self.data_type, self.shape
        )))
    }
}

impl<'a> From<&'a RentedBuffer> for TensorBuffer<'a> {
    fn from(rented: &'a RentedBuffer) -> Self {
        let t = rented.tensor();
        TensorBuffer::new(rented.buffer(), t.data_type(), t.shape())
    }
}

/// The shape without its 1-sized axes: tensors whose squeezed shapes are
/// equal hold their elements in the same order.
pub(crate) fn squeezed(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}
