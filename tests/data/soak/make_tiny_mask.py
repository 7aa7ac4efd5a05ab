"""Writes the segmentation model of the element soak test (tests/gst/soak.rs):
the smallest model wgnnsegment takes, so that 1000 start/stop cycles on
lavapipe measure the element, not a network.

  tiny_mask.onnx  input "image" [1, 16, 16, 3] float (NHWC, 0..1), output
                  "mask" [1, 16, 16, 1] = Sigmoid(ReduceMean over channels)

Run from anywhere: python3 make_tiny_mask.py (onnx 1.22.0, opset 18). The
file is written beside this script; the output is deterministic.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def tiny_mask() -> onnx.ModelProto:
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [3])
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMean", ["image", "axes"], ["mean"], keepdims=1),
            helper.make_node("Sigmoid", ["mean"], ["mask"]),
        ],
        "tiny_mask",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 16, 16, 3])],
        [helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 16, 16, 1])],
        initializer=[axes],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18)],
        producer_name="wgnn tests/data/soak/make_tiny_mask.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def check(model: onnx.ModelProto) -> None:
    """The model computes what it claims (onnxruntime, when installed)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return
    x = np.random.default_rng(0).random((1, 16, 16, 3), dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"image": x})
    want = 1 / (1 + np.exp(-x.mean(axis=3, keepdims=True)))
    assert np.allclose(got, want, atol=1e-6), (got, want)


m = tiny_mask()
check(m)
onnx.save(m, os.path.join(HERE, "tiny_mask.onnx"))
print("wrote tiny_mask.onnx")
