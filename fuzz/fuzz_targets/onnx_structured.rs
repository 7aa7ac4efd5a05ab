//! Structure-aware ONNX: a small valid model (ONNX's own backend test nodes)
//! is decoded with prost, a few of its fields are changed as `arbitrary`
//! chooses (attributes, op types, wiring, dims, data types, initializer
//! bytes, opset), and the re-encoded model goes to the loader. Byte
//! mutations of a protobuf mostly die in the decoder; these stay valid
//! protobuf and reach the importer's per-op checks, constant folding and
//! shape inference. An error or a model, never a panic.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use wgnn::models::onnx::proto::{
    self, tensor_shape_proto::dimension, type_proto, AttributeProto, ModelProto, NodeProto,
    TensorProto,
};
use wgnn::models::{load_bytes, Format};

macro_rules! seeds {
    ($($name:literal),* $(,)?) => {
        [$(include_bytes!(concat!("../../tests/data/onnx/backend/node/", $name, "/model.onnx")).as_slice()),*]
    };
}

/// One model per op family the importer handles.
const SEEDS: [&[u8]; 36] = seeds![
    "test_conv_with_strides_padding",
    "test_convtranspose",
    "test_convtranspose_output_shape",
    "test_gemm_default_single_elem_vector_bias",
    "test_matmul_2d",
    "test_reshape_negative_dim",
    "test_slice",
    "test_slice_neg_steps",
    "test_resize_upsample_scales_linear",
    "test_resize_upsample_sizes_nearest",
    "test_concat_2d_axis_0",
    "test_gather_0",
    "test_batchnorm_epsilon",
    "test_maxpool_2d_pads",
    "test_averagepool_2d_same_upper",
    "test_transpose_default",
    "test_softmax_axis_1",
    "test_reduce_mean_keepdims_example",
    "test_expand_dim_changed",
    "test_where_example",
    "test_cast_FLOAT_to_FLOAT16",
    "test_depthtospace_example",
    "test_clip",
    "test_tile",
    "test_constantofshape_float_ones",
    "test_range_float_type_positive_delta",
    "test_flatten_axis1",
    "test_squeeze",
    "test_unsqueeze_axis_0",
    "test_argmax_keepdims_example",
    "test_instancenorm_example",
    "test_lrn",
    "test_prelu_broadcast",
    "test_gathernd_example_float32",
    "test_upsample_nearest",
    "test_if",
];

/// Operators outside `wgnn::models::onnx::OPS` that a mutation also
/// picks, so the refusal path runs.
const REFUSED_OPS: &[&str] = &["Loop", ""];

const ATTRIBUTES: &[&str] = &[
    "alpha",
    "auto_pad",
    "axes",
    "axis",
    "batch_dims",
    "beta",
    "bias",
    "blocksize",
    "ceil_mode",
    "coordinate_transformation_mode",
    "count_include_pad",
    "dilations",
    "epsilon",
    "group",
    "keepdims",
    "kernel_shape",
    "mode",
    "nearest_mode",
    "noop_with_empty_axes",
    "num_outputs",
    "output_padding",
    "output_shape",
    "pads",
    "perm",
    "scales",
    "select_last_index",
    "size",
    "sizes",
    "split",
    "storage_order",
    "strides",
    "to",
    "value",
    "value_float",
    "value_floats",
    "value_int",
    "value_ints",
    "allowzero",
    "approximate",
    "antialias",
    "cubic_coeff_a",
    "exclude_outside",
    "keep_aspect_ratio_policy",
    "then_branch",
    "else_branch",
];

const STRINGS: &[&str] = &[
    "NOTSET",
    "SAME_UPPER",
    "SAME_LOWER",
    "VALID",
    "constant",
    "reflect",
    "edge",
    "wrap",
    "nearest",
    "linear",
    "cubic",
    "bilinear",
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "round_prefer_floor",
    "round_prefer_ceil",
    "floor",
    "ceil",
    "DCR",
    "CRD",
    "tanh",
    "none",
    "stretch",
    "not_larger",
    "",
    "\u{0}",
    "ÿ",
];

