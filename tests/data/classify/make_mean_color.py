"""Writes the test classifier of wgnnclassify's tests: an ONNX model whose
"class scores" are the mean colour of its input, so that a test knows what
each region must score without running another implementation.

  mean_color.onnx     input "image" [1, 3, 32, 32] float, output "scores"
                      [1, 3] = ReduceMean over H and W (red, green, blue)
  mean_color_4d.onnx  the same with keepdims: output [1, 3, 1, 1], which is
                      not a classifier's [1, C] (a bad-input case)

Run from anywhere: python3 make_mean_color.py (onnx 1.22.0, opset 18). The
files are written beside this script; the outputs are deterministic.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def mean_color(keepdims: int) -> onnx.ModelProto:
    axes = helper.make_tensor("axes", TensorProto.INT64, [2], [2, 3])
    out_shape = [1, 3, 1, 1] if keepdims else [1, 3]
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["image", "axes"], ["scores"], keepdims=keepdims)],
        "mean_color",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, out_shape)],
        initializer=[axes],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18)],
        producer_name="wgnn tests/data/classify/make_mean_color.py",
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
    x = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"image": x})
    want = x.mean(axis=(2, 3))
    assert np.allclose(got.reshape(1, 3), want, atol=1e-6), (got, want)


for name, keepdims in [("mean_color.onnx", 0), ("mean_color_4d.onnx", 1)]:
    m = mean_color(keepdims)
    check(m)
    onnx.save(m, os.path.join(HERE, name))
    print("wrote", name)
