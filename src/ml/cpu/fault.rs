//! A CPU context's failure: the message of the first job that panicked.
//!
//! **Sticky**, like a lost GPU device (`Gpu::check`): a job that panicked
//! may have left any tensor it was writing stale or half-written, and every
//! later dispatch would compute from it without a word. So once a job has
//! panicked, the worker skips the jobs queued after it, every later call on
//! the context returns the fault, and a read waiting on a skipped job
//! resolves to it. The way on is a new context.

use std::any::Any;
use std::sync::{Mutex, PoisonError};

use crate::error::{Error, Result};

#[derive(Default)]
pub(crate) struct Fault(Mutex<Option<String>>);

impl Fault {
    /// Records a panic's payload (the first one wins) and returns the
    /// message kept.
    pub fn record(&self, payload: &(dyn Any + Send)) -> String {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a job panicked with no message".to_string());
        let mut fault = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        fault.get_or_insert(message).clone()
    }

    pub fn failed(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// The error `what` returns once the context has failed.
    pub fn error(&self, what: &str) -> Option<Error> {
        let fault = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        fault.as_ref().map(|message| failed(what, message))
    }

    pub fn check(&self, what: &str) -> Result<()> {
        self.error(what).map_or(Ok(()), Err)
    }
}

pub(crate) fn failed(what: &str, message: &str) -> Error {
    Error::invalid(format!("{what}: the CPU context failed: {message}"))
}
