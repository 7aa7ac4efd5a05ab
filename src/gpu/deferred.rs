//! Work that needs no submission of its own: it rides in the device's next.
//!
//! Every `Queue::submit` takes wgpu's device-wide locks and validates and
//! tracks each resource it touches; with a hundred streams in one process a
//! submission per frame and element bounds the streams (issue 43). A frame's
//! upload and its overlay pass need only run before any later work on the
//! queue, not at once, so [`Gpu::defer`] keeps their commands here and
//! [`Gpu::submit`] puts them, in deferral order, before its own in the SAME
//! submission, then runs their after-submit actions (the upload ring maps
//! its slot again there: a mapping requested before the copy from the slot
//! is submitted would fail that submission).
//!
//! Whatever waits for or reads back GPU work flushes first ([`Gpu::flush`]:
//! downloads, [`Gpu::wait_idle`]), and so does a queue write that could
//! overtake deferred work (`write_texture`, which wgpu runs at the start of
//! the next submission), so nothing waits on work nobody submitted. Past
//! [`MAX_DEFERRED`] pending the deferring call flushes them; elements flush
//! at EOS and stop; the device flushes as it goes.
//!
//! Nor does deferred work wait long for a submission to carry it: once the
//! oldest has waited [`MAX_DEFERRED_AGE`] it is submitted alone, by the next
//! deferral or by the device's flusher thread ([`flusher`]), which sleeps
//! until the oldest's deadline, so that no frame's upload waits on another
//! stream's traffic (a batch filling for 30 ms, say).
//!
//! Deferred commands are kept as open encoders and finished in the flushing
//! submission's error scope: encoding them costs no scope of its own per
//! frame, and an error they raise names them beside the submission that
//! carried them ("GPU error in batch submit (with the deferred texture
//! upload): ...").

mod flusher;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Gpu;
use crate::error::Result;

/// Deferred command buffers a device holds at most: a 64-stream batch (the
/// bench's largest) of frames each deferring its upload and its overlay
/// pass. Past it the deferring call flushes them in one submission; below
/// it the upload rings (four slots a stream) bound what waits anyway.
pub const MAX_DEFERRED: usize = 128;

/// How long deferred work waits for a submission at most before it is
/// submitted alone. Unbounded, a frame's upload waited for whatever
/// submitted next: with YOLOv8n and its tracker at 32 streams on an H200
/// (batch 32, `--max-batch-latency 30`) that was the batch's fill, and the
/// gather grew from 11 to 19 ms, so the streams no longer held 30 fps
/// (docs/BENCHMARKS.md). A few ms still lets the many-stream paths' uploads
/// ride in the batches that come every few ms.
pub const MAX_DEFERRED_AGE: Duration = Duration::from_millis(2);

/// Runs once the submission carrying its deferred work has been made.
pub type After = Box<dyn FnOnce() + Send>;

/// Identifies one deferral, to ask whether it is still pending
/// ([`Gpu::is_deferred`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deferral(u64);

pub(super) struct Entry {
    what: &'static str,
    encoder: wgpu::CommandEncoder,
    after: Option<After>,
    /// When it was deferred, for [`MAX_DEFERRED_AGE`].
    at: Instant,
}

/// The device's deferred work, behind the lock every submission holds
/// while it submits: a submission that took deferred work must reach the
/// queue before any other thread's, or that thread's commands could run
/// before the work they depend on (an upload they read).
pub(super) struct Pending {
    entries: Mutex<Vec<Entry>>,
    /// Deferrals made, and deferrals submitted: a [`Deferral`] below
    /// `submitted` has been.
    made: AtomicU64,
    submitted: AtomicU64,
    /// [`MAX_DEFERRED_AGE`] in nanoseconds; tests set a longer one, to
    /// tell the bound's flushes from the rest without racing them.
    max_age: AtomicU64,
    /// The thread that submits what waited past the bound with nothing
    /// deferred or submitted after it.
    pub(super) flusher: flusher::Flusher,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            entries: Mutex::default(),
            made: AtomicU64::default(),
            submitted: AtomicU64::default(),
            max_age: AtomicU64::new(MAX_DEFERRED_AGE.as_nanos() as u64),
            flusher: flusher::Flusher::default(),
        }
    }
}

