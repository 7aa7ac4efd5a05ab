//! The device's flusher thread: it submits deferred work whose oldest has
//! waited [`super::MAX_DEFERRED_AGE`] where nothing deferred or submitted
//! after it did (a stream's last frame before a pause, or frames waiting
//! for a batch that is still filling).
//!
//! It starts at the device's first deferral and sleeps until the deadline
//! a deferring call sets where nothing was pending: one wake-up per
//! deadline, not per frame. It holds the device weakly, and between
//! deadlines not at all, so the device goes with its last handle as
//! before; the device's drop then stops the thread and waits for it to
//! end, which it does at once (where that drop runs on the thread itself,
//! the thread having held the last handle, it ends as the drop returns).
//!
//! A submission the thread makes can fail (an error in the deferred
//! commands) with no caller to hear it, so the error is kept and the
//! device's next submit or flush returns it: one line naming the deferred
//! work, as a submission carrying it would have. One made while another is
//! still kept, or still kept when the device goes, is logged instead
//! (`log::error!`: the library has no element's debug category here).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::gpu::{Gpu, Inner};

/// A device's flusher thread, its deadline and its last failure.
#[derive(Default)]
pub(in crate::gpu) struct Flusher {
    timer: Arc<Timer>,
    thread: Mutex<Thread>,
    /// The error of a submission the thread made, until a submit or flush
    /// returns it.
    failed: Mutex<Option<Error>>,
}

#[derive(Default)]
enum Thread {
    #[default]
    NotStarted,
    Running(JoinHandle<()>),
    /// It could not be started: the bound then holds at the device's next
    /// deferral or submission only.
    Failed,
}

/// What the thread sleeps on.
#[derive(Default)]
struct Timer {
    state: Mutex<Deadline>,
    wake: Condvar,
}

#[derive(Default)]
struct Deadline {
    /// When to look at the deferred work next; None: when woken.
    due: Option<Instant>,
    /// The device has gone: end.
    stop: bool,
}

/// `mutex` locked, even where a thread panicked holding it: the values
/// kept are whole after any of the steps here.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Flusher {
    /// The thread looks at `device`'s deferred work at `due` at the latest
    /// (started where it has not been).
    pub(in crate::gpu) fn arm(&self, device: &Arc<Inner>, due: Instant) {
        self.start(device);
        let mut deadline = lock(&self.timer.state);
        if deadline.due.is_some_and(|d| d <= due) {
            return;
        }
        deadline.due = Some(due);
        drop(deadline);
        self.timer.wake.notify_one();
    }

    fn start(&self, device: &Arc<Inner>) {
        let mut thread = lock(&self.thread);
        if !matches!(*thread, Thread::NotStarted) {
            return;
        }
        let (timer, device) = (self.timer.clone(), Arc::downgrade(device));
        let spawned = std::thread::Builder::new()
            .name("wgnn-flush".into())
            .spawn(move || run(&timer, &device));
        *thread = match spawned {
            Ok(handle) => Thread::Running(handle),
            Err(e) => {
                log::warn!(
                    "cannot start the GPU flusher thread ({e}): deferred work waits for the \
                     device's next deferral or submission"
                );
                Thread::Failed
            }
        };
    }

    /// Ends the thread (the device is going) and logs a failure no call
    /// has returned.
    pub(in crate::gpu) fn stop(&self) {
        lock(&self.timer.state).stop = true;
        self.timer.wake.notify_one();
        let thread = std::mem::take(&mut *lock(&self.thread));
        if let Thread::Running(handle) = thread {
            // The device is only going once the thread holds no handle on
            // it: it waits, or is about to, and ends at once.
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
        if let Some(e) = lock(&self.failed).take() {
            log::error!("deferred GPU work failed with no call left to report it: {e}");
        }
    }

    /// Keeps the error of the thread's submission of work that had waited
    /// `age`, for the device's next submit or flush.
    fn failed(&self, e: Error, age: Duration) {
        let e = match e {
            Error::Gpu { what, message } => Error::Gpu {
                what: format!(
                    "{what} (submitted alone after waiting {} ms)",
                    age.as_millis()
                ),
                message,
            },
            other => other,
        };
        let mut kept = lock(&self.failed);
        match *kept {
            Some(_) => log::error!("{e}"),
            None => *kept = Some(e),
        }
    }

    /// What the thread holds while it runs: gone once it has ended.
    #[cfg(test)]
    pub(in crate::gpu) fn timer_for_tests(&self) -> Arc<impl Sized> {
        self.timer.clone()
    }

    /// The kept failure, once: [`Gpu::submit`] and [`Gpu::flush`] return it.
    pub(in crate::gpu) fn claim(&self) -> Result<()> {
        match lock(&self.failed).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Timer {
    /// Sleeps until the deadline has passed (true) or the device has gone
    /// (false).
    fn wait(&self) -> bool {
        let mut deadline = lock(&self.state);
        loop {
            if deadline.stop {
                return false;
            }
            let now = Instant::now();
            deadline = match deadline.due {
                Some(due) if due <= now => {
                    deadline.due = None;
                    return true;
                }
                Some(due) => match self.wake.wait_timeout(deadline, due - now) {
                    Ok((guard, _)) => guard,
                    Err(e) => e.into_inner().0,
                },
                None => self.wake.wait(deadline).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }
}

/// The thread: at each deadline, the device's overdue work is submitted.
fn run(timer: &Timer, device: &Weak<Inner>) {
    while timer.wait() {
        let Some(inner) = device.upgrade() else {
            return;
        };
        // Dropped right after: where it was the last handle, the device
        // goes here, and its drop stops this loop.
        Gpu { inner }.flush_overdue();
    }
}

impl Gpu {
    /// The flusher thread's turn: the deferred work is submitted where its
    /// oldest has waited the bound, or the thread woken when it will have.
    fn flush_overdue(&self) {
        let flusher = &self.inner.deferred.flusher;
        match self.flush_by_age() {
            Ok(Some(due)) => flusher.arm(&self.inner, due),
            Ok(None) => {}
            // A failed device fails every later call already (`check`),
            // and the work stays pending for them: nothing to keep, and no
            // deadline, so that the thread does not spin on work it cannot
            // submit.
            Err(_) if self.check().is_err() => {}
            Err(e) => flusher.failed(e, self.max_deferred_age()),
        }
    }
}
