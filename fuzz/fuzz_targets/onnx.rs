//! Any bytes given to the model loader as a .onnx file: an error or a model,
//! never a panic, a hang or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("wgnn-fuzz-onnx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.onnx");
    std::fs::write(&path, data).unwrap();
    let _ = wgnn::models::load(&path);
});
