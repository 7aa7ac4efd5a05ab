//! A graph's host stage: what a graph computes after its last kernel on the
//! host, for models whose results have sizes that only the data decides
//! (an ONNX graph that ends in NonZero and NonMaxSuppression). The graph
//! writes the tensors where the data-dependent part starts (small detection
//! tensors: scores and boxes, never a frame); a dispatch reads them back,
//! runs the stage on them and writes its results into the dispatch's output
//! tensors, queued before anything the caller records after it.

use std::sync::Arc;

use super::backend::{Storage, Timing};
use super::context::Context;
use super::host::HostTensor;
use super::tensor::{Tensor, TensorDescriptor};
use super::types::OperandDescriptor;
use crate::error::{Error, Result};

/// The host computation of a stage: the graph's outputs in, in the graph's
/// output order; the stage's outputs out, in its declared order.
pub trait HostStep: Send + Sync {
    fn run(&self, inputs: Vec<HostTensor>) -> Result<Vec<HostTensor>>;
}

/// A step and the outputs it declares (what the graph's users bind).
#[derive(Clone)]
pub(crate) struct HostStage {
    pub step: Arc<dyn HostStep>,
    pub outputs: Vec<(String, OperandDescriptor)>,
}

impl HostStage {
    /// Dispatches `plan` into tensors of its own outputs, reads them back,
    /// runs the step and writes its results into `outputs` (the stage's
    /// order). With [`Timing::Into`] the caller's commands so far are
    /// submitted first (the frame's stages and the graph), and what the
    /// caller records after this reads the written results.
    pub(crate) fn dispatch(
        &self,
        context: &Context,
        graph: &super::Graph,
        inputs: &[&Storage],
        outputs: &[&Storage],
        timing: Timing<'_>,
    ) -> Result<()> {
        let cut: Vec<Tensor> = graph
            .kernel_outputs()
            .into_iter()
            .map(|(_, d)| {
                context.create_tensor(TensorDescriptor::new(d.data_type, d.shape).readable())
            })
            .collect::<Result<_>>()?;
        let storage: Vec<&Storage> = cut.iter().map(Tensor::storage).collect();
        let backend = &context.inner.backend;
        let plan = &graph.inner.plan;
        match timing {
            Timing::Into(commands) => {
                backend.dispatch("dispatch", plan, inputs, &storage, Timing::Into(commands))?;
                let gpu = context.gpu_handle().ok_or_else(|| {
                    Error::invalid("dispatch: recorded commands need a GPU context")
                })?;
                std::mem::replace(commands, crate::gpu::Commands::new(gpu)).submit("dispatch")?;
            }
            other => backend.dispatch("dispatch", plan, inputs, &storage, other)?,
        }
        let values = cut
            .iter()
            .map(|t| context.read_host(t))
            .collect::<Result<Vec<_>>>();
        for t in &cut {
            t.destroy();
        }
        let results = self.step.run(values?)?;
        for ((name, want), (value, storage)) in self.outputs.iter().zip(results.iter().zip(outputs))
        {
            if value.descriptor() != *want {
                return Err(Error::invalid(format!(
                    "dispatch: output '{name}' is declared {want}, but the graph's host stage \
                     computed {}",
                    value.descriptor()
                )));
            }
            backend.write(storage, value.bytes())?;
        }
        Ok(())
    }
}
