//! A TF.js layers model held in memory: the input's bytes up to the first NUL
//! are model.json, the rest the one weight shard it may name,
//! `group1-shard1of1.bin` (JSON text holds no raw NUL, so the split is
//! unambiguous). An error or a model, never a panic or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wgnn::models::{load_bytes, Format};

fuzz_target!(|data: &[u8]| {
    let (json, shard) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let files = [("group1-shard1of1.bin", shard)];
    let _ = load_bytes(
        "model.json",
        json.to_vec(),
        Some(Format::TfjsLayers),
        &files,
    );
});
