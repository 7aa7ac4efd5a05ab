//! MediaPipe's published vision models (assets/models/mediapipe, and the
//! bundled selfie landscape model) against the LiteRT interpreter
//! (tests/data/tflite): every output of each model, on the CPU context and
//! the GPU context.
//!
//! The error of an output is its largest |ours - LiteRT| divided by its
//! largest |LiteRT| (elementwise relative error is meaningless near zero).
//! Bounds: 1e-4 on the CPU context, 1e-3 on the GPU context (lavapipe here):
//! float32 throughout, summed in other orders than XNNPACK sums.

use crate::common;
use crate::litert_refs::{cases, errors};

use wgnn::ml::Context;

const CPU_BOUND: f64 = 1e-4;
const GPU_BOUND: f64 = 1e-3;

fn check(ctx: &Context, what: &str, bound: f64) {
    let mut failures = Vec::new();
    for case in cases("mediapipe") {
        let started = std::time::Instant::now();
        match errors(&case, ctx) {
            Ok(outputs) => {
                let worst = outputs.iter().map(|(_, e)| *e).fold(0.0, f64::max);
                eprintln!(
                    "{what}: {:<34} max rel error {worst:.2e} over {} outputs ({:.1} s)",
                    case.name,
                    outputs.len(),
                    started.elapsed().as_secs_f64()
                );
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
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
}

#[test]
fn mediapipe_models_match_litert_on_the_cpu() {
    check(&Context::cpu(), "cpu", CPU_BOUND);
}

#[test]
fn mediapipe_models_match_litert_on_the_gpu() {
    check(&Context::gpu(&common::gpu()), "gpu", GPU_BOUND);
}
