//! `Model::build_batched` and `Model::check_batch` (issue 20): every bundled
//! model and the image-like ONNX test models built for 3 items (odd, so a
//! kernel that pairs items up shows) give, item by item, what the batch-1
//! graph gives on that item, on the CPU context and on the GPU; models that
//! cannot keep items apart are refused with one line naming the operator.
//!
//! Tolerance: the batched graph runs the same ops on the same values, but a
//! kernel may be picked by problem size (conv2d's GEMM tiles from 264 tiles
//! on, reductions packing short rows per workgroup), which sums in another
//! order. float32 sums of a few thousand terms in another order move by a
//! few ulps of the largest term, so each output is held to 1e-5 of its
//! largest |value|; where the kernels are the same (the CPU context splits
//! only the output) the difference is 0.

use std::path::PathBuf;
use std::time::Instant;

use prost::Message;
use rand::Rng;
use wgnn::ml::{Context, HostTensor, Precision};
use wgnn::models::onnx::proto::{
    attribute_proto, tensor_proto, AttributeProto, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto,
};
use wgnn::models::{self, bundled, Model};

use crate::common;
use crate::onnx_bad_input::value_info as value;

/// Items in a batch: odd, so a kernel that takes items in pairs shows.
const N: usize = 3;
/// Largest |batched - single| over the output's largest |single| value.
const BOUND: f64 = 1e-5;

struct Case {
    name: &'static str,
    path: PathBuf,
    hw: Option<(usize, usize)>,
}

fn cases() -> Vec<Case> {
    let case = |name, path: PathBuf, hw| Case { name, path, hw };
    let mp = |f: &str| bundled(&format!("mediapipe/{f}"));
    let torch = |c: &str| common::root().join(format!("tests/data/onnx/torch/{c}/model.onnx"));
    vec![
        case("selfie", bundled("selfie/selfie_segmentation.tflite"), None),
        case(
            "selfie landscape",
            bundled("selfie/selfie_segmentation_landscape.tflite"),
            None,
        ),
        case("face short", mp("face_detection_short_range.tflite"), None),
        case(
            "face full",
            mp("face_detection_full_range_sparse.tflite"),
            None,
        ),
        case("face landmark", mp("face_landmark.tflite"), None),
        case("hand landmark", mp("hand_landmark_lite.tflite"), None),
        case("hand recrop", mp("hand_recrop.tflite"), None),
        case("palm", mp("palm_detection_lite.tflite"), None),
        case("pose", mp("pose_detection.tflite"), None),
        case(
            "esrgan x2",
            bundled("esrgan-slim/x2/model.json"),
            Some((12, 20)),
        ),
        case(
            "mobilenet v3 (onnx)",
            torch("mobilenet_v3_small_w025_legacy17"),
            None,
        ),
        case(
            "shufflenet v2 (onnx)",
            torch("shufflenet_v2_x0_5_dynamo"),
            None,
        ),
        case("conv zoo (onnx)", torch("conv_zoo_legacy17"), None),
        case(
            "dynamic seg (onnx)",
            torch("dynamic_seg_dynamo"),
            Some((36, 52)),
        ),
    ]
}

/// A graph's inputs by name.
type Inputs = Vec<(String, HostTensor)>;

/// `n` items of random inputs for the batch-1 graph of `model`, in its
/// input range (else 0..1), and the same items stacked for the batch.
fn inputs(model: &Model, single: &wgnn::ml::Graph, n: usize, seed: u64) -> (Vec<Inputs>, Inputs) {
    let mut rng = common::ops::rng(seed);
    let mut items: Vec<Inputs> = vec![Vec::new(); n];
    let mut stacked = Vec::new();
    for (name, desc) in single.inputs() {
        let range = model
            .inputs()
            .iter()
            .find(|i| i.name == name)
            .and_then(|i| i.range)
            .unwrap_or([0.0, 1.0]);
        assert_eq!(desc.shape[0], 1, "input '{name}' of the batch-1 graph");
        let mut all = Vec::new();
        for item in items.iter_mut() {
            let v: Vec<f32> = (0..desc.element_count())
                .map(|_| rng.random_range(range[0]..range[1]))
                .collect();
            all.extend_from_slice(&v);
            item.push((name.clone(), HostTensor::f32(desc.shape.clone(), v)));
        }
        let mut shape = desc.shape.clone();
        shape[0] = n;
        stacked.push((name, HostTensor::f32(shape, all)));
    }
    (items, stacked)
}

fn as_refs(v: &[(String, HostTensor)]) -> Vec<(&str, HostTensor)> {
    v.iter().map(|(n, t)| (n.as_str(), t.clone())).collect()
}

