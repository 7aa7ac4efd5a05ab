#!/usr/bin/env python3
"""Reference outputs of the LiteRT interpreter for wgnn's TFLite importer tests.

Writes, under tests/data/tflite/:
- ops/<case>.tflite: one small float model per operator case, written here with
  the TFLite flatbuffer schema's object API (ai_edge_litert.schema_py_generated),
  seeded random weights;
- <case>.<k>.in / <case>.<k>.out: each case's inputs and every output, raw
  little-endian values (dtype in the manifest);
- references.json: the manifest the Rust tests read (tests/models/mediapipe.rs,
  tests/models/tflite_ops.rs).

MediaPipe models (assets/models/mediapipe/, copied from the mediapipe wheel by
--copy-assets, which also writes their PROVENANCE) get a seeded random image in
the range their MediaPipe graphs feed them; it is stored as uint8 q with the
float input lo + (hi - lo) * (q / 255) computed in float32, so the test rebuilds
the same floats bit for bit.

Needs ai-edge-litert 2.3.0, mediapipe 0.10.14, numpy, flatbuffers. Run from
anywhere:  python3 tests/data/tflite/make_references.py [--copy-assets]
"""

import hashlib
import json
import os
import shutil
import sys

import flatbuffers
import numpy as np
from ai_edge_litert import interpreter as litert
from ai_edge_litert import schema_py_generated as S

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "tflite")
ASSETS = os.path.join(ROOT, "assets", "models", "mediapipe")

# (path in the mediapipe wheel, input range MediaPipe's graph feeds it)
MEDIAPIPE = [
    ("modules/face_detection/face_detection_short_range.tflite", (-1.0, 1.0)),
    ("modules/face_detection/face_detection_full_range_sparse.tflite", (-1.0, 1.0)),
    ("modules/face_landmark/face_landmark.tflite", (0.0, 1.0)),
    ("modules/palm_detection/palm_detection_lite.tflite", (0.0, 1.0)),
    ("modules/hand_landmark/hand_landmark_lite.tflite", (0.0, 1.0)),
    ("modules/holistic_landmark/hand_recrop.tflite", (-1.0, 1.0)),
    ("modules/pose_detection/pose_detection.tflite", (-1.0, 1.0)),
]
# Already bundled (assets/models/selfie, from npm): referenced in place.
BUNDLED = [
    ("assets/models/selfie/selfie_segmentation_landscape.tflite", (0.0, 1.0)),
]

F32, I32, I64, F16 = (S.TensorType.FLOAT32, S.TensorType.INT32, S.TensorType.INT64,
                      S.TensorType.FLOAT16)
NP = {F32: np.float32, I32: np.int32, I64: np.int64, F16: np.float16, S.TensorType.INT8: np.int8,
      S.TensorType.INT16: np.int16}
DTYPE = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
         np.dtype(np.uint8): "u8"}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def rel(path):
    return os.path.relpath(path, ROOT)


def run(model, feeds, delegates=True):
    """Runs the model in LiteRT; returns [(name, array)] of every output."""
    kw = {"model_path": model} if isinstance(model, str) else {"model_content": bytes(model)}
    if not delegates:
        kw["experimental_op_resolver_type"] = \
            litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = litert.Interpreter(**kw)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x)
    it.invoke()
    return it, [(d["name"], it.get_tensor(d["index"]).copy()) for d in it.get_output_details()]


def save(case, kind, k, array):
    name = f"{case}.{k}.{kind}"
    array = np.ascontiguousarray(array)
    array.astype(array.dtype.newbyteorder("<")).tofile(os.path.join(OUT, name))
    return {"file": name, "shape": list(array.shape), "dtype": DTYPE[array.dtype]}


# ---- MediaPipe models ------------------------------------------------------

