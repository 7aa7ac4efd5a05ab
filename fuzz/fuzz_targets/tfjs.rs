//! Any text given to the loader as a TF.js model.json, beside the real
//! ESRGAN-slim x2 weight shard: an error or a model, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

const SHARD: &[u8] = include_bytes!("../../assets/models/esrgan-slim/x2/group1-shard1of1.bin");

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("wgnn-fuzz-tfjs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shard = dir.join("group1-shard1of1.bin");
    if !shard.exists() {
        std::fs::write(&shard, SHARD).unwrap();
    }
    let path = dir.join("model.json");
    std::fs::write(&path, data).unwrap();
    let _ = wgnn::models::load(&path);
});
