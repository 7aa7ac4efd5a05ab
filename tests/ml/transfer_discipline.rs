//! Every CPU<->GPU transfer goes through `wgnn::gpu::transfer`, so the
//! counters cannot be bypassed by habit: no other source file may call the raw
//! wgpu transfer APIs.

use std::path::Path;

const RAW_TRANSFERS: &[&str] = &[
    ".write_buffer(",
    ".write_buffer_with(",
    ".write_texture(",
    ".map_async(",
    "create_buffer_init(",
    "mapped_at_creation: true",
];

/// Scans the .rs files under `dir` into `out`; returns how many it read.
fn visit(dir: &Path, out: &mut Vec<String>) -> usize {
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files += visit(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            if path.ends_with("gpu/transfer.rs") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                for raw in RAW_TRANSFERS {
                    if line.contains(raw) {
                        out.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    files
}

#[test]
fn no_transfers_outside_the_transfer_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let files: usize = ["src", "plugins"]
        .iter()
        .map(|dir| visit(&root.join(dir), &mut found))
        .sum();
    assert!(files > 200, "scanned only {files} source files");
    assert!(
        found.is_empty(),
        "raw GPU transfers outside src/gpu/transfer.rs (use Gpu::upload_*/download_*):\n{}",
        found.join("\n")
    );
}