thread_local! {
    /// What deferred work the submissions inside the current
    /// [`Gpu::scoped`] call carried, to name it in the scope's error.
    static CARRIED: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// The names of the deferred work carried by submissions `f` makes, for
/// its error scope's message.
pub(super) fn carried_by<T>(f: impl FnOnce() -> T) -> (T, Vec<&'static str>) {
    let outer = CARRIED.with(|c| c.take());
    let value = f();
    let carried = CARRIED.with(|c| c.replace(outer));
    (value, carried)
}

/// `what`, naming the deferred work its submission carried once each:
/// "batch submit (with the deferred texture upload, overlay pass)".
pub(super) fn naming(what: &str, carried: &[&'static str]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for name in carried {
        if !names.contains(name) {
            names.push(name);
        }
    }
    match (what, names.is_empty()) {
        (_, true) => what.to_string(),
        (FLUSH, false) => format!("the deferred {}", names.join(", ")),
        (_, false) => format!("{what} (with the deferred {})", names.join(", ")),
    }
}

/// The scope name of a submission of deferred work alone.
const FLUSH: &str = "deferred work";

impl Pending {
    /// The pending work, locked: a submission holds the lock until its
    /// `queue.submit` has returned.
    pub(super) fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every deferral made so far has been submitted (called with the
    /// lock held, after the submission).
    pub(super) fn all_submitted(&self) {
        self.submitted
            .store(self.made.load(Ordering::Relaxed), Ordering::Release);
    }
}

impl Gpu {
    /// Hands the device `encoder`'s commands, to run before any GPU work
    /// submitted later, in the device's next submission (not one of their
    /// own); `after` runs once that submission is made. `what` names the
    /// work in an error. Past [`MAX_DEFERRED`] pending, or where the oldest
    /// has waited [`MAX_DEFERRED_AGE`], submits them all now (one counted
    /// submission); where nothing comes after it, the device's flusher
    /// thread submits the work once it has waited that long.
    ///
    /// The work must only touch resources that later work on the queue
    /// orders against: nothing written by `write_buffer`/`write_texture`
    /// before the flush (those run at the start of the next submission,
    /// ahead of the deferred commands) unless the writer flushes first, as
    /// [`Gpu::upload_texture`] does.
    pub fn defer(
        &self,
        what: &'static str,
        encoder: wgpu::CommandEncoder,
        after: Option<After>,
    ) -> Result<Deferral> {
        let pending = &self.inner.deferred;
        let now = Instant::now();
        let (deferral, count, oldest) = {
            let mut entries = pending.lock();
            entries.push(Entry {
                what,
                encoder,
                after,
                at: now,
            });
            let made = pending.made.fetch_add(1, Ordering::Relaxed);
            (Deferral(made), entries.len(), entries[0].at)
        };
        self.inner.submits.deferral();
        let due = oldest + self.max_deferred_age();
        if count >= MAX_DEFERRED {
            self.flush()?;
        } else if now >= due {
            // The flusher thread is late (a busy host): this call is not.
            self.flush_by_age()?;
        } else if count == 1 {
            // Nothing was pending, so the flusher has no deadline for this
            // work: a deadline left from work submitted since is earlier,
            // and at it the thread finds this work and waits for its own.
            pending.flusher.arm(&self.inner, due);
        }
        Ok(deferral)
    }

    /// Whether `deferral`'s work still waits for a submission.
    pub fn is_deferred(&self, deferral: Deferral) -> bool {
        deferral.0 >= self.inner.deferred.submitted.load(Ordering::Acquire)
    }

    /// Deferred command buffers waiting for a submission.
    pub fn deferred(&self) -> usize {
        self.inner.deferred.lock().len()
    }

    /// Submits the deferred work now, alone, where there is any (counted
    /// as any submission); its error names the work. Returns first the
    /// error of a submission the flusher thread made since the device's
    /// last submit or flush, if it failed (see [`flusher`]).
    pub fn flush(&self) -> Result<()> {
        self.flusher_failed()?;
        if self.inner.deferred.lock().is_empty() {
            return Ok(());
        }
        // Another thread may have submitted the work since: nothing then.
        self.scoped(FLUSH, || self.submit_deferred(false))?;
        Ok(())
    }

    /// The error of the last submission the flusher thread made, where it
    /// failed and no submit or flush has returned it yet.
    pub(super) fn flusher_failed(&self) -> Result<()> {
        self.inner.deferred.flusher.claim()
    }

    /// How long deferred work waits for a submission at most on this
    /// device ([`MAX_DEFERRED_AGE`] but in tests).
    pub(crate) fn max_deferred_age(&self) -> Duration {
        Duration::from_nanos(self.inner.deferred.max_age.load(Ordering::Relaxed))
    }

    /// Sets [`Gpu::max_deferred_age`]: tests use tens of ms, so that what
    /// the bound submits is not raced by the test's own steps.
    #[cfg(test)]
    pub(crate) fn set_max_deferred_age(&self, age: Duration) {
        let nanos = age.as_nanos() as u64;
        self.inner.deferred.max_age.store(nanos, Ordering::Relaxed);
    }

    /// Submits the deferred work alone where its oldest has waited
    /// [`Gpu::max_deferred_age`] (counted as aged, [`super::SubmitStats`]);
    /// otherwise returns when it will have (None where nothing waits).
    fn flush_by_age(&self) -> Result<Option<Instant>> {
        let oldest = match self.inner.deferred.lock().first() {
            Some(entry) => entry.at,
            None => return Ok(None),
        };
        let due = oldest + self.max_deferred_age();
        if Instant::now() < due {
            return Ok(Some(due));
        }
        self.scoped(FLUSH, || self.submit_deferred(true))?;
        Ok(None)
    }
}

/// The commands of `entries`, finished in their order in the caller's
/// error scope (which [`carried_by`] learns their names in), and their
/// after-submit actions.
pub(super) fn finish(entries: Vec<Entry>) -> (Vec<wgpu::CommandBuffer>, Vec<After>) {
    let mut afters = Vec::new();
    let mut buffers = Vec::with_capacity(entries.len());
    CARRIED.with(|c| {
        let mut carried = c.borrow_mut();
        for entry in entries {
            carried.push(entry.what);
            buffers.push(entry.encoder.finish());
            afters.extend(entry.after);
        }
    });
    (buffers, afters)
}

#[cfg(test)]
#[path = "deferred_tests.rs"]
mod tests;
