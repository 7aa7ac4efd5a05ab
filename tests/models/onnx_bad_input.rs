//! Broken ONNX models, built here with the generated protobuf types: each
//! load must fail with one clear error naming the file and the node (or
//! initializer) at fault, never panic.

use crate::common;

use std::path::PathBuf;

use prost::Message;
use wgnn::models;
use wgnn::models::onnx::proto::{
    attribute_proto, tensor_proto, AttributeProto, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, StringStringEntryProto, TensorProto, ValueInfoProto,
};

fn value(name: &str, dims: &[i64]) -> ValueInfoProto {
    let dims: Vec<Option<i64>> = dims.iter().copied().map(Some).collect();
    value_info(name, &dims)
}

/// Also for tests/models/batched.
pub(crate) use crate::common::onnx::value_info;

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn floats(name: &str, dims: &[i64], values: Vec<f32>) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(tensor_proto::DataType::Float as i32),
        float_data: values,
        ..Default::default()
    }
}

fn model(nodes: Vec<NodeProto>, inits: Vec<TensorProto>, output: &str) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: nodes,
            initializer: inits,
            input: vec![value("x", &[1, 2, 4, 4])],
            output: vec![value(output, &[])],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A 1x1 conv from 2 to 3 channels.
fn conv(weights: Vec<f32>) -> ModelProto {
    model(
        vec![node("Conv", "conv1", &["x", "w"], &["y"])],
        vec![floats("w", &[3, 2, 1, 1], weights)],
        "y",
    )
}

