//! ONNX models written here (the generated protobuf types) with the
//! activations as exporters write them: PyTorch's SiLU (Sigmoid, Mul) and
//! GELU before opset 20 (Div, Erf, Add, Mul, Mul) after a Conv each become
//! one kernel, the conv's; opset 20's Gelu (both approximations) and opset
//! 18's Mish are activations of their own. Values against the formula in
//! double precision, on both contexts.

use prost::Message;
use wgnn::ml::{Context, HostTensor};
use wgnn::models;
use wgnn::models::onnx::proto::{
    attribute_proto, tensor_proto, AttributeProto, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto,
};

use crate::common;
use crate::onnx_bad_input::value_info;

/// x [1, 2, 3, 5] -> Conv 1x1, 2 -> 3 channels with bias -> "y".
const W: [f32; 6] = [0.5, -1.0, 1.5, 0.25, -0.75, 2.0];
const B: [f32; 3] = [0.1, -0.2, 0.3];

fn floats(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(tensor_proto::DataType::Float as i32),
        float_data: values.to_vec(),
        ..Default::default()
    }
}

fn node(op: &str, inputs: &[&str], output: &str, attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(output.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.to_string()],
        attribute: attrs,
        ..Default::default()
    }
}

/// Conv, then `nodes` (reading "y", the last writing "out"), in `opset`.
fn model(opset: i64, nodes: Vec<NodeProto>, scalars: &[(&str, f32)]) -> models::Model {
    let mut all = vec![node("Conv", &["x", "w", "b"], "y", vec![])];
    all.extend(nodes);
    let mut inits = vec![floats("w", &[3, 2, 1, 1], &W), floats("b", &[3], &B)];
    inits.extend(scalars.iter().map(|(n, v)| floats(n, &[], &[*v])));
    let m = ModelProto {
        ir_version: Some(9),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset),
        }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: all,
            initializer: inits,
            input: vec![value_info("x", &[Some(1), Some(2), Some(3), Some(5)])],
            output: vec![value_info("out", &[])],
            ..Default::default()
        }),
        ..Default::default()
    };
    models::load_bytes("activation.onnx", m.encode_to_vec(), None, &[]).unwrap()
}

fn approximate(v: &str) -> AttributeProto {
    AttributeProto {
        name: Some("approximate".into()),
        r#type: Some(attribute_proto::AttributeType::String as i32),
        s: Some(v.as_bytes().to_vec()),
        ..Default::default()
    }
}

/// The conv's result for `x`, in double precision.
fn conv(x: &[f32]) -> Vec<f64> {
    let mut y = Vec::new();
    for o in 0..3 {
        for p in 0..15 {
            let dot: f64 = (0..2)
                .map(|i| f64::from(W[o * 2 + i]) * f64::from(x[i * 15 + p]))
                .sum();
            y.push(dot + f64::from(B[o]));
        }
    }
    y
}

#[test]
fn exported_activations_after_a_conv_are_one_kernel() {
    let softplus = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
    let gelu = |x: f64| 0.5 * x * (1.0 + libm::erf(x / 2f64.sqrt()));
    let gelu_tanh =
        |x: f64| 0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh());
    type Formula = Box<dyn Fn(f64) -> f64>;
    let cases: Vec<(&str, models::Model, Formula)> = vec![
        (
            "SiLU: Sigmoid, Mul",
            model(
                13,
                vec![
                    node("Sigmoid", &["y"], "s", vec![]),
                    node("Mul", &["y", "s"], "out", vec![]),
                ],
                &[],
            ),
            Box::new(|x| x / (1.0 + (-x).exp())),
        ),
        (
            "GELU: Div, Erf, Add, Mul, Mul",
            model(
                17,
                vec![
                    node("Div", &["y", "sqrt2"], "d", vec![]),
                    node("Erf", &["d"], "e", vec![]),
                    node("Add", &["e", "one"], "a", vec![]),
                    node("Mul", &["y", "a"], "m", vec![]),
                    node("Mul", &["m", "half"], "out", vec![]),
                ],
                &[
                    ("sqrt2", std::f32::consts::SQRT_2),
                    ("one", 1.0),
                    ("half", 0.5),
                ],
            ),
            Box::new(gelu),
        ),
        (
            "Gelu (opset 20)",
            model(20, vec![node("Gelu", &["y"], "out", vec![])], &[]),
            Box::new(gelu),
        ),
        (
            "Gelu approximate=tanh (opset 20)",
            model(
                20,
                vec![node("Gelu", &["y"], "out", vec![approximate("tanh")])],
                &[],
            ),
            Box::new(gelu_tanh),
        ),
        (
            "Mish (opset 18)",
            model(18, vec![node("Mish", &["y"], "out", vec![])], &[]),
            Box::new(move |x| x * softplus(x).tanh()),
        ),
    ];
    let x: Vec<f32> = (0..30).map(|i| i as f32 * 0.29 - 4.0).collect();
    let want: Vec<f64> = conv(&x);
    for (what, model, formula) in &cases {
        for ctx in [Context::cpu(), Context::gpu(&common::gpu())] {
            let g = model.build(&ctx, None).unwrap();
            assert_eq!(g.node_count(), 1, "{what}: one kernel");
            let input = HostTensor::f32(vec![1, 2, 3, 5], x.clone());
            let out = model.run_graph(&ctx, &g, &[("x", input)]).unwrap();
            let got: Vec<f32> = (out[0].1.bytes().chunks_exact(4))
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            assert_eq!(got.len(), want.len());
            for (i, (&g, &y)) in got.iter().zip(&want).enumerate() {
                let w = formula(y);
                assert!(
                    (f64::from(g) - w).abs() <= 1e-4 * w.abs().max(1.0),
                    "{what}: element {i}: got {g}, want {w}"
                );
            }
        }
    }
}
