//! Adapter selection answers a bad environment with one clear error.

use crate::common;

use std::process::Command;
use wgnn::gpu::{Gpu, GpuOptions};

#[test]
fn adapter_name_that_matches_nothing_is_a_clear_error() {
    let options = GpuOptions {
        adapter_name: Some("no-such-adapter-xyz".into()),
        ..GpuOptions::from_env()
    };
    let err = Gpu::with_options(&options).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("no GPU adapter: WGPU_ADAPTER_NAME='no-such-adapter-xyz' matches none"),
        "{msg}"
    );
}

#[test]
fn adapter_name_selects_the_named_adapter() {
    let gpu = common::gpu();
    let name = gpu.info().name.clone();
    let options = GpuOptions {
        adapter_name: Some(name.to_uppercase()),
        ..GpuOptions::from_env()
    };
    let picked = Gpu::with_options(&options).unwrap();
    assert_eq!(picked.info().name, name);
}

#[test]
fn software_adapter_is_refused_when_not_allowed() {
    let gpu = common::gpu();
    if !gpu.is_software() {
        return; // a hardware GPU is always allowed; nothing to refuse
    }
    let options = GpuOptions {
        allow_software: false,
        ..GpuOptions::from_env()
    };
    let err = Gpu::with_options(&options).unwrap_err().to_string();
    assert!(err.contains("only software adapters found"), "{err}");
}

#[test]
fn no_driver_at_all_gives_one_error_line_and_exit_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_wgnn-bench"))
        .arg("adapters")
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "stderr: {stderr}");
    assert!(lines[0].contains("no GPU adapter"), "stderr: {stderr}");
}

#[test]
fn adapters_subcommand_lists_the_chosen_adapter() {
    let out = Command::new(env!("CARGO_BIN_EXE_wgnn-bench"))
        .arg("adapters")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("chosen:"), "{stdout}");
}
