#!/usr/bin/env python3
"""Copies the ONNX backend test cases wgnn supports into tests/data/onnx/backend/.

Source: the installed `onnx` wheel's onnx/backend/test/data/{node,simple,
pytorch-converted,pytorch-operator}: each case is model.onnx plus
test_data_set_*/{input,output}_*.pb. A case is copied when every node is in
the issue's operator list (default domain, opset >= 7), every tensor type is
one wgnn holds, and the attributes are ones the importer implements; every
other case goes to unsupported.txt with the reason.

wgnn fixes every shape when a graph is built, so inputs that ONNX lets a
test feed at run time but that decide shapes (Reshape's shape, Slice's
starts, Pad's pads, Resize's scales, ...) are turned into initializers from
test_data_set_0 in the copied model (noted in the model's doc_string); only
that data set is then copied.

Run from the repository root:  python3 tests/data/onnx/select_backend_cases.py
"""

import hashlib
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

ROOT = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(ROOT, "backend")
SRC = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
GROUPS = ["node", "simple", "pytorch-converted", "pytorch-operator"]
# Copied data stays under this many bytes; larger cases (pytorch-converted
# nets) go to the manifest with the reason "size".
BUDGET = 12 * 1024 * 1024
CASE_LIMIT = 600 * 1024

# The importer's operator list, wgnn::models::onnx::OPS (a test in
# tests/models/onnx_backend.rs fails when the two differ).
OPS = set(
    """Conv ConvTranspose BatchNormalization InstanceNormalization LayerNormalization LRN
    Relu LeakyRelu PRelu Elu Selu Sigmoid HardSigmoid HardSwish Tanh Softplus Clip Erf
    Add Sub Mul Div Pow Max Min Sum Mean Abs Neg Exp Log Sqrt Reciprocal MatMul Gemm
    Flatten Reshape Transpose Squeeze Unsqueeze Concat Split Slice Pad Resize Upsample
    MaxPool AveragePool GlobalAveragePool GlobalMaxPool ReduceMean ReduceSum ReduceMax
    Softmax LogSoftmax ArgMax DepthToSpace SpaceToDepth Gather Expand Tile Where Equal
    Greater Less Cast Identity Dropout Constant Shape ConstantOfShape Range
    ArgMin ReduceMin ReduceProd ReduceL2 ReduceSumSquare ReduceLogSumExp GreaterOrEqual
    LessOrEqual Not Gelu GatherND If Mod Mish Cos Sin NonZero NonMaxSuppression ScatterND
    TopK GatherElements Ceil Floor
    QuantizeLinear DequantizeLinear QLinearConv QLinearMatMul""".split()
)
SPATIAL = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
           "GlobalMaxPool", "InstanceNormalization", "LRN"}
TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.INT32,
         TensorProto.BOOL, TensorProto.UINT8, TensorProto.INT8}
