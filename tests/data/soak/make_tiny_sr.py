"""Writes the super-resolution model of the element soak test
(tests/gst/soak.rs): the smallest model wgnnsuperres takes at scale=2, so
that 1000 start/stop cycles on lavapipe measure the element, not ESRGAN.

  tiny_sr.onnx  input "image" [1, 3, h, w] float (NCHW, 0..1; any size, as
                wgnnsuperres builds the model for the frame's), output
                "upscaled" [1, 2h, 2w, 3] (NHWC, as wgnnsuperres takes it) =
                nearest-neighbour 2x upscale (Resize, then Transpose)

Run from anywhere: python3 make_tiny_sr.py (onnx 1.22.0, opset 18). The
file is written beside this script; the output is deterministic.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def tiny_sr() -> onnx.ModelProto:
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])
    graph = helper.make_graph(
        [
            helper.make_node("Resize", ["image", "", "scales"], ["big"], mode="nearest"),
            helper.make_node("Transpose", ["big"], ["upscaled"], perm=[0, 2, 3, 1]),
        ],
        "tiny_sr",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("upscaled", TensorProto.FLOAT, [1, "h2", "w2", 3])],
        initializer=[scales],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18)],
        producer_name="wgnn tests/data/soak/make_tiny_sr.py",
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
    x = np.random.default_rng(0).random((1, 3, 16, 12), dtype=np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"image": x})
    want = x.repeat(2, axis=2).repeat(2, axis=3).transpose(0, 2, 3, 1)
    assert np.array_equal(got, want), (got, want)


m = tiny_sr()
check(m)
onnx.save(m, os.path.join(HERE, "tiny_sr.onnx"))
print("wrote tiny_sr.onnx")
