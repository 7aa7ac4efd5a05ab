//! [`HostStages`]: where one GPU model run of a task spent its host time,
//! measured with `Instant`s on the calling thread (no GPU waits of its own),
//! so that it can stay on in production and say what bounds a stream.

use std::time::{Duration, Instant};

/// Host time of one model run (one frame, or the regions of one frame), by
/// stage. A stage the task does not have stays zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostStages {
    /// Encoding (and, when batched, submitting) the frame's tensorize
    /// pass into the model input.
    pub tensorize: Duration,
    /// Waiting for the batch to fill and start, and for the batches ahead
    /// of it (zero where a frame is its own dispatch).
    pub gather: Duration,
    /// Recording and submitting the model's dispatch (its whole batch's,
    /// and the copies of each item's outputs out of it).
    pub submit: Duration,
    /// Waiting for the GPU's result: the read-back of the task's output
    /// (the detector's short list), its decode pass included.
    pub result: Duration,
    /// Host work on the result: decode, NMS, mapping to frame pixels.
    pub post: Duration,
}

impl HostStages {
    /// The stages' values in [`HostStages::NAMES`] order.
    pub fn values(&self) -> [Duration; 5] {
        [
            self.tensorize,
            self.gather,
            self.submit,
            self.result,
            self.post,
        ]
    }

    /// The stages' names, as the elements' `stage-ms` fields name them.
    pub const NAMES: [&'static str; 5] = ["tensorize", "gather", "submit", "result", "post"];

    /// The stages together.
    pub fn total(&self) -> Duration {
        self.values().iter().sum()
    }
}

/// Runs `f`, adding the time it took to `into`.
pub(crate) fn timed<T>(into: &mut Duration, f: impl FnOnce() -> T) -> T {
    let began = Instant::now();
    let out = f();
    *into += began.elapsed();
    out
}