# Inputs (by position) that decide shapes or options and must be known at import.
STATIC = {
    "Reshape": [1], "Slice": [1, 2, 3, 4], "Pad": [1, 2, 3], "Expand": [1], "Tile": [1],
    "Resize": [1, 2, 3], "Upsample": [1], "Unsqueeze": [1], "Squeeze": [1], "Split": [1],
    "ReduceMean": [1], "ReduceSum": [1], "ReduceMax": [1], "ReduceMin": [1], "ReduceProd": [1],
    "ReduceL2": [1], "ReduceSumSquare": [1], "ReduceLogSumExp": [1], "GatherND": [1],
    "If": [0], "ConstantOfShape": [0],
    "Range": [0, 1, 2],
    # Scales and zero points.
    "QuantizeLinear": [1, 2], "DequantizeLinear": [1, 2], "QLinearConv": [1, 2, 4, 5, 6, 7, 8],
    "QLinearMatMul": [1, 2, 4, 5, 6, 7],
}


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def node_refusal(node, opset, used):
    """Why the importer refuses this node's form, or None."""
    op = node.op_type
    s = lambda n, d: (attr(node, n, d).decode() if isinstance(attr(node, n, d), bytes) else attr(node, n, d))
    if op == "GatherND" and attr(node, "batch_dims", 0) != 0:
        return "GatherND batch_dims"
    if op in ("Resize", "Upsample"):
        if s("mode", "nearest") not in ("nearest", "linear", "bilinear"):
            return f"{op} mode {s('mode', '')}"
        ct = s("coordinate_transformation_mode", "half_pixel")
        if op == "Resize" and opset >= 11 and ct not in (
                "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"):
            return f"Resize {ct}"
        if attr(node, "antialias", 0):
            return "Resize antialias"
        if s("keep_aspect_ratio_policy", "stretch") != "stretch":
            return "Resize keep_aspect_ratio_policy"
    if op == "Pad" and s("mode", "constant") not in ("constant", "reflect", "edge"):
        return f"Pad mode {s('mode', '')}"
    if op in ("MaxPool", "AveragePool", "Conv", "ConvTranspose"):
        k = attr(node, "kernel_shape")
        if k is not None and len(k) > 2:
            return f"{op} {len(k)}-D"
        if attr(node, "storage_order", 0):
            return "MaxPool storage_order"
    if op in ("QuantizeLinear", "DequantizeLinear") and attr(node, "block_size", 0):
        return f"{op} block_size"
    if op == "Dropout" and len(node.input) > 2 and node.input[2]:
        return "Dropout training_mode"
    if op == "BatchNormalization" and attr(node, "training_mode", 0):
        return "BatchNormalization training_mode"
    if op in ("MaxPool", "Dropout", "LayerNormalization", "BatchNormalization"):
        if any(o and o in used for o in node.output[1:]):
            return f"{op} extra outputs"
    if op == "Constant" and node.attribute and node.attribute[0].name in (
            "sparse_value", "value_string", "value_strings"):
        return "Constant " + node.attribute[0].name
    return None


def types_of(model):
    g = model.graph
    types = set()
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.HasField("tensor_type"):
            types.add(v.type.tensor_type.elem_type)
        else:
            types.add(-1)
    for t in g.initializer:
        types.add(t.data_type)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                types.add(a.t.data_type)
        if n.op_type == "Cast":
            types.add(attr(n, "to"))
    return types


def has_empty(model, case_dir):
    for v in list(model.graph.input) + list(model.graph.output):
        dims = v.type.tensor_type.shape.dim
        if any(d.HasField("dim_value") and d.dim_value == 0 for d in dims):
            return True
    return False