/// Builds `case` for N items and once per item on `ctx` and returns the
/// worst difference over all outputs, relative to each output's peak (or
/// `floor` where that is larger).
fn worst_difference(case: &Case, ctx: &Context, precision: Precision, floor: f32) -> f64 {
    let model = models::load(&case.path).unwrap();
    let single = model.build_with(ctx, case.hw, precision).unwrap();
    let batched = model
        .build_batched(ctx, case.hw, precision, N)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    for ((n1, d1), (nn, dn)) in single.inputs().iter().zip(batched.inputs()) {
        assert_eq!(n1, &nn);
        assert_eq!(
            dn.shape[0], N,
            "{}: input '{nn}' is {:?}",
            case.name, dn.shape
        );
        assert_eq!(dn.shape[1..], d1.shape[1..], "{}: input '{nn}'", case.name);
    }
    let (items, stacked) = inputs(&model, &single, N, 20);
    let out_n = model.run_graph(ctx, &batched, &as_refs(&stacked)).unwrap();
    let mut worst = 0.0f64;
    for (k, item) in items.iter().enumerate() {
        let out_1 = model.run_graph(ctx, &single, &as_refs(item)).unwrap();
        assert_eq!(out_1.len(), out_n.len());
        for ((name, one), (_, many)) in out_1.iter().zip(&out_n) {
            assert_eq!(many.shape[0], N, "{}: output '{name}'", case.name);
            assert_eq!(one.shape[0], 1, "{}: output '{name}'", case.name);
            assert_eq!(
                many.shape[1..],
                one.shape[1..],
                "{}: output '{name}'",
                case.name
            );
            let len = one.len();
            let one = one.to_f32();
            let many = many.to_f32();
            let slice = &many[k * len..(k + 1) * len];
            let peak = one.iter().fold(floor, |m, v| m.max(v.abs())).max(1e-30);
            let diff = one
                .iter()
                .zip(slice)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            let rel = f64::from(diff / peak);
            assert!(
                rel.is_finite(),
                "{}: output '{name}' item {k} is not finite",
                case.name
            );
            worst = worst.max(rel);
        }
    }
    worst
}

fn every_item_matches(ctx: &Context, what: &str) {
    let mut failures = Vec::new();
    for case in cases() {
        let started = Instant::now();
        let worst = worst_difference(&case, ctx, Precision::F32, 0.0);
        eprintln!(
            "{what}: {:<22} {N} items: max rel diff {worst:.2e} ({:.1} s)",
            case.name,
            started.elapsed().as_secs_f64()
        );
        if worst > BOUND {
            failures.push(format!("{}: {worst:.3e} > {BOUND:e}", case.name));
        }
    }
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
}

#[test]
fn every_item_of_a_batch_matches_its_own_run_on_the_cpu() {
    every_item_matches(&Context::cpu(), "cpu");
}

#[test]
fn every_item_of_a_batch_matches_its_own_run_on_the_gpu() {
    every_item_matches(&Context::gpu(&common::gpu()), "gpu");
}

/// float16: a batch of N > 1 leaves squeeze-and-excitation's gate `mul`
/// unfused (`ml::fuse` fuses only a gate shared by every image into the
/// conv's input scale), so the gated input is rounded to float16 once more
/// than at batch 1: two float16 ulps at 1.0, of the peak or of 1 where the
/// peak is smaller (a selfie mask on noise is all but 0 everywhere).
const F16_BOUND: f64 = 2e-3;

#[test]
fn float16_batches_match_too() {
    // The float16 rewrite and its kernels on a batch (the GPU where it has
    // SHADER_F16; the CPU context rounds as a GPU does).
    let gpu = common::gpu();
    let mut contexts = vec![("cpu", Context::cpu())];
    if gpu.has(wgpu::Features::SHADER_F16) {
        contexts.push(("gpu", Context::gpu(&gpu)));
    }
    for (what, ctx) in contexts {
        for case in cases()
            .into_iter()
            .filter(|c| ["selfie", "esrgan x2", "mobilenet v3 (onnx)"].contains(&c.name))
        {
            let worst = worst_difference(&case, &ctx, Precision::F16, 1.0);
            eprintln!("{what} f16: {:<22} max rel diff {worst:.2e}", case.name);
            assert!(worst <= F16_BOUND, "{what} f16 {}: {worst:.3e}", case.name);
        }
    }
}

#[test]
fn check_batch_takes_no_context_and_accepts_64_items() {
    // No context is started (the CPU context's worker would be one, a GPU
    // context needs an adapter the check never asks for), and it is cheap.
    for case in cases() {
        let model = models::load(&case.path).unwrap();
        let started = Instant::now();
        model
            .check_batch(case.hw, 64)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let took = started.elapsed().as_secs_f64();
        assert!(took < 2.0, "{}: check_batch took {took:.2} s", case.name);
    }
}

