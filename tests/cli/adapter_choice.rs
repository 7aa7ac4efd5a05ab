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

/// The list `gpu` counts in, with each adapter's ids, and a `gpu` value
/// that names none: one line listing them, exit 3.
#[test]
fn adapters_lists_indices_and_ids_and_refuses_a_missing_gpu() {
    let run = |args: &[&str]| {
        common::run_bin(
            env!("CARGO_BIN_EXE_wgnn-bench"),
            args,
            &[("WGPU_BACKEND", "vulkan,gl")],
        )
    };
    let out = run(&["adapters", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let adapters = v["adapters"].as_array().unwrap();
    assert!(adapters.len() >= 2, "lavapipe and llvmpipe: {v}");
    for (i, a) in adapters.iter().enumerate() {
        assert_eq!(a["index"].as_u64(), Some(i as u64), "{a}");
        for key in [
            "name",
            "backend",
            "type",
            "driver",
            "pci_bus_id",
            "vendor_device",
        ] {
            assert!(a[key].is_string(), "{key}: {a}");
        }
    }
    let out = run(&["adapters", "--gpu", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\nchosen: 1 "), "{stdout}");
    let out = run(&["adapters", "--gpu", "no-such-gpu"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("gpu='no-such-gpu' matches none of the") && errors[0].contains("0 '"),
        "{stderr}"
    );
}
