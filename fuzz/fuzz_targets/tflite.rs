//! Any bytes given to the model loader as a .tflite file: an error or a model,
//! never a panic, a hang or a huge allocation. In memory (`load_bytes`), so an
//! execution touches no file; the seeds (fuzz/corpus/tflite) are single-op
//! models of a few hundred bytes, so the verifier passes and mutations reach
//! the operators' options, the shapes and the sparse weight decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wgnn::models::{load_bytes, Format};

fuzz_target!(|data: &[u8]| {
    let _ = load_bytes("fuzz.tflite", data.to_vec(), Some(Format::Tflite), &[]);
});
