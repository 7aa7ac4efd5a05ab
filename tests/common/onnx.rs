//! ONNX models written in a test with the generated protobuf types.

use wgnn::models::onnx::proto::{
    tensor_proto, type_proto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

/// A float tensor's value info; `None` dimensions are the symbolic "batch".
pub fn value_info(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    use wgnn::models::onnx::proto::tensor_shape_proto::{dimension::Value, Dimension};
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(tensor_proto::DataType::Float as i32),
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            value: Some(match d {
                                Some(d) => Value::DimValue(d),
                                None => Value::DimParam("batch".into()),
                            }),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// x [batch?, 3, 8, 8] -> SiLU as PyTorch exports it (Sigmoid, then Mul
/// by x) -> y: the smallest model with a batch axis a file can leave open.
pub fn silu(batch: Option<i64>) -> ModelProto {
    let node = |op: &str, inputs: &[&str], output: &str| NodeProto {
        op_type: Some(op.into()),
        name: Some(output.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        ..Default::default()
    };
    let dims = [batch, Some(3), Some(8), Some(8)];
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(GraphProto {
            name: Some("silu".into()),
            node: vec![node("Sigmoid", &["x"], "s"), node("Mul", &["x", "s"], "y")],
            input: vec![value_info("x", &dims)],
            output: vec![value_info("y", &dims)],
            ..Default::default()
        }),
        ..Default::default()
    }
}