def copy_assets():
    import mediapipe
    wheel = os.path.dirname(mediapipe.__file__)
    os.makedirs(ASSETS, exist_ok=True)
    lines = []
    for path, _ in MEDIAPIPE:
        dst = os.path.join(ASSETS, os.path.basename(path))
        shutil.copyfile(os.path.join(wheel, path), dst)
        lines.append(f"{sha256(dst)}  {os.path.basename(path)}")
    dist = os.path.join(os.path.dirname(wheel), f"mediapipe-{mediapipe.__version__}.dist-info")
    shutil.copyfile(os.path.join(dist, "LICENSE"), os.path.join(ASSETS, "LICENSE"))
    # Our own files in the folder (the face detector's model-proc) keep
    # their paragraph and checksum: they are not the wheel's to rewrite.
    prov = os.path.join(ASSETS, "PROVENANCE")
    ours_text, ours_sums = "", []
    if os.path.exists(prov):
        old = open(prov).read()
        if "ours (wgnn's" in old:
            ours_text = old[old.index("ours (wgnn's"):old.index("sha256:")]
        ours_sums = [l for l in old.splitlines() if l.endswith(".json")]
    with open(prov, "w") as f:
        f.write(f"""# MediaPipe vision models (float32, weights float16 and sparse where MediaPipe made them so)
package: mediapipe (PyPI wheel mediapipe-{mediapipe.__version__}-cp311-cp311-manylinux_2_17_x86_64)
version: {mediapipe.__version__}
licence: Apache-2.0 (LICENSE here is the wheel's dist-info LICENSE)
origin: Google MediaPipe; files copied unchanged from the wheel's mediapipe/<path>:
""")
        for path, (lo, hi) in MEDIAPIPE:
            f.write(f"  {path}  (input range [{lo:g}, {hi:g}])\n")
        f.write("re-copy and verify: tests/data/tflite/make_references.py --copy-assets\n")
        f.write(ours_text + "sha256:\n")
        f.write("\n".join(lines + ours_sums) + "\n")


def mediapipe_cases(rng):
    cases = []
    models = [(os.path.join(ASSETS, os.path.basename(p)), r) for p, r in MEDIAPIPE]
    models += [(os.path.join(ROOT, p), r) for p, r in BUNDLED]
    for path, (lo, hi) in models:
        case = os.path.splitext(os.path.basename(path))[0]
        it = litert.Interpreter(model_path=path)
        (d,) = it.get_input_details()
        q = rng.integers(0, 256, size=d["shape"], dtype=np.uint8)
        x = np.float32(lo) + np.float32(hi - lo) * (q.astype(np.float32) / np.float32(255))
        _, outs = run(path, [x])
        entry = save(case, "in", 0, q)
        entry.update(name=d["name"], range=[lo, hi])
        cases.append({
            "name": case,
            "model": rel(path),
            "sha256": sha256(path),
            "inputs": [entry],
            "outputs": [dict(save(case, "out", k, y), name=n) for k, (n, y) in enumerate(outs)],
        })
        print(f"{case}: {[y.shape for _, y in outs]}")
    return cases


# ---- single-operator models ------------------------------------------------

ACT = S.ActivationFunctionType
OP = S.BuiltinOperator
OPT = S.BuiltinOptions