const INTS: &[i64] = &[
    0,
    1,
    2,
    3,
    4,
    -1,
    -2,
    -3,
    -4,
    5,
    7,
    8,
    16,
    31,
    32,
    63,
    64,
    255,
    256,
    1 << 16,
    1 << 31,
    (1 << 31) - 1,
    -(1 << 31),
    1 << 32,
    1 << 62,
    i64::MAX,
    i64::MIN,
    i64::MAX - 1,
    i64::MIN + 1,
];

const FLOATS: &[f32] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    1e-5,
    1e30,
    -1e30,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    3.0e9,
    -3.0e9,
];

fn int(u: &mut Unstructured) -> Result<i64> {
    if u.ratio(3, 4)? {
        u.choose(INTS).copied()
    } else {
        u.arbitrary()
    }
}

fn float(u: &mut Unstructured) -> Result<f32> {
    if u.ratio(3, 4)? {
        u.choose(FLOATS).copied()
    } else {
        u.arbitrary()
    }
}

fn ints(u: &mut Unstructured) -> Result<Vec<i64>> {
    let n = u.int_in_range(0..=6)?;
    (0..n).map(|_| int(u)).collect()
}

/// A name already in the graph (so wiring stays plausible) or a new one.
fn value_name(u: &mut Unstructured, g: &proto::GraphProto) -> Result<String> {
    let mut names: Vec<&str> = g.input.iter().map(|v| v.name()).collect();
    names.extend(g.initializer.iter().map(|t| t.name()));
    names.extend(
        g.node
            .iter()
            .flat_map(|n| n.output.iter().map(String::as_str)),
    );
    names.push("");
    names.push("fuzz_new");
    Ok(u.choose(&names)?.to_string())
}

fn mutate_attribute(u: &mut Unstructured, a: &mut AttributeProto) -> Result<()> {
    match u.int_in_range(0..=9)? {
        0 => a.i = Some(int(u)?),
        1 => a.f = Some(float(u)?),
        2 => a.ints = ints(u)?,
        3 => {
            if let Some(v) = a.ints.iter_mut().next() {
                *v = int(u)?;
            } else {
                a.ints.push(int(u)?);
            }
        }
        4 => {
            let n = u.int_in_range(0..=6)?;
            a.floats = (0..n).map(|_| float(u)).collect::<Result<_>>()?;
        }
        5 => a.s = Some(u.choose(STRINGS)?.as_bytes().to_vec()),
        6 => a.r#type = Some(u.int_in_range(0..=14)?),
        7 => a.name = Some(u.choose(ATTRIBUTES)?.to_string()),
        8 => a.t = Some(tensor(u)?),
        _ => a.strings = vec![u.choose(STRINGS)?.as_bytes().to_vec()],
    }
    Ok(())
}

/// A small tensor: plausible dims and data of the type (or not quite).
fn tensor(u: &mut Unstructured) -> Result<TensorProto> {
    let rank = u.int_in_range(0..=4)?;
    let dims: Vec<i64> = (0..rank)
        .map(|_| {
            if u.ratio(7, 8)? {
                u.int_in_range(0..=4)
            } else {
                int(u)
            }
        })
        .collect::<Result<_>>()?;
    let data_type = u.choose(&[1, 1, 1, 7, 7, 6, 10, 9, 2, 11, 0, 8])?;
    let mut t = TensorProto {
        dims,
        data_type: Some(*data_type),
        ..Default::default()
    };
    let len = u.int_in_range(0..=64)?;
    let bytes = u.bytes(len)?;
    match u.int_in_range(0..=2)? {
        0 => t.raw_data = Some(bytes.to_vec()),
        1 => t.float_data = bytes.iter().map(|&b| f32::from(b) - 8.0).collect(),
        _ => t.int64_data = bytes.iter().map(|&b| i64::from(b as i8)).collect(),
    }
    Ok(t)
}