fn save(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = common::scratch(&format!("onnx-bad-{name}"));
    let path = dir.join(format!("{name}.onnx"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn load_err(name: &str, m: &ModelProto, parts: &[&str]) {
    let path = save(name, &m.encode_to_vec());
    let text = models::load(&path)
        .expect_err("the broken model must not load")
        .to_string();
    assert!(
        text.contains(&format!("{name}.onnx")),
        "error does not name the file: {text}"
    );
    for p in parts {
        assert!(text.contains(p), "error lacks '{p}': {text}");
        // A quoted name (node, initializer, input) once: twice is a prefix
        // added twice.
        if p.contains('\'') {
            assert_eq!(text.matches(p).count(), 1, "'{p}' more than once: {text}");
        }
    }
    assert_eq!(text.lines().count(), 1, "one line: {text}");
}

/// After NonZero everything runs on the host; Sigmoid is computed only in
/// the graph.
#[test]
fn graph_operator_after_a_data_dependent_size() {
    let m = model(
        vec![
            node("NonZero", "nz", &["x"], &["i"]),
            node("Cast", "cast", &["i"], &["f"]),
            node("Sigmoid", "sig", &["f"], &["y"]),
        ],
        vec![],
        "y",
    );
    let mut m = m;
    m.graph.as_mut().unwrap().node[1].attribute = vec![AttributeProto {
        name: Some("to".into()),
        r#type: Some(attribute_proto::AttributeType::Int as i32),
        i: Some(tensor_proto::DataType::Float as i64),
        ..Default::default()
    }];
    load_err(
        "after_nonzero",
        &m,
        &["node 'sig' (Sigmoid", "computes Sigmoid only in the graph"],
    );
}

#[test]
fn a_good_model_loads() {
    // The base every case below breaks: it must load as is.
    let path = save("good", &conv(vec![0.5; 6]).encode_to_vec());
    let m = models::load(&path).unwrap();
    assert_eq!(m.output_shapes(None).unwrap(), [vec![1, 3, 4, 4]]);
}

#[test]
fn truncated_protobuf() {
    let bytes = conv(vec![0.5; 6]).encode_to_vec();
    for cut in [bytes.len() / 2, bytes.len() - 3] {
        let path = save("truncated", &bytes[..cut]);
        let text = models::load(&path).unwrap_err().to_string();
        assert!(
            text.contains("truncated.onnx") && text.contains("protobuf"),
            "{text}"
        );
    }
}

#[test]
fn corrupt_protobuf() {
    let mut bytes = conv(vec![0.5; 6]).encode_to_vec();
    let n = bytes.len();
    bytes[n / 3..n / 3 + 8].copy_from_slice(&[0xff; 8]);
    let path = save("corrupt", &bytes);
    let text = models::load(&path).unwrap_err().to_string();
    assert!(text.contains("corrupt.onnx"), "{text}");
}

#[test]
fn operator_outside_the_list() {
    let m = model(
        vec![node("StringNormalizer", "norm", &["x"], &["y"])],
        vec![],
        "y",
    );
    load_err(
        "unknown_op",
        &m,
        &["node 'norm' (StringNormalizer, opset 13): operator not supported"],
    );
}

#[test]
fn unknown_domain() {
    let mut m = model(vec![node("Relu", "custom", &["x"], &["y"])], vec![], "y");
    m.graph.as_mut().unwrap().node[0].domain = Some("com.example".into());
    m.opset_import.push(OperatorSetIdProto {
        domain: Some("com.example".into()),
        version: Some(3),
    });
    load_err(
        "domain",
        &m,
        &["node 'custom'", "domain 'com.example' is not supported"],
    );
}

/// Of onnxruntime's `com.microsoft` operators only the quantized ones its
/// quantizer writes are read; the message lists them.
#[test]
fn contrib_operator_outside_the_quantized_ones() {
    let mut m = model(
        vec![node("FusedConv", "fused", &["x"], &["y"])],
        vec![],
        "y",
    );
    m.graph.as_mut().unwrap().node[0].domain = Some("com.microsoft".into());
    m.opset_import.push(OperatorSetIdProto {
        domain: Some("com.microsoft".into()),
        version: Some(1),
    });
    load_err(
        "contrib",
        &m,
        &[
            "node 'fused' (FusedConv, opset 13): operator not supported",
            "wgnn reads QGemm, QLinearAdd",
        ],
    );
}

/// Blocked quantization (opset 21's block_size) is refused, naming it.
#[test]
fn blocked_quantization() {
    let mut q = node("QuantizeLinear", "quant", &["x", "scale"], &["y"]);
    q.attribute.push(AttributeProto {
        name: Some("block_size".into()),
        r#type: Some(attribute_proto::AttributeType::Int as i32),
        i: Some(2),
        ..Default::default()
    });
    let m = model(
        vec![q],
        vec![floats("scale", &[1, 2, 2, 4], vec![0.5; 16])],
        "y",
    );
    load_err(
        "blocked",
        &m,
        &[
            "node 'quant'",
            "block_size 2: blocked quantization is not supported",
        ],
    );
}

#[test]
fn missing_external_data_file() {
    let mut m = conv(vec![]);
    let w = &mut m.graph.as_mut().unwrap().initializer[0];
    w.data_location = Some(tensor_proto::DataLocation::External as i32);
    w.external_data = vec![StringStringEntryProto {
        key: Some("location".into()),
        value: Some("weights.bin".into()),
    }];
    load_err(
        "external",
        &m,
        &[
            "initializer 'w'",
            "'w'",
            "external data file 'weights.bin' cannot be read",
        ],
    );
    // Short, and outside the model's folder.
    let path = save("external_short", &m.encode_to_vec());
    std::fs::write(path.with_file_name("weights.bin"), [0u8; 7]).unwrap();
    let text = models::load(&path).unwrap_err().to_string();
    assert!(text.contains("has 7 bytes, too short for 24"), "{text}");
    m.graph.as_mut().unwrap().initializer[0].external_data[0].value = Some("../weights.bin".into());
    load_err(
        "external_escape",
        &m,
        &["must be a relative path inside the model's folder"],
    );
}

#[test]
fn external_data_loads() {
    let mut m = conv(vec![]);
    let w = &mut m.graph.as_mut().unwrap().initializer[0];
    w.data_location = Some(tensor_proto::DataLocation::External as i32);
    w.external_data = vec![
        StringStringEntryProto {
            key: Some("location".into()),
            value: Some("model.onnx.data".into()),
        },
        StringStringEntryProto {
            key: Some("offset".into()),
            value: Some("4".into()),
        },
        StringStringEntryProto {
            key: Some("length".into()),
            value: Some("24".into()),
        },
    ];
    let path = save("external_ok", &m.encode_to_vec());
    let mut data = vec![0u8; 4];
    data.extend((0..6).flat_map(|i| (i as f32).to_le_bytes()));
    std::fs::write(path.with_file_name("model.onnx.data"), data).unwrap();
    let model = models::load(&path).unwrap();
    let ctx = wgnn::ml::Context::cpu();
    let x = wgnn::ml::HostTensor::f32([1, 2, 4, 4], vec![1.0; 32]);
    let out = model.run(&ctx, None, &[("x", x)]).unwrap();
    // Output channel c sums weights 2c and 2c+1.
    assert_eq!(out[0].1.to_f32()[0], 1.0);
    assert_eq!(out[0].1.to_f32()[16], 5.0);
}

#[test]
fn shape_that_cannot_be_resolved() {
    // Reshape to a shape computed from the input's values.
    let mut cast = node("Cast", "to_int", &["x"], &["xi"]);
    cast.attribute.push(AttributeProto {
        name: Some("to".into()),
        r#type: Some(attribute_proto::AttributeType::Int as i32),
        i: Some(tensor_proto::DataType::Int64 as i64),
        ..Default::default()
    });
    let m = model(
        vec![cast, node("Reshape", "reshape", &["x", "xi"], &["y"])],
        vec![],
        "y",
    );
    load_err(
        "unresolved",
        &m,
        &[
            "node 'reshape' (Reshape, opset 13)",
            "must be known at import",
        ],
    );
}

#[test]
fn initializer_with_a_negative_dimension() {
    let mut m = conv(vec![0.5; 6]);
    m.graph.as_mut().unwrap().initializer[0].dims = vec![3, -2, 1, 1];
    load_err(
        "negative_dim",
        &m,
        &["initializer 'w'", "'w'", "has a negative dimension"],
    );
}

/// A negative input size is refused when the model loads, not at the first
/// frame (issue 45: it was taken as a free dimension).
#[test]
fn input_with_a_negative_dimension() {
    let mut m = conv(vec![0.5; 6]);
    m.graph.as_mut().unwrap().input[0] = value("x", &[1, 2, -3, 4]);
    load_err(
        "negative_input_dim",
        &m,
        &["input 'x'", "dimension 2 is -3; a size must be 0 or more"],
    );
}

#[test]
fn input_too_large() {
    let mut m = conv(vec![0.5; 6]);
    m.graph.as_mut().unwrap().input[0] = value("x", &[1, 2, 1 << 20, 1 << 20]);
    load_err("huge_input", &m, &["input 'x'", "'x'", "has more than"]);
}

#[test]
fn initializer_shorter_than_its_shape() {
    load_err(
        "short",
        &conv(vec![0.5; 4]),
        &["initializer 'w'", "needs 6 float values, the file holds 4"],
    );
}

#[test]
fn nan_weights() {
    let mut w = vec![0.5; 6];
    w[3] = f32::NAN;
    load_err(
        "nan",
        &conv(w),
        &["node 'conv1' (Conv, opset 13)", "NaN at element 3"],
    );
}

#[test]
fn graph_cycle() {
    let m = model(
        vec![
            node("Add", "a", &["x", "b_out"], &["a_out"]),
            node("Relu", "b", &["a_out"], &["b_out"]),
        ],
        vec![],
        "b_out",
    );
    load_err("cycle", &m, &["node 'a' (Add, opset 13)", "cycle"]);
}

/// A model of two inputs (a vector, then an image) and two outputs.
fn two_inputs() -> PathBuf {
    let mut m = model(
        vec![
            node("Relu", "r1", &["aux"], &["a"]),
            node("Neg", "n1", &["img"], &["b"]),
        ],
        vec![],
        "a",
    );
    let g = m.graph.as_mut().unwrap();
    g.input = vec![value("aux", &[1, 4]), value("img", &[1, 3, 2, 2])];
    g.output = vec![value("a", &[]), value("b", &[])];
    save("two-inputs", &m.encode_to_vec())
}

#[test]
fn run_finds_inputs_by_name_and_returns_every_output_in_order() {
    use wgnn::ml::{Context, HostTensor};
    let model = models::load(two_inputs()).unwrap();
    let ctx = Context::cpu();
    let img = HostTensor::f32([1, 3, 2, 2], (0..12).map(|v| v as f32).collect());
    let aux = HostTensor::f32([1, 4], vec![-1.0, 2.0, -3.0, 4.0]);
    // Given in the other order than the model declares them.
    let out = model
        .run(&ctx, None, &[("img", img), ("aux", aux.clone())])
        .unwrap();
    let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(out[0].1.to_f32(), [0.0, 2.0, 0.0, 4.0]);
    assert_eq!(out[1].1.to_f32()[11], -11.0);
    let e = model.run(&ctx, None, &[("aux", aux.clone())]).unwrap_err();
    assert!(
        e.to_string()
            .contains("input 'img' (float32 [1, 3, 2, 2]) is not given"),
        "{e}"
    );
    let e = model
        .run(&ctx, None, &[("aux", aux.clone()), ("image", aux)])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("the model has no input 'image' (its inputs: aux, img)"),
        "{e}"
    );
}

#[test]
fn a_frame_cannot_fill_a_model_with_inputs_besides_its_image() {
    let model = models::load(two_inputs()).unwrap();
    let e = wgnn::tasks::ImageInput::of(&model).unwrap_err().to_string();
    assert!(
        e.contains(
            "besides the image input 'img' it has input 'aux' [1, 4], which a frame cannot fill"
        ),
        "{e}"
    );
}

/// Reshape to a shape whose product overflows (found by fuzz/ `onnx`).
#[test]
fn reshape_target_whose_product_overflows() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_reshape_shape_overflow.onnx",
        &["Reshape", "has too many elements"],
    );
}

