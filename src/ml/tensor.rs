//! `Tensor` (WebNN `MLTensor`): an opaque tensor owned by a context, written,
//! read and passed to graphs on that context's timeline.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::backend::Storage;
use super::types::{DataType, OperandDescriptor};
use crate::error::{Error, Result};

/// WebNN `MLTensorDescriptor`. `readable`/`writable` allow `read_tensor` and
/// `write_tensor`; `exportable_to_gpu` allows renting the tensor's buffer to
/// custom WGSL with `Context::export_to_gpu`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDescriptor {
    pub data_type: DataType,
    pub shape: Vec<usize>,
    pub readable: bool,
    pub writable: bool,
    pub exportable_to_gpu: bool,
}

impl TensorDescriptor {
    pub fn new(data_type: DataType, shape: impl Into<Vec<usize>>) -> Self {
        TensorDescriptor {
            data_type,
            shape: shape.into(),
            readable: false,
            writable: false,
            exportable_to_gpu: false,
        }
    }

    pub fn readable(mut self) -> Self {
        self.readable = true;
        self
    }

    pub fn writable(mut self) -> Self {
        self.writable = true;
        self
    }

    pub fn exportable_to_gpu(mut self) -> Self {
        self.exportable_to_gpu = true;
        self
    }

    pub fn operand(&self) -> OperandDescriptor {
        OperandDescriptor::new(self.data_type, self.shape.clone())
    }
}

static NEXT_TENSOR: AtomicU64 = AtomicU64::new(1);

#[derive(Default)]
pub(crate) struct TensorState {
    pub destroyed: bool,
    pub rented: bool,
}

pub(crate) struct TensorInner {
    pub id: u64,
    pub context: u64,
    pub desc: TensorDescriptor,
    /// Memory made and used by the context's back end.
    pub storage: Storage,
    pub state: Mutex<TensorState>,
}

/// WebNN `MLTensor`. Cloning gives another handle to the same tensor.
#[derive(Clone)]
pub struct Tensor {
    pub(crate) inner: Arc<TensorInner>,
}

impl Tensor {
    pub(crate) fn new(context: u64, desc: TensorDescriptor, storage: Storage) -> Tensor {
        Tensor {
            inner: Arc::new(TensorInner {
                id: NEXT_TENSOR.fetch_add(1, Ordering::Relaxed),
                context,
                desc,
                storage,
                state: Mutex::default(),
            }),
        }
    }

    pub fn descriptor(&self) -> &TensorDescriptor {
        &self.inner.desc
    }

    pub fn data_type(&self) -> DataType {
        self.inner.desc.data_type
    }

    pub fn shape(&self) -> &[usize] {
        &self.inner.desc.shape
    }

    pub fn byte_length(&self) -> usize {
        self.inner.desc.operand().byte_length()
    }

    /// WebNN `MLTensor.destroy()`: releases the memory now. Later use is an error.
    pub fn destroy(&self) {
        let mut state = self.inner.state.lock().unwrap();
        state.destroyed = true;
        // A rented buffer is still in the renter's hands: it is released
        // when it comes back (`RentedBuffer`'s drop).
        if !state.rented {
            self.inner.storage.release();
        }
    }

    pub fn is_destroyed(&self) -> bool {
        self.inner.state.lock().unwrap().destroyed
    }

    /// Checks the tensor may take part in an operation now.
    pub(crate) fn usable(&self, context: u64, what: &str) -> Result<()> {
        if self.inner.context != context {
            return Err(Error::invalid(format!(
                "{what}: {self} belongs to another context"
            )));
        }
        let state = self.inner.state.lock().unwrap();
        if state.destroyed {
            return Err(Error::invalid(format!("{what}: {self} has been destroyed")));
        }
        if state.rented {
            return Err(Error::invalid(format!(
                "{what}: {self} is rented to the GPU (export_to_gpu); return it first"
            )));
        }
        Ok(())
    }

    pub(crate) fn storage(&self) -> &Storage {
        &self.inner.storage
    }
}

impl std::fmt::Display for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tensor #{} ({} {:?})",
            self.inner.id, self.inner.desc.data_type, self.inner.desc.shape
        )
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// A tensor's buffer lent to custom GPU code (the MLTensor explainer's `importExternalBuffer`).
/// While it exists, the context refuses to dispatch, read or write the tensor.
/// Dropping it (or [`RentedBuffer::give_back`]) returns the tensor with no copy:
/// the buffer *is* the tensor's storage, and work on the one queue stays ordered.
pub struct RentedBuffer {
    pub(crate) tensor: Tensor,
}

impl RentedBuffer {
    /// The tensor's storage: STORAGE | COPY_SRC | COPY_DST, packed elements
    /// (`array<f32>` for float32, `array<i32>` for int32, `array<f16>` for
    /// float16, `array<u32>` words for uint8).
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.tensor
            .storage()
            .gpu_buffer()
            .expect("rented tensors live on the GPU")
    }

    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    pub fn give_back(self) {}
}

impl Drop for RentedBuffer {
    fn drop(&mut self) {
        let mut state = self.tensor.inner.state.lock().unwrap();
        state.rented = false;
        // A tensor destroyed while rented is released once it comes back.
        if state.destroyed {
            self.tensor.storage().release();
        }
    }
}
