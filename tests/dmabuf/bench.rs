//! `wgnn-bench adapters` and `wgnn-bench import` on Mesa 25 lavapipe (the
//! child processes inherit this binary's driver selection).

use serde_json::Value;

use super::select_lavapipe25;
use crate::common;

fn bench(args: &[&str]) -> std::process::Output {
    select_lavapipe25();
    common::run_bin(env!("CARGO_BIN_EXE_wgnn-bench"), args, &[])
}

#[test]
fn adapters_lists_the_import_path_and_features() {
    let out = bench(&["adapters"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("external-memory-fd"), "{stdout}");
    assert!(stdout.contains("DMA-BUF import: buffer import"), "{stdout}");
}

#[test]
fn import_quick_uploads_nothing_and_matches_the_upload() {
    let out = bench(&["import", "--quick", "--json", "--format", "I420"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // A memfd here; a DMA heap or udmabuf where the machine has one.
    assert!(
        ["memfd", "dma-heap", "udmabuf"].contains(&v["source"].as_str().unwrap_or("")),
        "{v}"
    );
    assert_eq!(v["imported"], true, "{v}");
    assert_eq!(v["identical"], true, "{v}");
    let rows = v["results"].as_array().unwrap();
    let row = |path: &str| rows.iter().find(|r| r["path"] == path).unwrap().clone();
    assert_eq!(row("import")["upload_bytes_per_frame"], 0, "{v}");
    assert_eq!(row("import")["frames_imported"], v["frames"], "{v}");
    assert!(
        row("upload")["upload_bytes_per_frame"].as_u64().unwrap() >= 64 * 48 * 3 / 2,
        "{v}"
    );
}
