//! `wgnn::gpu` and `wgnn::ml`: transfers and their counters, the ops on the
//! GPU context against the CPU reference, renting buffers, the timeline.
//!
//! One test binary per area (`tests/<area>/main.rs`), one module per topic:
//! a new test file here is one more `mod` line.

#[path = "../common/mod.rs"]
mod common;

mod activation_patterns;
mod conv_few_outputs;
mod conv_input_fusions;
mod conv_output_casts;
mod conv_output_splits;
mod decoder_fusions;
mod depthwise_pointwise;
mod fault;
mod gpu_roundtrip;
mod gpu_views;
mod ops_elementwise;
mod ops_reduce_gather;
mod ops_spatial;
mod ops_tensor;
mod pointwise_groups;
mod precision;
mod quant_conv;
mod rent;
mod squeeze_excite;
mod timeline;
mod transfer_discipline;
