//! The `gpu` property with two real adapters: Mesa's lavapipe over Vulkan
//! and llvmpipe over GL (`WGPU_BACKEND=vulkan,gl`, set in a child process:
//! the variable is process-wide). Each branch of one pipeline runs on the
//! adapter its elements name, with a device and a model instance of its
//! own; a frame crossing devices and a GPU that does not exist are refused
//! in one line.

use gst::prelude::*;

use crate::common;
use crate::common::harness::{expect_eos, init, launch, start_error, stop};

fn tiny() -> String {
    common::root()
        .join("tests/data/classify/mean_color.onnx")
        .display()
        .to_string()
}

const SOURCE: &str = "videotestsrc num-buffers=2 ! video/x-raw,format=RGBA,width=32,height=32";

#[test]
fn each_branch_runs_on_the_gpu_it_names_and_shares_nothing() {
    if !common::is_child() {
        common::run_in_child(
            module_path!(),
            "each_branch_runs_on_the_gpu_it_names_and_shares_nothing",
            &[("WGPU_BACKEND", "vulkan,gl")],
            &["WGPU_ADAPTER_NAME"],
        );
        return;
    }
    init();
    let listed = wgnn::gpu::list_adapters(&wgnn::gpu::GpuOptions::from_env()).unwrap();
    assert!(
        listed.len() >= 2,
        "WGPU_BACKEND=vulkan,gl should find lavapipe and llvmpipe: {listed:?}"
    );
    // The same model-instance-id on both: one instance per adapter, since
    // joining one on another device would fail the pipeline.
    let branch = |g: usize| {
        format!(
            "{SOURCE} ! wgnnupload name=up{g} gpu={g} ! wgnninfer name=infer{g} gpu={g} \
             model={} model-instance-id=gpus-test ! wgnndownload name=down{g} gpu={g} ! \
             fakesink",
            tiny()
        )
    };
    let pipeline = launch(&format!("{} {}", branch(0), branch(1)));
    pipeline.set_state(gst::State::Playing).unwrap();
    expect_eos(&pipeline, 60, "two branches on two adapters");
    for (g, adapter) in listed.iter().enumerate().take(2) {
        let name = &adapter.name;
        for element in ["up", "infer", "down"] {
            let e = pipeline.by_name(&format!("{element}{g}")).unwrap();
            let used = e.property::<String>("gpu-used");
            assert!(
                used.starts_with(&format!("{g} '{name}' (")),
                "{element}{g} runs on {used:?}, not adapter {g} '{name}'"
            );
            assert_eq!(e.property::<String>("gpu"), g.to_string());
        }
        let infer = pipeline.by_name(&format!("infer{g}")).unwrap();
        assert_eq!(infer.property::<u64>("frames"), 2, "infer{g}");
    }
    stop(&pipeline);

    // An element without `gpu` takes the pipeline's device (adapter 0
    // here), not its neighbour's on adapter 1: the frame is refused.
    let e = start_error(&format!(
        "{SOURCE} ! wgnnupload gpu=1 ! wgnndownload ! fakesink"
    ));
    assert!(e.contains("textures are on another GPU device"), "{e}");
    // A GPU that is not there: one line listing those that are.
    let e = start_error(&format!("{SOURCE} ! wgnnupload gpu=7 ! fakesink"));
    let first = e.split(" Some(").next().unwrap();
    assert!(
        first.contains(&format!(
            "gpu=7 matches none of the {} adapters: 0 '",
            listed.len()
        )),
        "{e}"
    );
    assert!(!first.contains('\n'), "{e}");
}