#[test]
fn batch_of_zero_is_refused_and_one_is_build_with() {
    let model = models::load(bundled("mediapipe/face_detection_short_range.tflite")).unwrap();
    for e in [
        model.check_batch(None, 0).unwrap_err(),
        model
            .build_batched(&Context::cpu(), None, Precision::F32, 0)
            .err()
            .expect("batch 0"),
    ] {
        let text = e.to_string();
        assert!(
            text.contains("face_detection_short_range.tflite") && text.contains("batch of 0"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1, "{text}");
    }
    // Batch 1 is build_with's graph itself (one cache entry): destroying
    // one destroys the other.
    let ctx = Context::cpu();
    let one = model.build_with(&ctx, None, Precision::Auto).unwrap();
    let batch_one = model.build_batched(&ctx, None, Precision::Auto, 1).unwrap();
    let (name, desc) = batch_one.inputs().remove(0);
    let input = HostTensor::f32(desc.shape.clone(), vec![0.5; desc.element_count()]);
    model
        .run_graph(&ctx, &batch_one, &[(&name, input.clone())])
        .unwrap();
    one.destroy();
    let e = model
        .run_graph(&ctx, &batch_one, &[(&name, input)])
        .expect_err("a destroyed graph does not run");
    assert!(e.to_string().contains("destroyed"), "{e}");
}

// ONNX models written here (the generated protobuf types), each with one
// operator that cannot take a batch.

fn node(op: &str, name: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![name.to_string()],
        attribute: attrs,
        ..Default::default()
    }
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

fn ints(name: &str, values: &[i64]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: vec![values.len() as i64],
        data_type: Some(tensor_proto::DataType::Int64 as i32),
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

/// x [batch?, 4, 2, 2] -> Relu -> `nodes` (the last one is the output).
fn onnx(batch: Option<i64>, nodes: Vec<NodeProto>, inits: Vec<TensorProto>) -> Model {
    let last = nodes.last().unwrap().output[0].clone();
    let mut all = vec![node("Relu", "relu", &["x"], vec![])];
    all.extend(nodes);
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: all,
            initializer: inits,
            input: vec![value("x", &[batch, Some(4), Some(2), Some(2)])],
            output: vec![value(&last, &[])],
            ..Default::default()
        }),
        ..Default::default()
    };
    models::load_bytes("fold.onnx", m.encode_to_vec(), None, &[]).unwrap()
}

fn refused(model: &Model, parts: &[&str]) {
    let text = model.check_batch(None, 4).unwrap_err().to_string();
    for p in [
        "fold.onnx",
        "cannot take 4 frames in one batch; use batch-size=1",
    ]
    .iter()
    .chain(parts)
    {
        assert!(text.contains(p), "'{p}' not in: {text}");
    }
    assert_eq!(text.lines().count(), 1, "{text}");
    // build_batched refuses it the same way before compiling anything.
    let e = model
        .build_batched(&Context::cpu(), None, Precision::F32, 4)
        .err()
        .expect("a batch it cannot take")
        .to_string();
    assert_eq!(e, text);
    model.check_batch(None, 1).unwrap();
}

#[test]
fn a_reshape_that_folds_the_batch_into_another_axis_is_refused() {
    // [n, 4, 2, 2] -> [4, -1]: 4 rows of n*4, each mixing the frames.
    for batch in [None, Some(1)] {
        let m = onnx(
            batch,
            vec![node("Reshape", "fold", &["relu", "shape"], vec![])],
            vec![ints("shape", &[4, -1])],
        );
        refused(
            &m,
            &[
                "node 'fold' (Reshape, opset 13)",
                "[4, 16] for 4 frames where it gives [4, 4] for one",
            ],
        );
    }
}

#[test]
fn ops_along_the_batch_axis_are_refused() {
    // softmax over axis 0 keeps the shape but mixes the frames.
    let softmax = onnx(
        None,
        vec![node("Softmax", "mix", &["relu"], vec![int_attr("axis", 0)])],
        vec![],
    );
    refused(
        &softmax,
        &["node 'mix' (Softmax, opset 13)", "along axis 0"],
    );
    // A reduction over every axis leaves one value for all frames.
    let mean = onnx(
        None,
        vec![node(
            "ReduceMean",
            "mix",
            &["relu"],
            vec![int_attr("keepdims", 1)],
        )],
        vec![],
    );
    refused(&mean, &["node 'mix' (ReduceMean, opset 13)"]);
    // Moving the batch axis.
    let transpose = onnx(
        None,
        vec![node(
            "Transpose",
            "mix",
            &["relu"],
            vec![AttributeProto {
                name: Some("perm".into()),
                r#type: Some(attribute_proto::AttributeType::Ints as i32),
                ints: vec![1, 0, 2, 3],
                ..Default::default()
            }],
        )],
        vec![],
    );
    refused(&transpose, &["node 'mix' (Transpose, opset 13)"]);
    // The same model without the mixing op batches.
    let fine = onnx(
        None,
        vec![node("Softmax", "ok", &["relu"], vec![int_attr("axis", 1)])],
        vec![],
    );
    fine.check_batch(None, 4).unwrap();
}

#[test]
fn an_input_whose_leading_dimension_is_not_one_is_refused() {
    let m = onnx(
        Some(2),
        vec![node("Softmax", "ok", &["relu"], vec![int_attr("axis", 1)])],
        vec![],
    );
    refused(&m, &["input 'x'", "is [2, 4, 2, 2]"]);
}
