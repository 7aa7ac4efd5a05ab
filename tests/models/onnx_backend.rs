//! ONNX's own backend test cases (tests/data/onnx/backend, copied from the
//! `onnx` wheel by tests/data/onnx/select_backend_cases.py, which lists the
//! cases it left out and why in tests/data/onnx/unsupported.txt) on the CPU
//! and GPU contexts: every copied case must load, run and match ONNX's
//! expected outputs.

use crate::common;

use std::path::{Path, PathBuf};

use wgnn::ml::{Context, HostTensor};
use wgnn::models::{self, onnx::read_tensor_file};

/// |got - want| <= ATOL + rtol * |want|. ATOL covers outputs near zero, where
/// a relative bound means nothing (sums that cancel, erf/tanh near 0).
const ATOL: f32 = 1e-5;

/// Cases whose expected outputs ONNX stores rounded, with the absolute
/// tolerance that rounding needs. test_averagepool_2d_ceil_last_window_starts_on_pad
/// holds 4 decimals (0.1511); onnxruntime 1.32 and onnx's ReferenceEvaluator
/// both give 0.15105554, as wgnn does.
const ROUNDED: &[(&str, f32)] = &[("test_averagepool_2d_ceil_last_window_starts_on_pad", 5e-5)];

/// The cases select_backend_cases.py copies (549 with onnx 1.22.0): fewer
/// means the folder lost cases, and an empty one must not pass.
const MIN_CASES: usize = 596;

fn cases() -> Vec<PathBuf> {
    let root = common::root().join("tests/data/onnx/backend");
    let mut cases = Vec::new();
    for group in std::fs::read_dir(&root).unwrap() {
        for case in std::fs::read_dir(group.unwrap().path()).unwrap() {
            let case = case.unwrap().path();
            if case.join("model.onnx").is_file() {
                cases.push(case);
            }
        }
    }
    cases.sort();
    assert!(
        cases.len() >= MIN_CASES,
        "{} backend cases under {}, expected at least {MIN_CASES}",
        cases.len(),
        root.display()
    );
    cases
}

fn unsupported() -> (usize, Vec<String>) {
    let text =
        std::fs::read_to_string(common::root().join("tests/data/onnx/unsupported.txt")).unwrap();
    let mut ops = std::collections::BTreeSet::new();
    let mut n = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        n += 1;
        if let Some(list) = line.split('\t').nth(1).and_then(|r| r.strip_prefix("ops ")) {
            ops.extend(list.split(' ').map(str::to_string));
        }
    }
    (n, ops.into_iter().collect())
}

fn pbs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_stem()?.to_str()?.to_string();
            let index = name.strip_prefix(prefix)?.parse().ok()?;
            Some((index, p))
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}

/// Runs one case; `Err` describes the first mismatch.
fn run_case(ctx: &Context, case: &Path, rtol: f32) -> Result<(), String> {
    let atol = ROUNDED
        .iter()
        .find(|(name, _)| case.ends_with(name))
        .map_or(ATOL, |&(_, atol)| atol);
    let model = models::load(case.join("model.onnx")).map_err(|e| e.to_string())?;
    let mut sets: Vec<PathBuf> = std::fs::read_dir(case)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    for set in sets {
        let mut inputs: Vec<(String, HostTensor)> = Vec::new();
        for (i, pb) in pbs(&set, "input_").iter().enumerate() {
            let (name, t) = read_tensor_file(pb).map_err(|e| e.to_string())?;
            let name = if name.is_empty() {
                model.inputs()[i].name.clone()
            } else {
                name
            };
            inputs.push((name, t));
        }
        let named: Vec<(&str, HostTensor)> = inputs
            .iter()
            .map(|(n, t)| (n.as_str(), t.clone()))
            .collect();
        let got = model.run(ctx, None, &named).map_err(|e| e.to_string())?;
        let want = pbs(&set, "output_");
        if got.len() != want.len() {
            return Err(format!("{} outputs, expected {}", got.len(), want.len()));
        }
        for (k, ((name, g), pb)) in got.iter().zip(&want).enumerate() {
            let (_, w) = read_tensor_file(pb).map_err(|e| e.to_string())?;
            if g.shape != w.shape {
                return Err(format!(
                    "output {k} '{name}': shape {:?}, expected {:?}",
                    g.shape, w.shape
                ));
            }
            let (gv, wv) = (g.to_f32(), w.to_f32());
            for (i, (a, b)) in gv.iter().zip(&wv).enumerate() {
                let ok =
                    (a - b).abs() <= atol + rtol * b.abs() || (a.is_nan() && b.is_nan()) || a == b;
                if !ok {
                    return Err(format!(
                        "output {k} '{name}' element {i}: got {a}, expected {b} ({})",
                        set.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
    }
    Ok(())
}

fn run_all(ctx: &Context, rtol: f32, label: &str) {
    let cases = cases();
    let (unsupported, ops) = unsupported();
    let root = common::root().join("tests/data/onnx/backend");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.strip_prefix(&root).unwrap().display().to_string();
        if let Err(e) = run_case(ctx, case, rtol) {
            failures.push(format!("{name}: {e}"));
        }
    }
    eprintln!(
        "{label}: passed {} of {} supported, {unsupported} unsupported (ops {})",
        cases.len() - failures.len(),
        cases.len(),
        ops.join(" ")
    );
    assert!(
        failures.is_empty(),
        "{label}: {} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The operators select_backend_cases.py selects cases for, and those
/// unsupported.txt names as missing, agree with the importer's list.
#[test]
fn case_selection_follows_the_importer() {
    let script =
        std::fs::read_to_string(common::root().join("tests/data/onnx/select_backend_cases.py"))
            .unwrap();
    let list = script
        .split_once("OPS = set(")
        .and_then(|(_, rest)| rest.split("\"\"\"").nth(1))
        .expect("select_backend_cases.py holds OPS = set(\"\"\"...\"\"\")");
    let mut selected: Vec<&str> = list.split_whitespace().collect();
    selected.sort_unstable();
    let mut ops = models::onnx::OPS.to_vec();
    ops.sort_unstable();
    assert_eq!(selected, ops, "select_backend_cases.py's OPS");
    let (_, missing) = unsupported();
    let stale: Vec<&String> = missing
        .iter()
        .filter(|op| ops.contains(&op.as_str()))
        .collect();
    assert!(
        stale.is_empty(),
        "unsupported.txt calls {stale:?} unsupported: run select_backend_cases.py"
    );
}

#[test]
fn onnx_backend_cases_cpu() {
    run_all(&Context::cpu(), 1e-4, "cpu");
}

#[test]
fn onnx_backend_cases_gpu() {
    run_all(&Context::gpu(&common::gpu()), 1e-3, "gpu");
}
