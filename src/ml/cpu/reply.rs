//! The CPU worker's answer to one caller: a slot that one job fills and the
//! caller waits on, blocking ([`Pending::wait`]) or as a future.
//!
//! A job dropped before it answers (skipped after a fault, or left behind
//! when the worker stops) answers with an error as it is dropped, so a
//! waiting read never hangs.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use super::fault::Fault;
use crate::error::{Error, Result};

struct State<T> {
    value: Option<Result<T>>,
    waker: Option<Waker>,
}

struct Slot<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T> Slot<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The job's half: fills the slot once.
pub(crate) struct Answer<T> {
    slot: Option<Arc<Slot<T>>>,
    fault: Arc<Fault>,
    what: &'static str,
}

/// The caller's half: the pending result.
pub(crate) struct Pending<T> {
    slot: Arc<Slot<T>>,
}

/// A slot for the answer to `what`; `fault` gives the error when the job is
/// dropped unanswered.
pub(crate) fn slot<T>(what: &'static str, fault: Arc<Fault>) -> (Answer<T>, Pending<T>) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State {
            value: None,
            waker: None,
        }),
        ready: Condvar::new(),
    });
    let answer = Answer {
        slot: Some(slot.clone()),
        fault,
        what,
    };
    (answer, Pending { slot })
}

impl<T> Answer<T> {
    pub fn send(mut self, value: Result<T>) {
        self.fill(value);
    }

    fn fill(&mut self, value: Result<T>) {
        if let Some(slot) = self.slot.take() {
            let mut state = slot.lock();
            state.value = Some(value);
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
            slot.ready.notify_all();
        }
    }
}

impl<T> Drop for Answer<T> {
    fn drop(&mut self) {
        if self.slot.is_some() {
            let what = self.what;
            let error = self.fault.error(what).unwrap_or_else(|| {
                Error::invalid(format!(
                    "{what}: the CPU context's worker stopped before answering"
                ))
            });
            self.fill(Err(error));
        }
    }
}

impl<T> Pending<T> {
    pub fn wait(self) -> Result<T> {
        let mut state = self.slot.lock();
        loop {
            if let Some(value) = state.value.take() {
                return value;
            }
            state = self
                .slot
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl<T> Future for Pending<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let mut state = self.slot.lock();
        match state.value.take() {
            Some(value) => Poll::Ready(value),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
