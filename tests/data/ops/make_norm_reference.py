"""Writes norm_reference.json: onnxruntime's LayerNormalization,
InstanceNormalization, BatchNormalization, ReduceLogSumExp and LogSoftmax on
seeded random data with a large offset (where E[x^2] - E[x]^2 loses digits),
for tests/ml/ops_reduce_gather.rs. Run from this directory:

    python3 make_norm_reference.py

Needs numpy, onnx and onnxruntime (the versions used are written into the
file). Inputs are generated here (numpy's PCG64, seed 15), so no input file
is needed.
"""
import json

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

rng = np.random.default_rng(15)


def run(node, inputs, opset=17):
    """Runs one ONNX node on float32 `inputs` (name -> array) with
    onnxruntime's CPU provider; returns its single output."""
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {n: v for n, v in inputs.items()})[0]


def f32(a):
    return np.asarray(a, dtype=np.float32)


def listed(a):
    return [float(v) for v in np.asarray(a, dtype=np.float32).ravel()]


cases = []

# layerNormalization over the last axis and over the last two.
for axis, shape in [(-1, [3, 4, 17]), (2, [2, 3, 5, 7])]:
    x = f32(100.0 + 3.0 * rng.standard_normal(shape))
    norm = shape[axis:]
    scale = f32(rng.uniform(0.5, 1.5, norm))
    bias = f32(rng.uniform(-1.0, 1.0, norm))
    y = run(
        helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis, epsilon=1e-5),
        {"x": x, "s": scale, "b": bias},
    )
    rank = len(shape)
    first = axis % rank
    cases.append({
        "op": "layerNormalization", "shape": shape, "axes": list(range(first, rank)),
        "epsilon": 1e-5, "x": listed(x), "scale": listed(scale), "bias": listed(bias),
        "y": listed(y),
    })

# instanceNormalization, NCHW.
shape = [2, 3, 5, 7]
x = f32(-40.0 + 2.0 * rng.standard_normal(shape))
scale = f32(rng.uniform(0.5, 1.5, [3]))
bias = f32(rng.uniform(-1.0, 1.0, [3]))
y = run(
    helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5),
    {"x": x, "s": scale, "b": bias},
)
cases.append({
    "op": "instanceNormalization", "shape": shape, "epsilon": 1e-5, "x": listed(x),
    "scale": listed(scale), "bias": listed(bias), "y": listed(y),
})

# batchNormalization (inference), channel axis 1.
shape = [2, 3, 4, 5]
x = f32(20.0 + 5.0 * rng.standard_normal(shape))
mean = f32(rng.uniform(15.0, 25.0, [3]))
var = f32(rng.uniform(10.0, 30.0, [3]))
scale = f32(rng.uniform(0.5, 1.5, [3]))
bias = f32(rng.uniform(-1.0, 1.0, [3]))
y = run(
    helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3),
    {"x": x, "s": scale, "b": bias, "m": mean, "v": var},
)
cases.append({
    "op": "batchNormalization", "shape": shape, "axis": 1, "epsilon": 1e-3, "x": listed(x),
    "mean": listed(mean), "variance": listed(var), "scale": listed(scale),
    "bias": listed(bias), "y": listed(y),
})

# logSoftmax and reduceLogSumExp with large logits (exp would overflow).
shape = [3, 11]
x = f32(rng.uniform(-200.0, 200.0, shape))
y = run(helper.make_node("LogSoftmax", ["x"], ["y"], axis=1), {"x": x})
cases.append({"op": "logSoftmax", "shape": shape, "axis": 1, "x": listed(x), "y": listed(y)})
axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
g = helper.make_graph(
    [helper.make_node("ReduceLogSumExp", ["x", "axes"], ["y"], keepdims=0)],
    "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    initializer=[axes],
)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
y = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
    None, {"x": x})[0]
cases.append({"op": "reduceLogSumExp", "shape": shape, "axes": [1], "x": listed(x),
              "y": listed(y)})

with open("norm_reference.json", "w") as f:
    json.dump({
        "generator": "make_norm_reference.py",
        "numpy": np.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__,
        "cases": cases,
    }, f, separators=(",", ":"))
    f.write("\n")