class Net:
    """A one-subgraph model under construction (object API)."""

    def __init__(self, rng):
        self.rng = rng
        self.tensors, self.buffers = [], [S.BufferT()]
        self.ops, self.codes = [], []
        self.inputs, self.outputs, self.feeds = [], [], []

    def tensor(self, shape, dtype=F32, data=None, sparsity=None):
        t = S.TensorT()
        t.shape, t.type, t.name = list(shape), dtype, f"t{len(self.tensors)}"
        t.buffer = 0
        if data is not None:
            b = S.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).astype(NP[dtype]).tobytes(),
                                   dtype=np.uint8)
            t.buffer = len(self.buffers)
            self.buffers.append(b)
        t.sparsity = sparsity
        self.tensors.append(t)
        return len(self.tensors) - 1

    def input(self, shape, lo=-2.0, hi=2.0, dtype=F32, values=None):
        if values is None:
            values = self.rng.uniform(lo, hi, size=shape)
        self.feeds.append(np.asarray(values).astype(NP[dtype]).reshape(shape))
        i = self.tensor(shape, dtype)
        self.inputs.append(i)
        return i

    def const(self, shape, lo=-1.0, hi=1.0, dtype=F32, values=None):
        if values is None:
            values = self.rng.uniform(lo, hi, size=shape)
        return self.tensor(shape, dtype, np.asarray(values).reshape(shape))

    def op(self, code, ins, n_out=1, opt_type=OPT.NONE, opt=None, out_dtype=F32, version=1,
           shape=None):
        if not any(c.builtinCode == code for c in self.codes):
            c = S.OperatorCodeT()
            c.builtinCode, c.deprecatedBuiltinCode, c.version = code, min(code, 127), version
            self.codes.append(c)
        o = S.OperatorT()
        o.opcodeIndex = next(k for k, c in enumerate(self.codes) if c.builtinCode == code)
        o.inputs = list(ins)
        # Output shapes are placeholders (of the first input's rank, which
        # some kernels check) until LiteRT has computed them.
        rank = len(self.tensors[ins[0]].shape)
        if code in (OP.DEQUANTIZE, OP.DENSIFY):
            # XNNPACK reads constant-derived weight shapes before Prepare.
            shape = self.tensors[ins[0]].shape
        o.outputs = [self.tensor(shape or [1] * rank, out_dtype) for _ in range(n_out)]
        o.builtinOptionsType, o.builtinOptions = opt_type, opt
        self.ops.append(o)
        return o.outputs[0] if n_out == 1 else o.outputs

    def serialize(self):
        g = S.SubGraphT()
        g.tensors, g.inputs, g.outputs, g.operators = (self.tensors, self.inputs, self.outputs,
                                                       self.ops)
        m = S.ModelT()
        m.version, m.operatorCodes, m.subgraphs, m.buffers = 3, self.codes, [g], self.buffers
        m.description = "wgnn test case (tests/data/tflite/make_references.py)"
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return b.Output()

    def finish(self, *outputs):
        """Fixes every computed tensor's shape to what LiteRT infers; the bytes."""
        self.outputs = list(outputs)
        # Without XNNPACK, which leaves the shapes of tensors inside what it
        # delegates unreported.
        it, _ = run(self.serialize(), self.feeds, delegates=False)
        shapes = {d["index"]: list(d["shape"]) for d in it.get_tensor_details()}
        for k, t in enumerate(self.tensors):
            if k in shapes and t.buffer == 0:
                t.shape = [int(s) for s in shapes[k]]
        return self.serialize()


def opts(cls, **fields):
    o = getattr(S, cls + "T")()
    for k, v in fields.items():
        setattr(o, k, v)
    return o


def conv(n, x, cin, cout, k, stride, pad, act, dil=1):
    w = n.const([cout, k, k, cin])
    b = n.const([cout])
    return n.op(OP.CONV_2D, [x, w, b], opt_type=OPT.Conv2DOptions,
                opt=opts("Conv2DOptions", padding=pad, strideW=stride, strideH=stride,
                         dilationWFactor=dil, dilationHFactor=dil, fusedActivationFunction=act))


def unary(code, lo=-3.0, hi=3.0, opt_type=OPT.NONE, opt=None):
    def build(n):
        return n.op(code, [n.input([2, 3, 5], lo, hi)], opt_type=opt_type, opt=opt)
    return build


def binary(code, shape_a, shape_b, opt_type=OPT.NONE, opt=None, b_lo=-2.0, b_hi=2.0):
    def build(n):
        a = n.input(shape_a)
        b = n.input(shape_b, b_lo, b_hi)
        return n.op(code, [a, b], opt_type=opt_type, opt=opt)
    return build


def strided(shape, begin, end, strides, **masks):
    def build(n):
        ins = [n.input(shape)]
        ins += [n.const([len(v)], dtype=I32, values=v) for v in (begin, end, strides)]
        return n.op(OP.STRIDED_SLICE, ins, opt_type=OPT.StridedSliceOptions,
                    opt=opts("StridedSliceOptions", **masks))
    return build


def resize(code, size, align, half, shape=(1, 5, 7, 2)):
    def build(n):
        x = n.input(list(shape))
        s = n.const([2], dtype=I32, values=size)
        kind = "ResizeBilinearOptions" if code == OP.RESIZE_BILINEAR else \
            "ResizeNearestNeighborOptions"
        return n.op(code, [x, s], opt_type=getattr(OPT, kind),
                    opt=opts(kind, alignCorners=align, halfPixelCenters=half))
    return build


