//! Every CPU<->GPU transfer goes through `wgnn::gpu::transfer`, and every
//! queue submission through `Gpu::submit` (`wgnn::gpu::submits`), so the
//! counters cannot be bypassed by habit: no other source file may call the raw
//! wgpu transfer or submit APIs.

use std::path::Path;

const RAW_TRANSFERS: &[&str] = &[
    ".write_buffer(",
    ".write_buffer_with(",
    ".write_texture(",
    ".map_async(",
    "create_buffer_init(",
    "mapped_at_creation: true",
];

const RAW_SUBMITS: &[&str] = &["queue().submit("];

/// Scans the .rs files under `dir` but `exempt` for `raw` into `out`;
/// returns how many it read.
fn visit(dir: &Path, raw: &[&str], exempt: &str, out: &mut Vec<String>) -> usize {
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files += visit(&path, raw, exempt, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            if path.ends_with(exempt) {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                for raw in raw {
                    if line.contains(raw) {
                        out.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    files
}

/// The lines of the sources but `exempt` that call one of `raw`.
fn calls(raw: &[&str], exempt: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let files: usize = ["src", "plugins"]
        .iter()
        .map(|dir| visit(&root.join(dir), raw, exempt, &mut found))
        .sum();
    assert!(files > 200, "scanned only {files} source files");
    found
}

#[test]
fn no_transfers_outside_the_transfer_module() {
    let found = calls(RAW_TRANSFERS, "gpu/transfer.rs");
    assert!(
        found.is_empty(),
        "raw GPU transfers outside src/gpu/transfer.rs (use Gpu::upload_*/download_*):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_submissions_outside_the_submit_module() {
    let found = calls(RAW_SUBMITS, "gpu/submits.rs");
    assert!(
        found.is_empty(),
        "raw queue submissions outside src/gpu/submits.rs (use Gpu::submit):\n{}",
        found.join("\n")
    );
}