fn mutate_dims(u: &mut Unstructured, dims: &mut Vec<i64>) -> Result<()> {
    match u.int_in_range(0..=3)? {
        0 if !dims.is_empty() => {
            let i = u.choose_index(dims.len())?;
            dims[i] = int(u)?;
        }
        1 => dims.push(u.int_in_range(0..=5)?),
        2 => {
            dims.pop();
        }
        _ => *dims = ints(u)?,
    }
    Ok(())
}

fn mutate_node(u: &mut Unstructured, n: &mut NodeProto, names: String) -> Result<()> {
    match u.int_in_range(0..=8)? {
        0 => {
            let ops = wgnn::models::onnx::OPS;
            let i = u.choose_index(ops.len() + REFUSED_OPS.len())?;
            let op = ops.get(i).unwrap_or_else(|| &REFUSED_OPS[i - ops.len()]);
            n.op_type = Some(op.to_string());
        }
        1 if !n.attribute.is_empty() => {
            let i = u.choose_index(n.attribute.len())?;
            mutate_attribute(u, &mut n.attribute[i])?;
        }
        2 => {
            let mut a = AttributeProto {
                name: Some(u.choose(ATTRIBUTES)?.to_string()),
                ..Default::default()
            };
            mutate_attribute(u, &mut a)?;
            n.attribute.push(a);
        }
        3 if !n.attribute.is_empty() => {
            let i = u.choose_index(n.attribute.len())?;
            n.attribute.remove(i);
        }
        4 if !n.input.is_empty() => {
            let i = u.choose_index(n.input.len())?;
            n.input[i] = names;
        }
        5 => n.input.push(names),
        6 => {
            n.input.pop();
        }
        7 => n.output.push(names),
        _ => n.domain = Some(u.choose(&["", "ai.onnx", "com.microsoft"])?.to_string()),
    }
    Ok(())
}

