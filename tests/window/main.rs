//! Real windows on a private Xvfb display: wgnnsink's window, and
//! `wgnn-selfie --window`.
//!
//! A binary apart from the other element tests because `sink` sets the
//! process-wide DISPLAY, and winit allows one event loop per process. Its
//! tests take turns ([`one_at_a_time`]) so that DISPLAY never changes while
//! another test's thread may read it.

#[path = "../common/mod.rs"]
mod common;

mod selfie;
mod sink;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Held for the whole of each test of this binary.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(PoisonError::into_inner)
}