def sparse_weights(n, dense, block=None):
    """A constant stored sparse: rows dense, columns CSR (or CSR over
    1x`block` blocks), values float16 as MediaPipe's sparse models store them."""
    rows, cols = dense.shape
    dims = [opts("DimensionMetadata", format=S.DimensionType.DENSE, denseSize=rows)]
    values, segments, indices = [], [0], []
    step = block or 1
    for r in range(rows):
        for c in range(0, cols, step):
            chunk = dense[r, c:c + step]
            if np.any(chunk != 0):
                indices.append(c // step)
                values.extend(chunk)
        segments.append(len(indices))
    csr = opts("DimensionMetadata", format=S.DimensionType.SPARSE_CSR,
               arraySegmentsType=S.SparseIndexVector.Int32Vector,
               arraySegments=opts("Int32Vector", values=segments),
               arrayIndicesType=S.SparseIndexVector.Int32Vector,
               arrayIndices=opts("Int32Vector", values=indices))
    dims.append(csr)
    order, block_map = [0, 1], []
    if block:
        dims.append(opts("DimensionMetadata", format=S.DimensionType.DENSE, denseSize=block))
        order, block_map = [0, 1, 2], [1]
    sp = opts("SparsityParameters", traversalOrder=order, blockMap=block_map, dimMetadata=dims)
    t = n.tensor([rows, cols], F16, np.array(values), sparsity=sp)
    d = n.op(OP.DENSIFY, [t], out_dtype=F16)
    return n.op(OP.DEQUANTIZE, [d])


def case_densify(block):
    def build(n):
        dense = n.rng.uniform(-1, 1, size=(6, 8)).astype(np.float16)
        dense[n.rng.uniform(size=dense.shape) < 0.6] = 0
        if block:
            dense[:, 0:block] = 0  # one all-zero block column
        w = sparse_weights(n, dense, block)
        x = n.input([3, 8])
        return n.op(OP.FULLY_CONNECTED, [x, w, -1], opt_type=OPT.FullyConnectedOptions,
                    opt=opts("FullyConnectedOptions"))
    return build


def case_dequantize(n):
    x = n.input([1, 6, 5, 3])
    w = n.const([4, 3, 3, 3], dtype=F16)
    wf = n.op(OP.DEQUANTIZE, [w])
    b = n.const([4])
    return n.op(OP.CONV_2D, [x, wf, b], opt_type=OPT.Conv2DOptions,
                opt=opts("Conv2DOptions", padding=S.Padding.SAME, strideW=1, strideH=1,
                         dilationWFactor=1, dilationHFactor=1))


def case_transpose_conv(pad, out, stride, k, act):
    def build(n):
        x = n.input([1, 4, 5, 3])
        shape = n.const([4], dtype=I32, values=out)
        w = n.const([out[3], k, k, 3])
        b = n.const([out[3]])
        return n.op(OP.TRANSPOSE_CONV, [shape, w, x, b], opt_type=OPT.TransposeConvOptions,
                    opt=opts("TransposeConvOptions", padding=pad, strideW=stride,
                             strideH=stride, fusedActivationFunction=act), version=3)
    return build


def case_fully_connected(shape, units, keep, bias, act):
    def build(n):
        x = n.input(shape)
        w = n.const([units, shape[-1] if keep else int(np.prod(shape[1:]))])
        b = n.const([units]) if bias else -1
        return n.op(OP.FULLY_CONNECTED, [x, w, b], opt_type=OPT.FullyConnectedOptions,
                    opt=opts("FullyConnectedOptions", keepNumDims=keep,
                             fusedActivationFunction=act))
    return build


def case_pool(code, pad, k, stride, act):
    def build(n):
        return n.op(code, [n.input([1, 7, 8, 3])], opt_type=OPT.Pool2DOptions,
                    opt=opts("Pool2DOptions", padding=pad, strideW=stride, strideH=stride,
                             filterWidth=k, filterHeight=k, fusedActivationFunction=act))
    return build


def case_reduce(code, shape, axes, keep):
    def build(n):
        a = n.const([len(axes)], dtype=I32, values=axes)
        return n.op(code, [n.input(shape), a], opt_type=OPT.ReducerOptions,
                    opt=opts("ReducerOptions", keepDims=keep))
    return build


def case_concat(n):
    parts = [n.input([1, 3, 4, c]) for c in (2, 1, 3)]
    # LiteRT's float kernel refuses a fused activation here (and XNNPACK
    # ignores one), so none is set.
    return n.op(OP.CONCATENATION, parts, opt_type=OPT.ConcatenationOptions,
                opt=opts("ConcatenationOptions", axis=-1))


def case_reshape_tensor(n):
    s = n.const([2], dtype=I32, values=[-1, 6])
    return n.op(OP.RESHAPE, [n.input([2, 3, 4]), s])


def case_reshape_options(n):
    return n.op(OP.RESHAPE, [n.input([2, 3, 4])], opt_type=OPT.ReshapeOptions,
                opt=opts("ReshapeOptions", newShape=[4, -1]))


def case_squeeze(dims):
    def build(n):
        return n.op(OP.SQUEEZE, [n.input([1, 3, 1, 4])], opt_type=OPT.SqueezeOptions,
                    opt=opts("SqueezeOptions", squeezeDims=dims))
    return build


def case_transpose(n):
    p = n.const([4], dtype=I32, values=[0, 3, 1, 2])
    return n.op(OP.TRANSPOSE, [n.input([1, 3, 4, 5]), p])


def case_pad(code, mode=None, value=None):
    def build(n):
        p = n.const([4, 2], dtype=I32, values=[0, 0, 1, 2, 2, 1, 0, 1])
        ins = [n.input([1, 3, 4, 2]), p]
        if code == OP.PADV2:
            ins.append(n.const([], values=value))
        if code == OP.MIRROR_PAD:
            return n.op(code, ins, opt_type=OPT.MirrorPadOptions,
                        opt=opts("MirrorPadOptions", mode=mode))
        return n.op(code, ins)
    return build


def case_slice(n):
    b = n.const([3], dtype=I32, values=[0, 1, 1])
    s = n.const([3], dtype=I32, values=[-1, 2, 3])
    # Its kernel checks the declared output shape when begin and size are constant.
    return n.op(OP.SLICE, [n.input([2, 4, 5]), b, s], shape=[2, 2, 3])


def case_split(n):
    axis = n.const([], dtype=I32, values=1)
    outs = n.op(OP.SPLIT, [axis, n.input([2, 6, 3])], n_out=3, opt_type=OPT.SplitOptions,
                opt=opts("SplitOptions", numSplits=3))
    return tuple(outs)


def case_split_v(n):
    sizes = n.const([3], dtype=I32, values=[2, -1, 1])
    axis = n.const([], dtype=I32, values=-1)
    outs = n.op(OP.SPLIT_V, [n.input([2, 3, 7]), sizes, axis], n_out=3,
                opt_type=OPT.SplitVOptions, opt=opts("SplitVOptions", numSplits=3))
    return tuple(outs)


def case_depth(code, shape):
    def build(n):
        kind = "DepthToSpaceOptions" if code == OP.DEPTH_TO_SPACE else "SpaceToDepthOptions"
        return n.op(code, [n.input(shape)], opt_type=getattr(OPT, kind),
                    opt=opts(kind, blockSize=2))
    return build


def case_arg_max(out_type):
    def build(n):
        a = n.const([], dtype=I32, values=-1)
        return n.op(OP.ARG_MAX, [n.input([2, 3, 7]), a], opt_type=OPT.ArgMaxOptions,
                    opt=opts("ArgMaxOptions", outputType=out_type), out_dtype=out_type)
    return build


def case_gather(n):
    idx = n.const([2, 2], dtype=I32, values=[2, 0, 3, 2])
    return n.op(OP.GATHER, [n.input([2, 4, 3]), idx], opt_type=OPT.GatherOptions,
                opt=opts("GatherOptions", axis=1))


def case_cast(n):
    i = n.op(OP.CAST, [n.input([2, 5], -4.0, 4.0)], opt_type=OPT.CastOptions,
             opt=opts("CastOptions", inDataType=F32, outDataType=I32), out_dtype=I32)
    return n.op(OP.CAST, [i], opt_type=OPT.CastOptions,
                opt=opts("CastOptions", inDataType=I32, outDataType=F32))


def case_prelu(n):
    return n.op(OP.PRELU, [n.input([1, 4, 4, 3]), n.const([1, 1, 3])])


def case_softmax(n):
    return n.op(OP.SOFTMAX, [n.input([2, 5], -3, 3)], opt_type=OPT.SoftmaxOptions,
                opt=opts("SoftmaxOptions", beta=0.7))


def case_conv(n):
    return conv(n, n.input([1, 9, 10, 3]), 3, 4, 3, 2, S.Padding.SAME, ACT.RELU6)


def case_conv_dilated(n):
    return conv(n, n.input([1, 9, 10, 3]), 3, 2, 3, 1, S.Padding.VALID, ACT.RELU_N1_TO_1, dil=2)


def case_depthwise(n):
    x = n.input([1, 7, 6, 3])
    w = n.const([1, 3, 3, 6])
    b = n.const([6])
    return n.op(OP.DEPTHWISE_CONV_2D, [x, w, b], opt_type=OPT.DepthwiseConv2DOptions,
                opt=opts("DepthwiseConv2DOptions", padding=S.Padding.SAME, strideW=2, strideH=1,
                         depthMultiplier=2, dilationWFactor=1, dilationHFactor=1,
                         fusedActivationFunction=ACT.RELU))


def case_floor_mod(dtype):
    """FLOOR_MOD (the divisor's sign) against mixed-sign divisors, broadcast."""
    def build(n):
        sign = np.where(n.rng.uniform(size=[3, 4]) < 0.5, -1, 1)
        if dtype == I32:
            a = n.input([2, 3, 4], dtype=I32, values=n.rng.integers(-50, 51, size=[2, 3, 4]))
            b = n.input([3, 4], dtype=I32, values=sign * n.rng.integers(1, 8, size=[3, 4]))
        else:
            a = n.input([2, 3, 4], -5.0, 5.0)
            b = n.input([3, 4], values=sign * n.rng.uniform(0.5, 2.0, size=[3, 4]))
        return n.op(OP.FLOOR_MOD, [a, b], out_dtype=dtype)
    return build


def opt_act(kind, act):
    return getattr(OPT, kind), opts(kind, fusedActivationFunction=act)


OPS = {
    "conv_same_stride2_relu6": case_conv,
    "conv_valid_dilated_relu_n1_to_1": case_conv_dilated,
    "depthwise_multiplier2_relu": case_depthwise,
    "transpose_conv_same": case_transpose_conv(S.Padding.SAME, [1, 8, 10, 2], 2, 3, ACT.NONE),
    "transpose_conv_same_odd_k4_relu": case_transpose_conv(S.Padding.SAME, [1, 7, 9, 2], 2, 4,
                                                           ACT.RELU),
    "transpose_conv_valid": case_transpose_conv(S.Padding.VALID, [1, 9, 11, 2], 2, 3, ACT.NONE),
    "fully_connected_keep_dims_relu": case_fully_connected([2, 3, 5], 4, True, True, ACT.RELU),
    "fully_connected_flatten_no_bias": case_fully_connected([1, 2, 2, 3], 6, False, False,
                                                            ACT.NONE),
    "average_pool_same": case_pool(OP.AVERAGE_POOL_2D, S.Padding.SAME, 3, 2, ACT.NONE),
    "max_pool_valid_relu": case_pool(OP.MAX_POOL_2D, S.Padding.VALID, 2, 2, ACT.RELU),
    "max_pool_same": case_pool(OP.MAX_POOL_2D, S.Padding.SAME, 3, 2, ACT.NONE),
    "mean_keep_dims": case_reduce(OP.MEAN, [1, 5, 6, 3], [1, 2], True),
    "sum_last_axis": case_reduce(OP.SUM, [2, 3, 4], [-1], False),
    "add_broadcast_relu": binary(OP.ADD, [1, 4, 5, 3], [3], *opt_act("AddOptions", ACT.RELU)),
    "sub_broadcast": binary(OP.SUB, [2, 3], [2, 1]),
    "mul_relu_n1_to_1": binary(OP.MUL, [2, 3, 4], [2, 3, 4],
                               *opt_act("MulOptions", ACT.RELU_N1_TO_1)),
    "div": binary(OP.DIV, [2, 3, 4], [1, 3, 1], b_lo=0.5, b_hi=2.0),
    "maximum": binary(OP.MAXIMUM, [2, 3, 4], [4]),
    "minimum": binary(OP.MINIMUM, [2, 3, 4], [2, 1, 4]),
    "squared_difference": binary(OP.SQUARED_DIFFERENCE, [2, 3, 4], [3, 4]),
    "rsqrt": unary(OP.RSQRT, 0.1, 4.0),
    "sqrt": unary(OP.SQRT, 0.0, 4.0),
    "exp": unary(OP.EXP),
    "relu": unary(OP.RELU),
    "relu6": unary(OP.RELU6, -3.0, 9.0),
    "relu_n1_to_1": unary(OP.RELU_N1_TO_1),
    "leaky_relu": unary(OP.LEAKY_RELU, opt_type=OPT.LeakyReluOptions,
                        opt=opts("LeakyReluOptions", alpha=0.3)),
    "prelu": case_prelu,
    "logistic": unary(OP.LOGISTIC),
    "tanh": unary(OP.TANH),
    "hard_swish": unary(OP.HARD_SWISH, -5.0, 5.0),
    "elu": unary(OP.ELU),
    "softmax_beta": case_softmax,
    "concatenation": case_concat,
    "reshape_shape_tensor": case_reshape_tensor,
    "reshape_options": case_reshape_options,
    "squeeze_one_axis": case_squeeze([2]),
    "squeeze_all": case_squeeze([]),
    "transpose": case_transpose,
    "pad": case_pad(OP.PAD),
    "padv2": case_pad(OP.PADV2, value=-3.5),
    "mirror_pad_reflect": case_pad(OP.MIRROR_PAD, S.MirrorPadMode.REFLECT),
    "mirror_pad_symmetric": case_pad(OP.MIRROR_PAD, S.MirrorPadMode.SYMMETRIC),
    "slice": case_slice,
    # x[1:-1, ::-2, :]
    "strided_slice_negative_stride": strided([4, 7, 3], [1, 0, 0], [-1, 0, 0], [1, -2, 1],
                                             beginMask=0b110, endMask=0b110),
    # x[..., 1:4:2, -1]
    "strided_slice_ellipsis_shrink": strided([2, 3, 6, 4], [0, 1, -1], [0, 4, 0], [1, 2, 1],
                                             ellipsisMask=0b001, shrinkAxisMask=0b100),
    # x[:, None, 2:, ::3]
    "strided_slice_new_axis": strided([3, 5, 7], [0, 0, 2, 0], [0, 0, 5, 0], [1, 1, 1, 3],
                                      beginMask=0b1001, endMask=0b1001, newAxisMask=0b0010),
    "split": case_split,
    "split_v": case_split_v,
    "resize_bilinear": resize(OP.RESIZE_BILINEAR, [9, 11], False, False),
    "resize_bilinear_align_corners": resize(OP.RESIZE_BILINEAR, [9, 4], True, False),
    "resize_bilinear_half_pixel": resize(OP.RESIZE_BILINEAR, [3, 13], False, True),
    "resize_nearest": resize(OP.RESIZE_NEAREST_NEIGHBOR, [9, 11], False, False),
    "resize_nearest_align_corners": resize(OP.RESIZE_NEAREST_NEIGHBOR, [9, 4], True, False),
    "resize_nearest_half_pixel": resize(OP.RESIZE_NEAREST_NEIGHBOR, [3, 13], False, True),
    "depth_to_space": case_depth(OP.DEPTH_TO_SPACE, [1, 2, 3, 8]),
    "space_to_depth": case_depth(OP.SPACE_TO_DEPTH, [1, 4, 6, 3]),
    "arg_max_int32": case_arg_max(I32),
    "arg_max_int64": case_arg_max(I64),
    "gather": case_gather,
    "cast_float_int_float": case_cast,
    "dequantize_float16_weights": case_dequantize,
    "densify_csr": case_densify(None),
    "densify_blocks": case_densify(2),
    "floor_mod": case_floor_mod(F32),
    "floor_mod_int32": case_floor_mod(I32),
}


def op_cases(seed):
    os.makedirs(os.path.join(OUT, "ops"), exist_ok=True)
    cases = []
    for k, (case, build) in enumerate(OPS.items()):
        n = Net(np.random.default_rng(seed + k))
        outs = build(n)
        outs = outs if isinstance(outs, tuple) else (outs,)
        data = n.finish(*outs)
        path = os.path.join(OUT, "ops", case + ".tflite")
        with open(path, "wb") as f:
            f.write(data)
        _, ys = run(path, n.feeds)
        cases.append({
            "name": case,
            "model": rel(path),
            "sha256": sha256(path),
            "inputs": [dict(save(case, "in", i, x), name=n.tensors[t].name)
                       for i, (t, x) in enumerate(zip(n.inputs, n.feeds))],
            "outputs": [dict(save(case, "out", i, y), name=name)
                        for i, (name, y) in enumerate(ys)],
        })
    print(f"{len(cases)} operator cases")
    return cases


def bad_models(seed):
    """Models wgnn must refuse with a clear error (tests/models/bad_input.rs)."""
    os.makedirs(os.path.join(OUT, "bad"), exist_ok=True)
    rng = np.random.default_rng(seed)
    # 16x8-quantized (int16 activations, int8 weights, int64 bias): wgnn
    # reads int8 and uint8 quantized models, not int16 ones.
    n = Net(rng)
    x = n.input([1, 4, 4, 2], dtype=S.TensorType.INT16,
                values=rng.integers(-128, 128, size=[1, 4, 4, 2]))
    n.tensors[x].name = "image_int16"
    q = lambda scale: opts("QuantizationParameters", scale=[scale], zeroPoint=[0])
    n.tensors[x].quantization = q(0.02)
    w = n.tensor([3, 1, 1, 2], S.TensorType.INT8, rng.integers(-127, 128, size=[3, 1, 1, 2]))
    n.tensors[w].quantization = q(0.01)
    b = n.tensor([3], I64, np.zeros(3))
    n.tensors[b].quantization = q(0.0002)
    y = n.op(OP.CONV_2D, [x, w, b], opt_type=OPT.Conv2DOptions, out_dtype=S.TensorType.INT16,
             opt=opts("Conv2DOptions", padding=S.Padding.VALID, strideW=1, strideH=1,
                      dilationWFactor=1, dilationHFactor=1))
    n.tensors[y].quantization = q(0.05)
    n.tensors[y].shape = [1, 4, 4, 3]
    n.outputs = [y]
    models = {"quantized_int16.tflite": n.serialize()}
    # An operator outside the list (LOG) at operator #1, after a RELU.
    n = Net(rng)
    r = n.op(OP.RELU, [n.input([1, 3])])
    models["unsupported_op.tflite"] = n.finish(n.op(OP.LOG, [r]))
    for name, data in models.items():
        with open(os.path.join(OUT, "bad", name), "wb") as f:
            f.write(data)
        run(os.path.join(OUT, "bad", name), [])  # LiteRT loads and prepares it
    print(f"{len(models)} bad models")


def main():
    if "--copy-assets" in sys.argv:
        copy_assets()
    for f in os.listdir(OUT):
        if f.endswith((".in", ".out")):
            os.remove(os.path.join(OUT, f))
    manifest = {
        "generator": "tests/data/tflite/make_references.py",
        "litert": "ai-edge-litert 2.3.0 (ai_edge_litert.interpreter, default CPU kernels)",
        "mediapipe": mediapipe_cases(np.random.default_rng(15)),
        "ops": op_cases(1500),
    }
    bad_models(1515)
    with open(os.path.join(OUT, "references.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