/// Resize changing the one axis of a 1-D tensor: no axis before it to pair
/// with (found by fuzz/ `onnx_structured`).
#[test]
fn resize_of_a_one_dimensional_tensor() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_resize_rank1_last_axis.onnx",
        &["Resize", "resizing axes [0] is not supported"],
    );
}

/// DepthToSpace with a blocksize whose square overflows (found by fuzz/
/// `onnx_structured`).
#[test]
fn depth_to_space_blocksize_whose_square_overflows() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_depth_to_space_blocksize_overflow.onnx",
        &["DepthToSpace", "channels must divide by blocksize squared"],
    );
}

/// LRN with size 2^62: the window's ones filter was allocated at that size
/// (found by fuzz/ `onnx_structured`). A window wider than the channels sums
/// them all, so the filter is clamped and the model loads.
#[test]
fn lrn_with_a_huge_size_loads_without_a_huge_filter() {
    let path = common::root().join("tests/data/fuzz/onnx_lrn_huge_size.onnx");
    let model = models::load(&path).unwrap();
    assert_eq!(model.output_shapes(None).unwrap(), [vec![5, 5, 5]]);
}

/// Range whose delta is an empty tensor: its first value was taken (found by
/// fuzz/ `onnx` on the H100).
#[test]
fn range_with_an_empty_delta() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_range_empty_delta.onnx",
        &["Range", "delta has 0 values; it must be a scalar"],
    );
}

