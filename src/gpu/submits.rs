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
use std::sync::MutexGuard;

use super::{deferred, Gpu, Inner};
use crate::error::Result;

/// Submissions and error-scope pairs since the device was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubmitStats {
    /// `queue.submit` calls.
    pub submissions: u64,
    /// [`Gpu::scoped`] calls (each pushes and pops a validation and an
    /// out-of-memory scope).
    pub error_scopes: u64,
    /// Work deferred into a later submission ([`Gpu::defer`]).
    pub deferrals: u64,
    /// Of `submissions`, those of deferred work alone made because its
    /// oldest had waited [`super::MAX_DEFERRED_AGE`]: how many depends on
    /// the host's timing, not on the path alone.
    pub aged: u64,
}

impl SubmitStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &SubmitStats) -> SubmitStats {
        SubmitStats {
            submissions: self.submissions - earlier.submissions,
            error_scopes: self.error_scopes - earlier.error_scopes,
            deferrals: self.deferrals - earlier.deferrals,
            aged: self.aged - earlier.aged,
        }
    }
}

impl std::ops::AddAssign for SubmitStats {
    fn add_assign(&mut self, other: SubmitStats) {
        self.submissions += other.submissions;
        self.error_scopes += other.error_scopes;
        self.deferrals += other.deferrals;
        self.aged += other.aged;
    }
}

impl std::fmt::Display for SubmitStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} submissions ({} of deferred work past its age), {} error scopes, {} deferrals",
            self.submissions, self.aged, self.error_scopes, self.deferrals
        )
    }
}

#[derive(Default)]
pub(super) struct Counters {
    submissions: AtomicU64,
    error_scopes: AtomicU64,
    deferrals: AtomicU64,
    aged: AtomicU64,
}

impl Counters {
    pub(super) fn scope(&self) {
        self.error_scopes.fetch_add(1, Ordering::Relaxed);
    }

    fn submission(&self) {
        self.submissions.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn deferral(&self) {
        self.deferrals.fetch_add(1, Ordering::Relaxed);
    }

    fn aged(&self) {
        self.aged.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> SubmitStats {
        SubmitStats {
            submissions: self.submissions.load(Ordering::Relaxed),
            error_scopes: self.error_scopes.load(Ordering::Relaxed),
            deferrals: self.deferrals.load(Ordering::Relaxed),
            aged: self.aged.load(Ordering::Relaxed),
        }
    }
}

impl Gpu {
    /// Submits `buffers` in one submission, in their order, inside one
    /// error scope (`what` names it in an error), and counts it. Fails,
    /// submitting nothing, with the error of a submission the device's
    /// flusher thread made since the last submit or flush, where it failed.
    pub fn submit(
        &self,
        what: &str,
        buffers: impl IntoIterator<Item = wgpu::CommandBuffer>,
    ) -> Result<wgpu::SubmissionIndex> {
        self.flusher_failed()?;
        self.scoped(what, || self.submit_unscoped(buffers))
    }

    /// [`Gpu::submit`] for a caller already inside an error scope. The
    /// work deferred on the device ([`Gpu::defer`]) goes first in the same
    /// submission, and its after-submit actions run once it is made.
    pub(crate) fn submit_unscoped(
        &self,
        buffers: impl IntoIterator<Item = wgpu::CommandBuffer>,
    ) -> wgpu::SubmissionIndex {
        // Held until the submission is made: see `deferred::Pending`.
        self.submit_locked(self.inner.deferred.lock(), buffers)
    }

    /// Submits the deferred work alone where there is any, counted as
    /// `aged` or not ([`SubmitStats::aged`]); whether it did.
    pub(super) fn submit_deferred(&self, aged: bool) -> bool {
        let pending = self.inner.deferred.lock();
        if pending.is_empty() {
            return false;
        }
        // Counted with the work still pending, so that a reader seeing it
        // submitted sees it counted.
        if aged {
            self.inner.submits.aged();
        }
        self.submit_locked(pending, []);
        true
    }

    /// [`Gpu::submit_unscoped`] with the deferred work locked.
    fn submit_locked(
        &self,
        mut pending: MutexGuard<'_, Vec<deferred::Entry>>,
        buffers: impl IntoIterator<Item = wgpu::CommandBuffer>,
    ) -> wgpu::SubmissionIndex {
        let (deferred, afters) = deferred::finish(std::mem::take(&mut *pending));
        self.inner.submits.submission();
        let index = self.queue().submit(deferred.into_iter().chain(buffers));
        self.inner.deferred.all_submitted();
        drop(pending);
        afters.into_iter().for_each(|after| after());
        index
    }

    /// Submissions and error scopes since the device was opened.
    pub fn submits(&self) -> SubmitStats {
        self.inner.submits.snapshot()
    }
}

impl Drop for Inner {
    /// Work deferred on a device going away is submitted, so that what it
    /// writes is written and its after-submit actions (buffers' mappings)
    /// run; its flusher thread ends first.
    fn drop(&mut self) {
        self.deferred.flusher.stop();
        let taken = std::mem::take(&mut *self.deferred.lock());
        if taken.is_empty() {
            return;
        }
        let (deferred, afters) = deferred::finish(taken);
        self.submits.submission();
        self.queue.submit(deferred);
        afters.into_iter().for_each(|after| after());
    }
}
