#!/usr/bin/env python3
"""Hand-written ONNX graphs for importer rewrites that exporters usually do
themselves (so PyTorch's exports never reach them), with onnxruntime's
outputs, in the backend-test layout (<case>/model.onnx,
<case>/test_data_set_0/{input,output}_N.pb). Run from anywhere:

    python3 tests/data/onnx/handmade/make_handmade.py

conv_bn_relu: Conv (bias) -> BatchNormalization -> Relu, which wgnn folds into
one convolution; plus a second Conv whose output is read twice (by a
BatchNormalization and by the graph output), which must not be folded.

attention_mod: the shape of a MultiheadAttention export (heads split by a
Reshape whose target is computed from Shape, with Mod and Div on the int64
sizes, folded at import), then Mod on values the model computes: float with
fmod 1 (C fmod) and int32 with fmod 0 (the divisor's sign).
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


def attention_mod():
    heads, seq, dim = 2, 6, 8
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    divisor = rng.uniform(0.3, 0.7, dim) * np.where(np.arange(dim) % 2, -1, 1)
    inits = [i64("heads", heads), i64("lead", [0, 1]), i64("last", 2),
             i64("axes0", [0]), numpy_helper.from_array(divisor.astype(np.float32), "fdiv"),
             numpy_helper.from_array(np.array([3, -3, 4, -4, 5, -5, 7, -7], np.int32), "idiv"),
             numpy_helper.from_array(np.array(20.0, np.float32), "ten")]
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "lead"], ["nl"]),
        helper.make_node("Gather", ["shape", "last"], ["d"]),
        helper.make_node("Div", ["d", "heads"], ["hd0"]),
        helper.make_node("Mod", ["d", "heads"], ["rest"]),
        helper.make_node("Add", ["hd0", "rest"], ["hd"]),
        helper.make_node("Unsqueeze", ["hd", "axes0"], ["hd1"]),
        helper.make_node("Unsqueeze", ["heads", "axes0"], ["h1"]),
        helper.make_node("Concat", ["nl", "h1", "hd1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["split"]),
        helper.make_node("Transpose", ["split"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["split"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "q"], ["attn"]),
        helper.make_node("Mod", ["x", "fdiv"], ["fm"], fmod=1),
        helper.make_node("Mul", ["x", "ten"], ["x20"]),
        helper.make_node("Cast", ["x20"], ["xi"], to=TensorProto.INT32),
        helper.make_node("Mod", ["xi", "idiv"], ["im"]),
    ]
    graph = helper.make_graph(
        nodes, "attention_mod",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])],
        [helper.make_tensor_value_info("attn", TensorProto.FLOAT, [1, heads, seq, dim // heads]),
         helper.make_tensor_value_info("fm", TensorProto.FLOAT, [1, seq, dim]),
         helper.make_tensor_value_info("im", TensorProto.INT32, [1, seq, dim])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def save(case, model, shape):
    d = os.path.join(HERE, case, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(HERE, case, "model.onnx")
    onnx.checker.check_model(model)
    onnx.save(model, path)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    outs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    names = [o.name for o in model.graph.output]
    for k, (name, y) in enumerate(zip(names, outs)):
        with open(os.path.join(d, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, name).SerializeToString())


if __name__ == "__main__":
    save("conv_bn_relu", conv_bn_relu(), (1, 3, 7, 9))
    save("attention_mod", attention_mod(), (1, 6, 8))
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")
