//! One small model per TFLite operator case (tests/data/tflite/ops, written
//! and run in the LiteRT interpreter by tests/data/tflite/make_references.py):
//! each on the CPU context and the GPU context against LiteRT's outputs.
//! Float outputs: largest |ours - LiteRT| over largest |LiteRT| at most 1e-5
//! (CPU) and 1e-4 (GPU); integer outputs (ARG_MAX, FLOOR_MOD of int32) equal.

use crate::common;
use crate::litert_refs::{cases, errors};

use wgnn::ml::Context;

fn check(ctx: &Context, what: &str, bound: f64) {
    let all = cases("ops");
    let mut failures = Vec::new();
    for case in &all {
        match errors(case, ctx) {
            Ok(outputs) => {
                for (name, e) in outputs {
                    if e.is_nan() || e > bound {
                        failures.push(format!(
                            "{} output '{name}': {e:.3e} > {bound:e}",
                            case.name
                        ));
                    }
                }
            }
            Err(e) => failures.push(format!("{}: {e}", case.name)),
        }
    }
    eprintln!(
        "{what}: {} of {} operator cases match LiteRT",
        all.len() - failures.len(),
        all.len()
    );
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
}

#[test]
fn operators_match_litert_on_the_cpu() {
    check(&Context::cpu(), "cpu", 1e-5);
}

#[test]
fn operators_match_litert_on_the_gpu() {
    check(&Context::gpu(&common::gpu()), "gpu", 1e-4);
}
