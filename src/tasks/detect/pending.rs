//! A frame's detections between the submission of its GPU work and their
//! read-back: what [`Detector::submit_gpu`](super::Detector::submit_gpu)
//! returns, so that a caller may have several frames in flight and wait
//! for each only when it needs it.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::TransferStats;
use crate::models::Model;
use crate::tasks::objects::{Detection, Labels};
use crate::tasks::stages::timed;
use crate::tasks::HostStages;

use super::decode::Candidate;
use super::gpu::PendingRecords;
use super::post::{self, ToFrame};
use super::spec::Spec;

/// The decoder's records on their way back and what turns them into
/// detections.
pub(super) struct AwaitedRecords {
    pub records: PendingRecords,
    pub spec: Arc<Spec>,
    pub model: Arc<Model>,
    pub labels: Arc<Labels>,
    pub iou: f32,
    pub to_frame: ToFrame,
}

impl AwaitedRecords {
    /// Waits for the records (into `stages.result`) and runs NMS and the
    /// mapping to frame pixels on them (into `stages.post`).
    pub fn found(
        self,
        stages: &mut HostStages,
    ) -> Result<(Vec<(Detection, Candidate)>, TransferStats)> {
        let spec = &self.spec;
        let (candidates, stats) = timed(&mut stages.result, || {
            let (words, stats) = self.records.finish()?;
            Ok::<_, Error>((spec.parse_records(&words), stats))
        })?;
        let found = timed(&mut stages.post, || {
            spec.check_scores(self.model.path(), &candidates)?;
            Ok::<_, Error>(post::detections(
                spec,
                candidates,
                self.iou,
                &self.to_frame,
                &self.labels,
            ))
        })?;
        Ok((found, stats))
    }
}

enum State {
    Awaiting(Box<AwaitedRecords>),
    Done(Vec<Detection>, TransferStats),
}

/// One frame's detections, submitted to the GPU and maybe not yet read
/// back. Dropping it drops the read-back.
pub struct PendingDetections {
    state: State,
    /// The host time spent on the frame so far, by stage.
    stages: HostStages,
}

impl PendingDetections {
    pub(super) fn awaiting(records: AwaitedRecords, stages: HostStages) -> PendingDetections {
        PendingDetections {
            state: State::Awaiting(Box::new(records)),
            stages,
        }
    }

    pub(super) fn done(
        found: Vec<Detection>,
        moved: TransferStats,
        stages: HostStages,
    ) -> PendingDetections {
        PendingDetections {
            state: State::Done(found, moved),
            stages,
        }
    }

    /// Whether [`PendingDetections::finish`] would return without waiting
    /// for the GPU's read-back (polls the device once, without waiting).
    pub fn ready(&self) -> bool {
        match &self.state {
            State::Awaiting(a) => a.records.ready(),
            State::Done(..) => true,
        }
    }

    /// Waits for the frame's list and returns its objects in frame pixels,
    /// best first, what the frame moved (its read-backs, and the
    /// decoder's set-up uploads the first time) and its host time by
    /// stage.
    pub fn finish(self) -> Result<(Vec<Detection>, TransferStats, HostStages)> {
        let mut stages = self.stages;
        match self.state {
            State::Done(found, moved) => Ok((found, moved, stages)),
            State::Awaiting(a) => {
                let (found, moved) = a.found(&mut stages)?;
                Ok((found.into_iter().map(|(d, _)| d).collect(), moved, stages))
            }
        }
    }
}
