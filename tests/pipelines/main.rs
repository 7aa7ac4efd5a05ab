//! Every line in pipelines/ runs.
//!
//! A binary of its own: each line must reach EOS within 10 minutes, and on
//! software Vulkan with two cores the slowest (ESRGAN side by side on decoded
//! video) needs the machine to itself, as it had before the test binaries
//! were grouped; another test of a shared binary running beside it takes
//! half the cores.

#[path = "../common/mod.rs"]
mod common;

mod lines;