fn mutate(u: &mut Unstructured, m: &mut ModelProto) -> Result<()> {
    let Some(g) = m.graph.as_mut() else {
        return Ok(());
    };
    match u.int_in_range(0..=12)? {
        0..=3 if !g.node.is_empty() => {
            let name = value_name(u, g)?;
            let i = u.choose_index(g.node.len())?;
            mutate_node(u, &mut g.node[i], name)?;
        }
        4 if !g.initializer.is_empty() => {
            let i = u.choose_index(g.initializer.len())?;
            mutate_dims(u, &mut g.initializer[i].dims)?;
        }
        5 if !g.initializer.is_empty() => {
            let i = u.choose_index(g.initializer.len())?;
            let t = tensor(u)?;
            let init = &mut g.initializer[i];
            match u.int_in_range(0..=3)? {
                0 => init.data_type = t.data_type,
                1 => init.raw_data = t.raw_data,
                2 => {
                    // Point it at the 256-byte external file given beside the model.
                    init.data_location = Some(1);
                    init.external_data = vec![
                        entry(
                            "location",
                            u.choose(&["data.bin", "missing.bin", "../x", "/etc/passwd"])?,
                        ),
                        entry("offset", &int(u)?.to_string()),
                        entry("length", &int(u)?.to_string()),
                    ];
                }
                _ => {
                    *init = TensorProto {
                        name: init.name.clone(),
                        ..t
                    }
                }
            }
        }
        6 if !g.input.is_empty() => {
            // A graph input becomes a constant: shape inputs (Reshape,
            // Slice, Resize...) must be constants for the importer.
            let i = u.choose_index(g.input.len())?;
            let mut t = tensor(u)?;
            t.name = g.input[i].name.clone();
            g.initializer.push(t);
        }
        7 => {
            let all: Vec<&mut proto::ValueInfoProto> =
                g.input.iter_mut().chain(g.output.iter_mut()).collect();
            if let Some(v) = u.choose_iter(all).ok() {
                if let Some(type_proto::Value::TensorType(t)) =
                    v.r#type.as_mut().and_then(|t| t.value.as_mut())
                {
                    match u.int_in_range(0..=2)? {
                        0 => t.elem_type = Some(u.int_in_range(0..=16)?),
                        1 => {
                            if let Some(s) = t.shape.as_mut() {
                                if !s.dim.is_empty() {
                                    let i = u.choose_index(s.dim.len())?;
                                    s.dim[i].value = if u.arbitrary()? {
                                        Some(dimension::Value::DimValue(int(u)?))
                                    } else {
                                        Some(dimension::Value::DimParam("N".into()))
                                    };
                                }
                            }
                        }
                        _ => {
                            if let Some(s) = t.shape.as_mut() {
                                if u.arbitrary()? {
                                    s.dim.pop();
                                } else {
                                    s.dim.push(proto::tensor_shape_proto::Dimension {
                                        value: Some(dimension::Value::DimValue(
                                            u.int_in_range(0..=5)?,
                                        )),
                                        ..Default::default()
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        8 if !g.node.is_empty() => {
            let i = u.choose_index(g.node.len())?;
            let j = u.choose_index(g.node.len())?;
            if u.arbitrary()? {
                g.node.swap(i, j);
            } else {
                let copy = g.node[i].clone();
                g.node.insert(j, copy);
            }
        }
        9 if !g.node.is_empty() => {
            let i = u.choose_index(g.node.len())?;
            g.node.remove(i);
        }
        10 => {
            for o in &mut m.opset_import {
                o.version = Some(if u.ratio(3, 4)? {
                    u.int_in_range(1..=24)?
                } else {
                    int(u)?
                });
            }
        }
        11 => {
            // A Constant node feeding a new output.
            let t = tensor(u)?;
            g.node.insert(
                0,
                NodeProto {
                    output: vec![value_name(u, g)?],
                    op_type: Some("Constant".into()),
                    attribute: vec![AttributeProto {
                        name: Some("value".into()),
                        r#type: Some(4),
                        t: Some(t),
                        ..Default::default()
                    }],
                    ..Default::default()
                },
            );
        }
        _ if !g.output.is_empty() => {
            let name = value_name(u, g)?;
            let i = u.choose_index(g.output.len())?;
            g.output[i].name = Some(name);
        }
        _ => {}
    }
    Ok(())
}

fn entry(key: &str, value: &str) -> proto::StringStringEntryProto {
    proto::StringStringEntryProto {
        key: Some(key.into()),
        value: Some(value.into()),
    }
}

static DATA: [u8; 256] = [0x3f; 256];

/// WGNN_FUZZ_DUMP=<file>: write each mutated model there (to turn a crash
/// input into the .onnx file of a regression test).
fn dump_path() -> Option<&'static std::path::Path> {
    static PATH: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    PATH.get_or_init(|| std::env::var_os("WGNN_FUZZ_DUMP").map(Into::into))
        .as_deref()
}

fn run(u: &mut Unstructured) -> Result<()> {
    let seed = u.choose(&SEEDS)?;
    let Ok(mut model) = ModelProto::decode(*seed) else {
        return Ok(());
    };
    let n = u.int_in_range(1..=6)?;
    for _ in 0..n {
        mutate(u, &mut model)?;
    }
    let bytes = model.encode_to_vec();
    if let Some(path) = dump_path() {
        // Reproducing a finding: keep the model file it made.
        let _ = std::fs::write(path, &bytes);
    }
    let files = [("data.bin", &DATA[..])];
    if let Ok(model) = load_bytes("fuzz.onnx", bytes, Some(Format::Onnx), &files) {
        // Symbolic sizes resolve again at another input size.
        let hw = (u.int_in_range(1..=40)?, u.int_in_range(1..=40)?);
        let _ = model.output_shapes(Some(hw));
        let _ = model.input_shapes(Some(hw));
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