/// Pad by i64::MIN: negating it to crop overflowed (found by fuzz/ `onnx` on
/// the H100).
#[test]
fn pad_amount_that_cannot_be_negated() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_pad_amount_overflow.onnx",
        &["Pad", "pad amount -9223372036854775808 is out of range"],
    );
}

/// Tile whose repeats times the dimensions overflow (found by fuzz/
/// `onnx_structured` on the H100).
#[test]
fn tile_repeats_that_overflow() {
    crate::bad_input::fuzz_finding_fails("onnx_tile_repeats_overflow.onnx", &["Tile", "overflow"]);
}

/// A folded Transpose of a constant whose shape's product overflows (found
/// by fuzz/ `onnx_structured` on the H100).
#[test]
fn folded_constant_whose_size_overflows() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_folded_shape_overflow.onnx",
        &[
            "Transpose",
            "past the bound on constants built at load (134217728 elements: 1 GiB",
        ],
    );
}

/// ConstantOfShape asking for gigabytes at load time (an out-of-memory of
/// fuzz/ `onnx` on the H100).
#[test]
fn constant_of_shape_too_large_to_fold() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_huge_folded_constant.onnx",
        &[
            "ConstantOfShape",
            "past the bound on constants built at load (134217728 elements: 1 GiB",
        ],
    );
}

/// Conv, ConvTranspose and MaxPool with strides or pads near i64::MAX: the
/// window arithmetic overflowed (found by fuzz/ `onnx_structured` on the
/// H100).
#[test]
fn spatial_attributes_beyond_any_real_model() {
    for (file, parts) in [
        (
            "onnx_conv_window_overflow.onnx",
            &["Conv", "pads [", "must be 4 values from 0 to 65536"],
        ),
        (
            "onnx_conv_transpose_stride_overflow.onnx",
            &[
                "ConvTranspose",
                "strides [",
                "must be 2 values from 0 to 65536",
            ],
        ),
        (
            "onnx_pool_padding_overflow.onnx",
            &["MaxPool", "pads [", "must be 4 values from 0 to 65536"],
        ),
    ] {
        crate::bad_input::fuzz_finding_fails(file, parts);
    }
}

/// Flatten of a constant whose leading dimensions' product overflows, and
/// Split with num_outputs 2^56 on a one-output node, which sized a list of
/// that many parts (found by fuzz/ `onnx_structured` on the H100).
#[test]
fn flatten_and_split_sizes_beyond_the_node() {
    crate::bad_input::fuzz_finding_fails(
        "onnx_flatten_shape_overflow.onnx",
        &["Flatten", "has too many elements"],
    );
    crate::bad_input::fuzz_finding_fails(
        "onnx_split_num_outputs_huge.onnx",
        &[
            "Split",
            "num_outputs 68791157073182736 differs from the node's 1 outputs",
        ],
    );
}
