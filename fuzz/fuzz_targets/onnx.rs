//! Any bytes given to the model loader as a .onnx file: an error or a model,
//! never a panic, a hang or a huge allocation. In memory (`load_bytes`), with
//! one small external-data file beside it (`data.bin`, 256 bytes) so that a
//! mutated initializer can reach the external-data reader too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wgnn::models::{load_bytes, Format};

static DATA: [u8; 256] = {
    let mut d = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        d[i] = i as u8;
        i += 1;
    }
    d
};

fuzz_target!(|data: &[u8]| {
    let files = [("data.bin", &DATA[..])];
    let _ = load_bytes("fuzz.onnx", data.to_vec(), Some(Format::Onnx), &files);
});
