#!/usr/bin/env python3
"""Hand-written ONNX graphs for importer rewrites that exporters usually do
themselves (so PyTorch's exports never reach them), with onnxruntime's
outputs, in the backend-test layout (<case>/model.onnx,
<case>/test_data_set_0/{input,output}_N.pb). Run from anywhere:

    python3 tests/data/onnx/handmade/make_handmade.py

conv_bn_relu: Conv (bias) -> BatchNormalization -> Relu, which wgnn folds into
one convolution; plus a second Conv whose output is read twice (by a
BatchNormalization and by the graph output), which must not be folded.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(15)


def init(name, *shape, lo=-1.0, hi=1.0):
    return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)


def conv_bn_relu():
    inits = [init("w1", 4, 3, 3, 3), init("b1", 4), init("s1", 4, lo=0.5, hi=1.5),
             init("t1", 4), init("m1", 4), init("v1", 4, lo=0.5, hi=2.0),
             init("w2", 5, 4, 1, 1), init("s2", 5, lo=0.5, hi=1.5), init("t2", 5),
             init("m2", 5), init("v2", 5, lo=0.5, hi=2.0)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "s1", "t1", "m1", "v1"], ["n1"],
                         epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("BatchNormalization", ["c2", "s2", "t2", "m2", "v2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv_bn_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 7, 9]),
         helper.make_tensor_value_info("c2", TensorProto.FLOAT, [1, 5, 7, 9])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


def save(case, model):
    d = os.path.join(HERE, case, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(HERE, case, "model.onnx")
    onnx.checker.check_model(model)
    onnx.save(model, path)
    x = rng.uniform(-1, 1, (1, 3, 7, 9)).astype(np.float32)
    outs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    for k, (name, y) in enumerate(zip(["y", "c2"], outs)):
        with open(os.path.join(d, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, name).SerializeToString())


if __name__ == "__main__":
    save("conv_bn_relu", conv_bn_relu())
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")
