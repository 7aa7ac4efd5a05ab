//! [`InferenceOutputs`]: the output tensors of one inference, handed to
//! whoever reads them (e.g. with a buffer, in `wgnninfer`'s tensor meta).

use std::sync::Arc;

use crate::error::Result;
use crate::ml::{Context, Tensor};
use crate::tasks::ModelInstance;

/// The outputs of one inference, on the context that computed them.
pub struct InferenceOutputs {
    context: Context,
    tensors: Vec<(String, Tensor)>,
    /// Keeps the context alive (its instance destroys it when it goes).
    _instance: Arc<ModelInstance>,
}

impl std::fmt::Debug for InferenceOutputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tensors.iter().map(|(n, t)| (n, t.shape())))
            .finish()
    }
}

impl InferenceOutputs {
    pub(crate) fn new(instance: &Arc<ModelInstance>, tensors: Vec<(String, Tensor)>) -> Self {
        InferenceOutputs {
            context: instance.context().clone(),
            tensors,
            _instance: instance.clone(),
        }
    }

    /// The context the tensors live on (GPU or CPU), for `read_tensor`,
    /// `export_to_gpu` or further `dispatch`es.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// (output name, tensor), in the model's output order.
    pub fn tensors(&self) -> &[(String, Tensor)] {
        &self.tensors
    }

    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// Reads output `index` as f32 values: waits for the inference, and on a
    /// GPU context it is one counted download.
    pub fn read_f32(&self, index: usize) -> Result<Vec<f32>> {
        let (name, t) = self.tensors.get(index).ok_or_else(|| {
            crate::Error::invalid(format!(
                "the inference has {} outputs, no output {index}",
                self.tensors.len()
            ))
        })?;
        self.context
            .read_f32(t)
            .map_err(|e| crate::Error::invalid(format!("cannot read output '{name}': {e}")))
    }
}