def check(model):
    """(reason, None) when unsupported, else (None, names of static inputs)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None or opset < 7:
        return f"opset {opset}", None
    domains = {n.domain for n in model.graph.node} - {"", "ai.onnx"}
    if domains:
        return "domain " + " ".join(sorted(domains)), None
    bad = sorted({n.op_type for n in model.graph.node} - OPS)
    if bad:
        return "ops " + " ".join(bad), None
    if not types_of(model) <= TYPES:
        names = sorted(TensorProto.DataType.Name(t) if t >= 0 else "non-tensor"
                       for t in types_of(model) - TYPES)
        return "type " + " ".join(names), None
    used = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in
             list(model.graph.input) + list(model.graph.value_info)}
    ranks.update({t.name: len(t.dims) for t in model.graph.initializer})
    for n in model.graph.node:
        r = node_refusal(n, opset, used)
        if r is None and n.op_type in SPATIAL and n.input and ranks.get(n.input[0], 4) > 4:
            r = f"{n.op_type} {ranks[n.input[0]] - 2}-D"
        if r:
            return "form " + r, None
    # Values that decide shapes, followed back through the nodes computing
    # them (Shape needs only its input's shape, not its values).
    need = set()
    for n in model.graph.node:
        for i in STATIC.get(n.op_type, []):
            if i < len(n.input) and n.input[i]:
                need.add(n.input[i])
    changed = True
    while changed:
        changed = False
        for n in model.graph.node:
            if n.op_type != "Shape" and any(o in need for o in n.output):
                for i in n.input:
                    if i and i not in need:
                        need.add(i)
                        changed = True
    inits = {t.name for t in model.graph.initializer}
    static = [v.name for v in model.graph.input if v.name in need and v.name not in inits]
    return None, sorted(static)


def case_size(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def freeze(model, case_dir, static):
    """Moves the `static` graph inputs into initializers from data set 0."""
    inputs = [v.name for v in model.graph.input if v.name not in {t.name for t in model.graph.initializer}]
    ds = os.path.join(case_dir, "test_data_set_0")
    kept = []
    for i, name in enumerate(inputs):
        pb = os.path.join(ds, f"input_{i}.pb")
        t = TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        if name in static:
            t.name = name
            model.graph.initializer.append(t)
        else:
            kept.append((i, name))
    for v in [v for v in model.graph.input if v.name in static]:
        model.graph.input.remove(v)
    model.doc_string = ("wgnn: inputs " + ", ".join(static) +
                        " frozen into initializers from test_data_set_0 (they decide shapes)")
    return kept


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    unsupported = []
    used = 0
    copied = 0
    for group in GROUPS:
        gdir = os.path.join(SRC, group)
        for case in sorted(os.listdir(gdir)):
            src = os.path.join(gdir, case)
            mpath = os.path.join(src, "model.onnx")
            if not os.path.isfile(mpath):
                continue
            model = onnx.load(mpath, load_external_data=False)
            reason, static = check(model)
            if reason is None and has_empty(model, src):
                reason = "empty tensor"
            size = case_size(src)
            if reason is None and (size > CASE_LIMIT or used + size > BUDGET):
                reason = f"size ({size} bytes)"
            if reason:
                unsupported.append((f"{group}/{case}", reason))
                continue
            dst = os.path.join(OUT, group, case)
            os.makedirs(dst)
            sets = sorted(d for d in os.listdir(src) if d.startswith("test_data_set_"))
            if static:
                kept = freeze(model, src, static)
                onnx.save(model, os.path.join(dst, "model.onnx"))
                os.makedirs(os.path.join(dst, "test_data_set_0"))
                s0 = os.path.join(src, "test_data_set_0")
                for new, (old, _) in enumerate(kept):
                    shutil.copy(os.path.join(s0, f"input_{old}.pb"),
                                os.path.join(dst, "test_data_set_0", f"input_{new}.pb"))
                for f in os.listdir(s0):
                    if f.startswith("output_"):
                        shutil.copy(os.path.join(s0, f), os.path.join(dst, "test_data_set_0", f))
            else:
                shutil.copy(mpath, os.path.join(dst, "model.onnx"))
                for s in sets:
                    shutil.copytree(os.path.join(src, s), os.path.join(dst, s))
            used += case_size(dst)
            copied += 1
    with open(os.path.join(ROOT, "unsupported.txt"), "w") as f:
        f.write(f"# ONNX backend test cases not copied (onnx {onnx.__version__}): case<TAB>reason\n")
        for case, reason in unsupported:
            f.write(f"{case}\t{reason}\n")
    print(f"copied {copied} cases ({used} bytes), {len(unsupported)} unsupported", file=sys.stderr)
    copy_light()


# The "light" model zoo: whole ImageNet architectures whose weights are
# ConstantOfShape fills, with the output for a 1x3x224x224 input (the same for
# any input, the weights being constant). AlexNet, ZFNet-512 and VGG-19 fill
# 60-140 million weights of their fully connected layers at import: they check
# the bound on constants built at load.
LIGHT = [
    "squeezenet",
    "shufflenet",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "densenet121",
    "bvlc_alexnet",
    "zfnet512",
    "vgg19",
]


def copy_light():
    src = os.path.join(SRC, "light")
    dst = os.path.join(ROOT, "light")
    if os.path.exists(dst):
        shutil.rmtree(dst)
    os.makedirs(dst)
    for name in LIGHT:
        for f in (f"light_{name}.onnx", f"light_{name}_output_0.pb"):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    print(f"copied {len(LIGHT)} light models", file=sys.stderr)


if __name__ == "__main__":
    main()
