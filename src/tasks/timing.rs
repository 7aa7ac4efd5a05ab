//! Timing hooks of the tasks' GPU paths. [`StageMarks`] is called on the
//! encoder of each video stage (tensorize, and composite or image out) right
//! before and after the stage's passes, so a caller can bracket it with its
//! own timestamp queries (wgnn-bench does). The model's dispatch is encoded
//! by `ml`, which times it itself ([`ModelTiming`]); an untimed model may
//! be recorded in the same encoder as the stages around it.

use crate::error::Result;
use crate::ml::{Context, Graph, Tensor};

/// The video stages a task encodes itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Frame -> model input.
    Tensorize,
    /// Model output (+ frame) -> output frame: composite or image out.
    Output,
}

/// Called around each [`Stage`] of a GPU run, on the stage's encoder.
pub trait StageMarks {
    fn begin(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage);
    fn end(&mut self, encoder: &mut wgpu::CommandEncoder, stage: Stage);
}

/// How the model's dispatch of a GPU run is timed. Timing waits for the
/// GPU, so callers ask for it now and then, not on every frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ModelTiming {
    /// A plain dispatch.
    #[default]
    Off,
    /// The whole dispatch as it is encoded for real
    /// ([`Graph::gpu_time`](crate::ml::Graph::gpu_time)).
    Whole,
    /// Every kernel in its own timed pass, summed
    /// ([`Graph::profile`](crate::ml::Graph::profile)'s `total_ms`).
    PerKernel,
}

/// What one GPU run queued.
#[derive(Debug)]
pub struct GpuRun {
    /// The last submission of the frame: waiting for it waits for the frame.
    pub submission: wgpu::SubmissionIndex,
    /// The model's GPU milliseconds when [`ModelTiming`] asked for them (and
    /// the model ran: `SegmentEffect::None` runs none).
    pub model_ms: Option<f64>,
}

/// Calls `marks` around `encode` for `stage`.
pub(crate) fn marked<T>(
    marks: &mut Option<&mut dyn StageMarks>,
    encoder: &mut wgpu::CommandEncoder,
    stage: Stage,
    encode: impl FnOnce(&mut wgpu::CommandEncoder) -> T,
) -> T {
    if let Some(m) = marks.as_deref_mut() {
        m.begin(encoder, stage);
    }
    let out = encode(encoder);
    if let Some(m) = marks.as_deref_mut() {
        m.end(encoder, stage);
    }
    out
}

/// Dispatches `graph` as `timing` says; the model's GPU ms when timed.
pub(crate) fn dispatch(
    ctx: &Context,
    graph: &Graph,
    inputs: &[(&str, &Tensor)],
    outputs: &[(&str, &Tensor)],
    timing: ModelTiming,
) -> Result<Option<f64>> {
    match timing {
        ModelTiming::Off => ctx.dispatch(graph, inputs, outputs).map(|()| None),
        ModelTiming::Whole => graph.gpu_time(ctx, inputs, outputs).map(Some),
        ModelTiming::PerKernel => Ok(Some(graph.profile(ctx, inputs, outputs)?.total_ms)),
    }
}
