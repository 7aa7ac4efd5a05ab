//! Queue submissions and error scopes, counted per device.
//!
//! wgpu serializes the submissions on a queue, validating and tracking the
//! resources of each, and every [`Gpu::scoped`] pushes and pops two error
//! scopes on the device: with many streams in one process these per-frame
//! costs contend on the host (issue 43). Every submission the library makes
//! goes through [`Gpu::submit`] (`tests/ml/transfer_discipline.rs` fails on a
//! raw `queue().submit(`), so the counts here are all of them, and tests can
//! hold a path to its submissions per frame.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Gpu;
use crate::error::Result;

/// Submissions and error-scope pairs since the device was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubmitStats {
    /// `queue.submit` calls.
    pub submissions: u64,
    /// [`Gpu::scoped`] calls (each pushes and pops a validation and an
    /// out-of-memory scope).
    pub error_scopes: u64,
}

impl SubmitStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &SubmitStats) -> SubmitStats {
        SubmitStats {
            submissions: self.submissions - earlier.submissions,
            error_scopes: self.error_scopes - earlier.error_scopes,
        }
    }
}

impl std::ops::AddAssign for SubmitStats {
    fn add_assign(&mut self, other: SubmitStats) {
        self.submissions += other.submissions;
        self.error_scopes += other.error_scopes;
    }
}

impl std::fmt::Display for SubmitStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} submissions, {} error scopes",
            self.submissions, self.error_scopes
        )
    }
}

#[derive(Default)]
pub(super) struct Counters {
    submissions: AtomicU64,
    error_scopes: AtomicU64,
}

impl Counters {
    pub(super) fn scope(&self) {
        self.error_scopes.fetch_add(1, Ordering::Relaxed);
    }

    fn submission(&self) {
        self.submissions.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> SubmitStats {
        SubmitStats {
            submissions: self.submissions.load(Ordering::Relaxed),
            error_scopes: self.error_scopes.load(Ordering::Relaxed),
        }
    }
}

impl Gpu {
    /// Submits `buffers` in one submission, in their order, inside one
    /// error scope (`what` names it in an error), and counts it.
    pub fn submit(
        &self,
        what: &str,
        buffers: impl IntoIterator<Item = wgpu::CommandBuffer>,
    ) -> Result<wgpu::SubmissionIndex> {
        self.scoped(what, || self.submit_unscoped(buffers))
    }

    /// [`Gpu::submit`] for a caller already inside an error scope.
    pub(crate) fn submit_unscoped(
        &self,
        buffers: impl IntoIterator<Item = wgpu::CommandBuffer>,
    ) -> wgpu::SubmissionIndex {
        self.inner.submits.submission();
        self.queue().submit(buffers)
    }

    /// Submissions and error scopes since the device was opened.
    pub fn submits(&self) -> SubmitStats {
        self.inner.submits.snapshot()
    }
}
