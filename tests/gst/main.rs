//! The GStreamer elements as a GStreamer user meets them: harnesses and
//! pipelines in this process. (The lines in pipelines/ run in
//! `tests/pipelines`.)
//!
//! One test binary per area (`tests/<area>/main.rs`), one module per topic:
//! a new test file here is one more `mod` line. The tests share one process:
//! none may change the environment (see `common::run_in_child`) or leave a
//! log threshold raised (see `common::harness::LogCapture`). wgnnsink's real
//! windows are tested in `tests/window`, which sets DISPLAY.

#[path = "../common/mod.rs"]
mod common;
#[path = "../models/face_refs.rs"]
mod face_refs;

mod analytics;
mod batch;
mod classify;
mod detect;
mod detect_int8;
mod detect_nms;
mod detect_tasks;
mod detect_ultralytics;
mod dmabuf;
mod gpus;
mod in_flight;
mod infer;
mod infer_models;
mod overlay;
mod overlay_tasks;
mod precision;
mod properties;
mod publish;
mod publish_tls;
mod segment;
mod segment_cpu;
mod sink;
mod soak;
mod submits;
mod superres;
mod track;
mod upload_download;

/// `dmabuf` runs on the elements' own device choice here; tests/dmabuf runs
/// the same module on Mesa 25 lavapipe, where every frame must import.
const DMABUF_IMPORT_EXPECTED: bool = false;
fn select_dmabuf_device() {}
