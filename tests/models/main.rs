//! `wgnn::models`: the bundled models load and run, match other
//! implementations' outputs (tests/data/golden), match their PROVENANCE
//! checksums, and corrupted copies fail with clear errors.
//!
//! One test binary per area (`tests/<area>/main.rs`), one module per topic:
//! a new test file here is one more `mod` line.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod batched;
mod detect_nms;
mod detect_tasks;
mod detect_ultralytics;
mod detect_yolo;
mod face_detect;
mod face_refs;
mod fusion;
mod golden;
mod int8;
mod litert_refs;
mod load;
mod mediapipe;
mod onnx_activations;
mod onnx_backend;
mod onnx_bad_input;
mod onnx_light;
mod onnx_torch;
mod precision;
mod provenance;
mod tflite_ops;
