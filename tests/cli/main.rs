//! The binaries (wgnn-selfie, wgnn-superres, wgnn-bench) run as a user runs
//! them, and the adapter choice they share.
//!
//! One test binary per area (`tests/<area>/main.rs`), one module per topic:
//! a new test file here is one more `mod` line.

#[path = "../common/mod.rs"]
mod common;

mod adapter_choice;
mod assets;
mod bench;
mod encoding;
mod files;
mod hardening;
mod manual;
mod safety;
mod selfie;
mod signals;
mod superres;
