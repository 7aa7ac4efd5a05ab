#!/usr/bin/env python3
"""PyTorch anchor for `wgnn-bench models` and `wgnn-bench pipeline`.

Builds the bundled models in PyTorch from the same files wgnn loads:

- the MediaPipe selfie models from their TFLite flatbuffers (parsed with the
  `tflite` package: CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D, MEAN,
  RESIZE_BILINEAR, ADD, MUL, RELU, HARD_SWISH, LOGISTIC, DEQUANTIZE and
  MediaPipe's Convolution2DTransposeBias, the set src/models/tflite handles);
- ESRGAN-slim from its TF.js model.json and weight shard (Conv2D,
  Activation, Concatenate, Add, UpSampling2D, MultiplyBeta, PixelShuffle, the
  set src/models/tfjs handles).

Then times them on CUDA, eager, in fp32 (TF32 off), TF32 and fp16
(channels-last), with CUDA events (median of many runs), plus the same
forward captured in a CUDA graph (launch overhead removed, comparable with
wgnn's sum of kernel timestamps). `--pipeline` also times selfie + blur
composite on a 1080p frame already on the GPU (the work `wgnn-bench pipeline`
times per frame, without the upload).

`--io DIR` checks the anchor against wgnn: DIR is what
`wgnn-bench models --save-io DIR` wrote (our inputs and GPU outputs); the
fp32 anchor runs on the same inputs and the largest differences are printed.

Run on the device machine beside `wgnn-bench`, so that ratios come from one
GPU in one session:
    python3 benches/anchors/models_torch.py --io /tmp/io --pipeline
"""
import argparse
import json
import os
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "..", "assets", "models")

# name, key (as wgnn-bench models --save-io writes it), file, (h, w) or None
CASES = [
    ("selfie 256x256", "selfie_square", "selfie/selfie_segmentation.tflite", None),
    ("selfie landscape 144x256", "selfie_landscape",
     "selfie/selfie_segmentation_landscape.tflite", None),
    ("esrgan-slim x2 960x540", "esrgan_x2", "esrgan-slim/x2/model.json", (540, 960)),
    ("esrgan-slim x4 480x270", "esrgan_x4", "esrgan-slim/x4/model.json", (270, 480)),
]


def same_padding(size, kernel, stride, dilation):
    """TF's SAME padding along one axis: (before, after)."""
    effective = (kernel - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


def conv(x, w, b, stride, dilation, pad, groups=1):
    """conv2d with TF padding (top, bottom, left, right), NCHW."""
    t, bo, l, r = pad
    if t == bo and l == r:
        return F.conv2d(x, w, b, stride, (t, l), dilation, groups)
    return F.conv2d(F.pad(x, (l, r, t, bo)), w, b, stride, 0, dilation, groups)


def nhwc_constant(a):
    """A constant as the NCHW graph sees it: rank-4 NHWC -> NCHW, a
    per-channel vector -> [1, C, 1, 1]."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    if t.dim() == 4:
        return t.permute(0, 3, 1, 2).contiguous()
    if t.dim() == 1 and t.numel() > 1:
        return t.view(1, -1, 1, 1)
    return t


class Net:
    """A list of steps over an environment of named tensors; constants are
    moved to a device and dtype by `to`."""

    def __init__(self, consts, steps, inp, out, input_hw, range_):
        self.consts = consts  # name -> torch tensor (float32 or int)
        self.steps = steps  # callables env -> None
        self.inp = inp
        self.out = out
        self.input_hw = input_hw
        self.range = range_

    def to(self, device, dtype, channels_last=False):
        for k, v in self.consts.items():
            if v.is_floating_point():
                v = v.to(device, dtype)
                if channels_last and v.dim() == 4:
                    v = v.contiguous(memory_format=torch.channels_last)
                self.consts[k] = v
        return self

    def __call__(self, x):
        env = dict(self.consts)
        env[self.inp] = x
        for step in self.steps:
            step(env)
        return env[self.out]


# ---------------------------------------------------------------- TFLite


def load_tflite(path):
    import tflite

    buf = open(path, "rb").read()
    model = tflite.Model.GetRootAsModel(buf, 0)
    g = model.Subgraphs(0)
    op_names = {v: k for k, v in tflite.BuiltinOperator.__dict__.items() if not k.startswith("_")}
    dtypes = {tflite.TensorType.FLOAT32: np.float32, tflite.TensorType.FLOAT16: np.float16,
              tflite.TensorType.INT32: np.int32}

    def shape(i):
        return [int(d) for d in g.Tensors(i).ShapeAsNumpy()]

    raw = {}  # tensor index -> numpy constant (as stored, NHWC)
    for i in range(g.TensorsLength()):
        t = g.Tensors(i)
        b = model.Buffers(t.Buffer())
        if b.DataLength() > 0:
            data = b.DataAsNumpy().tobytes()
            raw[i] = np.frombuffer(data, dtype=dtypes[t.Type()]).reshape(shape(i))

    consts = {}
    steps = []

    def const_name(i):
        return f"t{i}"

    def operand(i):
        """Name of tensor i in the environment, making constants on demand
        (float16 ones become float32, like wgnn's DEQUANTIZE at load)."""
        name = const_name(i)
        if i in raw and name not in consts:
            a = raw[i]
            if a.dtype == np.float16:
                a = a.astype(np.float32)
            consts[name] = nhwc_constant(a) if a.dtype == np.float32 else torch.from_numpy(a.copy())
        return name

    def activation(y, act):
        if act == 0:
            return y
        if act == 1:
            return F.relu(y)
        if act == 2:
            return y.clamp(-1.0, 1.0)
        if act == 3:
            return y.clamp(0.0, 6.0)
        if act == 4:
            return torch.tanh(y)
        raise ValueError(f"fused activation {act}")

    def options(op, cls):
        o = cls()
        t = op.BuiltinOptions()
        if t is not None:
            o.Init(t.Bytes, t.Pos)
        return o

    for k in range(g.OperatorsLength()):
        op = g.Operators(k)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        name = op_names.get(builtin, str(builtin))
        if name == "CUSTOM":
            name = code.CustomCode().decode()
        ins = [int(i) for i in op.InputsAsNumpy()]
        out = int(op.OutputsAsNumpy()[0])
        o_name = const_name(out)
        in_shape = shape(ins[0]) if ins else None

        if name == "DEQUANTIZE":
            if ins[0] in raw:
                raw[out] = raw[ins[0]].astype(np.float32)
                continue
            src = operand(ins[0])
            steps.append(lambda env, s=src, d=o_name: env.__setitem__(d, env[s].float()))
            continue

        if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            o = options(op, tflite.Conv2DOptions if name == "CONV_2D" else tflite.DepthwiseConv2DOptions)
            w = raw[ins[1]].astype(np.float32)
            _, h, wd, c = in_shape
            if name == "CONV_2D":
                wt = torch.from_numpy(np.ascontiguousarray(w.transpose(0, 3, 1, 2)))  # OHWI -> OIHW
                groups = 1
            else:
                wt = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 0, 1, 2)))  # 1HW(CM) -> (CM)1HW
                groups = c
            kh, kw = wt.shape[2], wt.shape[3]
            stride = (o.StrideH(), o.StrideW())
            dil = (o.DilationHFactor(), o.DilationWFactor())
            if o.Padding() == tflite.Padding.SAME:
                pad = same_padding(h, kh, stride[0], dil[0]) + same_padding(wd, kw, stride[1], dil[1])
            else:
                pad = (0, 0, 0, 0)
            wname, bname = f"w{k}", None
            consts[wname] = wt
            if len(ins) > 2 and ins[2] >= 0:
                bname = f"b{k}"
                consts[bname] = torch.from_numpy(raw[ins[2]].astype(np.float32).copy())
            act = o.FusedActivationFunction()
            src = operand(ins[0])

            def step(env, s=src, d=o_name, wn=wname, bn=bname, st=stride, dl=dil, p=pad, gr=groups, a=act):
                env[d] = activation(conv(env[s], env[wn], env[bn] if bn else None, st, dl, p, gr), a)
            steps.append(step)
        elif name == "AVERAGE_POOL_2D":
            o = options(op, tflite.Pool2DOptions)
            _, h, wd, c = in_shape
            win = (o.FilterHeight(), o.FilterWidth())
            stride = (o.StrideH(), o.StrideW())
            act = o.FusedActivationFunction()
            src = operand(ins[0])
            if o.Padding() == tflite.Padding.VALID and win == (h, wd):
                steps.append(lambda env, s=src, d=o_name, a=act:
                             env.__setitem__(d, activation(env[s].mean((2, 3), keepdim=True), a)))
            else:
                if o.Padding() == tflite.Padding.SAME:
                    pad = same_padding(h, win[0], stride[0], 1) + same_padding(wd, win[1], stride[1], 1)
                else:
                    pad = (0, 0, 0, 0)

                def step(env, s=src, d=o_name, wi=win, st=stride, p=pad, a=act):
                    x = env[s]
                    t, bo, l, r = p
                    ones = torch.ones_like(x[:, :1])
                    num = F.avg_pool2d(F.pad(x, (l, r, t, bo)), wi, st)
                    den = F.avg_pool2d(F.pad(ones, (l, r, t, bo)), wi, st)
                    env[d] = activation(num / den, a)
                steps.append(step)
        elif name == "MEAN":
            axes_nhwc = [int(a) % 4 for a in raw[ins[1]].reshape(-1)]
            axes = tuple(sorted({0: 0, 1: 2, 2: 3, 3: 1}[a] for a in axes_nhwc))
            keep = options(op, tflite.ReducerOptions).KeepDims()
            if not keep:
                raise ValueError("MEAN without keep_dims is not needed by the bundled models")
            src = operand(ins[0])
            steps.append(lambda env, s=src, d=o_name, ax=axes: env.__setitem__(d, env[s].mean(ax, keepdim=True)))
        elif name == "RESIZE_BILINEAR":
            size = tuple(int(v) for v in raw[ins[1]].reshape(-1))
            o = options(op, tflite.ResizeBilinearOptions)
            if not (o.AlignCorners() or o.HalfPixelCenters()):
                raise ValueError("asymmetric RESIZE_BILINEAR is not needed by the bundled models")
            ac = bool(o.AlignCorners())
            src = operand(ins[0])
            steps.append(lambda env, s=src, d=o_name, sz=size, a=ac: env.__setitem__(
                d, F.interpolate(env[s], size=sz, mode="bilinear", align_corners=a)))
        elif name in ("ADD", "MUL"):
            o = options(op, tflite.AddOptions if name == "ADD" else tflite.MulOptions)
            act = o.FusedActivationFunction()
            a, b = operand(ins[0]), operand(ins[1])
            fn = torch.add if name == "ADD" else torch.mul
            steps.append(lambda env, a=a, b=b, d=o_name, f=fn, ac=act: env.__setitem__(d, activation(f(env[a], env[b]), ac)))
        elif name in ("RELU", "HARD_SWISH", "LOGISTIC"):
            fn = {"RELU": F.relu, "HARD_SWISH": F.hardswish, "LOGISTIC": torch.sigmoid}[name]
            src = operand(ins[0])
            steps.append(lambda env, s=src, d=o_name, f=fn: env.__setitem__(d, f(env[s])))
        elif name == "Convolution2DTransposeBias":
            opts = op.CustomOptionsAsNumpy().tobytes()
            padding, stride_w, stride_h = struct.unpack("<3i", opts[:12])
            w = raw[ins[1]].astype(np.float32)  # OHWI
            _, h, wd, c = in_shape
            wname, bname = f"w{k}", f"b{k}"
            consts[wname] = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 0, 1, 2)))  # IOHW
            consts[bname] = torch.from_numpy(raw[ins[2]].astype(np.float32).copy())
            kh, kw = w.shape[1], w.shape[2]
            full = ((h - 1) * stride_h + kh, (wd - 1) * stride_w + kw)
            out_hw = (h * stride_h, wd * stride_w) if padding == 1 else full
            crop = ((full[0] - out_hw[0]) // 2, (full[1] - out_hw[1]) // 2)
            src = operand(ins[0])

            def step(env, s=src, d=o_name, wn=wname, bn=bname, st=(stride_h, stride_w), cr=crop, oh=out_hw):
                y = F.conv_transpose2d(env[s], env[wn], env[bn], st)
                env[d] = y[:, :, cr[0]:cr[0] + oh[0], cr[1]:cr[1] + oh[1]]
            steps.append(step)
        else:
            raise ValueError(f"{path}: operator {k} ({name}) is not supported here")

    inp = const_name(int(g.Inputs(0)))
    out = const_name(int(g.Outputs(0)))
    in_shape = shape(int(g.Inputs(0)))
    return Net(consts, steps, inp, out, (in_shape[1], in_shape[2]), (0.0, 1.0))


# ----------------------------------------------------------------- TF.js


def load_tfjs(path, hw):
    js = json.load(open(path))
    topo = js["modelTopology"]
    cfg = topo.get("model_config", topo)["config"]
    # Weights: shards in manifest order, float32.
    weights = {}
    base = os.path.dirname(path)
    for group in js["weightsManifest"]:
        data = b"".join(open(os.path.join(base, p), "rb").read() for p in group["paths"])
        off = 0
        for e in group["weights"]:
            n = int(np.prod(e["shape"])) if e["shape"] else 1
            weights[e["name"]] = np.frombuffer(data, np.float32, n, off).reshape(e["shape"])
            off += 4 * n
    consts, steps = {}, []
    inp = cfg["input_layers"][0][0]
    out = cfg["output_layers"][0][0]

    def act(y, name):
        return {"linear": lambda v: v, "relu": F.relu, "relu6": lambda v: v.clamp(0, 6),
                "sigmoid": torch.sigmoid, "tanh": torch.tanh, "hard_swish": F.hardswish}[name](y)

    for layer in cfg["layers"]:
        cls, name, c = layer["class_name"], layer["name"], layer["config"]
        srcs = [n[0] for n in layer["inbound_nodes"][0]] if layer["inbound_nodes"] else []
        if cls == "InputLayer":
            continue
        if cls == "Conv2D":
            k = weights[f"{name}/kernel"]  # HWIO
            consts[f"{name}/w"] = torch.from_numpy(np.ascontiguousarray(k.transpose(3, 2, 0, 1)))
            bias = f"{name}/b" if c.get("use_bias", True) else None
            if bias:
                consts[bias] = torch.from_numpy(weights[f"{name}/bias"].copy())
            kh, kw = k.shape[0], k.shape[1]
            st = tuple(c.get("strides", [1, 1]))
            dl = tuple(c.get("dilation_rate", [1, 1]))
            if c["padding"] == "same":
                # Stride-1 layers only in these models, so the padding does not
                # depend on the input size.
                assert st == (1, 1), "strided SAME conv needs the input size"
                pad = same_padding(64, kh, 1, dl[0]) + same_padding(64, kw, 1, dl[1])
            else:
                pad = (0, 0, 0, 0)

            def step(env, s=srcs[0], d=name, st=st, dl=dl, p=pad, a=c.get("activation", "linear")):
                env[d] = act(conv(env[s], env[d + "/w"], env[d + "/b"] if d + "/b" in env else None, st, dl, p), a)
            steps.append(step)
        elif cls == "Activation":
            steps.append(lambda env, s=srcs[0], d=name, a=c["activation"]: env.__setitem__(d, act(env[s], a)))
        elif cls == "Concatenate":
            axis = {3: 1, -1: 1}[c.get("axis", -1)]
            steps.append(lambda env, ss=tuple(srcs), d=name, ax=axis: env.__setitem__(d, torch.cat([env[s] for s in ss], ax)))
        elif cls == "Add":
            def step(env, ss=tuple(srcs), d=name):
                y = env[ss[0]]
                for s in ss[1:]:
                    y = y + env[s]
                env[d] = y
            steps.append(step)
        elif cls == "UpSampling2D":
            size = c.get("size", [2, 2])
            size = (size, size) if isinstance(size, int) else tuple(size)
            mode = c.get("interpolation", "nearest")
            if mode != "nearest":
                raise ValueError("bilinear UpSampling2D is not needed by the bundled models")
            steps.append(lambda env, s=srcs[0], d=name, sz=size: env.__setitem__(
                d, F.interpolate(env[s], scale_factor=sz, mode="nearest")))
        elif cls == "MultiplyBeta":
            beta = float(c.get("beta", 0.2))
            steps.append(lambda env, s=srcs[0], d=name, b=beta: env.__setitem__(d, env[s] * b))
        elif cls == "PixelShuffle":
            r = int(c["scale"])

            def step(env, s=srcs[0], d=name, r=r):
                # TF depth_to_space (DCR): channel (i*r + j)*C + c.
                x = env[s]
                n, ch, h, w = x.shape
                oc = ch // (r * r)
                y = x.view(n, r, r, oc, h, w).permute(0, 3, 4, 1, 5, 2)
                env[d] = y.reshape(n, oc, h * r, w * r)
            steps.append(step)
        else:
            raise ValueError(f"{path}: layer class {cls} is not supported here")
    return Net(consts, steps, inp, out, hw, (0.0, 255.0))


def load(case):
    name, key, file, hw = case
    path = os.path.join(MODELS, file)
    return load_tflite(path) if file.endswith(".tflite") else load_tfjs(path, hw)


# ---------------------------------------------------------------- timing


def events(fn, warmup, runs):
    if not torch.cuda.is_available():
        # Off a GPU machine (a dry run of this script): host times only.
        with torch.no_grad():
            for _ in range(warmup):
                fn()
            walls = []
            for _ in range(runs):
                t = time.perf_counter()
                fn()
                walls.append((time.perf_counter() - t) * 1e3)
        return statistics.median(walls), min(walls), statistics.median(walls)
    with torch.no_grad():
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times, walls = [], []
        for _ in range(runs):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            t = time.perf_counter()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            walls.append((time.perf_counter() - t) * 1e3)
            times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), statistics.median(walls)


def graphed(fn, warmup, runs):
    """The forward captured once in a CUDA graph; replay times."""
    if not torch.cuda.is_available():
        return float("nan"), float("nan"), float("nan")
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return events(g.replay, warmup, runs)


PRECISIONS = [
    # label, dtype, tf32, channels_last
    ("fp32", torch.float32, False, False),
    ("tf32", torch.float32, True, False),
    ("fp16 nhwc", torch.float16, False, True),
]


def set_tf32(on):
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = on


def check(io_dir, dev):
    """Runs the fp32 anchor on wgnn's saved inputs; returns rows."""
    manifest = json.load(open(os.path.join(io_dir, "manifest.json")))
    rows = []
    set_tf32(False)
    for entry in manifest["models"]:
        case = next(c for c in CASES if c[1] == entry["key"])
        hw = tuple(entry["input_shape"][1:3])
        net = load((case[0], case[1], case[2], hw)).to(dev, torch.float32)
        x = np.fromfile(os.path.join(io_dir, entry["input"]), np.float32).reshape(entry["input_shape"])
        ours = np.fromfile(os.path.join(io_dir, entry["output"]), np.float32).reshape(entry["output_shape"])
        with torch.no_grad():
            y = net(torch.from_numpy(x).to(dev).permute(0, 3, 1, 2).contiguous())
        theirs = y.permute(0, 2, 3, 1).float().cpu().numpy()
        if theirs.shape != ours.shape:
            rows.append((entry["model"], str(list(theirs.shape)), "shape differs", "", ""))
            continue
        d = np.abs(theirs.astype(np.float64) - ours)
        rel = np.linalg.norm(theirs.astype(np.float64) - ours) / max(np.linalg.norm(theirs.astype(np.float64)), 1e-30)
        rows.append((entry["model"], "x".join(map(str, ours.shape)), f"{d.max():.3e}", f"{d.mean():.3e}", f"{rel:.3e}"))
    return rows


def gaussian(sigma, dev, dtype):
    r = int(np.ceil(3 * sigma))
    i = torch.arange(-r, r + 1, device=dev, dtype=torch.float32)
    k = torch.exp(-0.5 * i * i / (sigma * sigma))
    return (k / k.sum()).to(dtype), r


def pipeline_case(net, dev, dtype, sigma, h=1080, w=1920):
    """Selfie + blur composite on an RGBA frame already on the GPU."""
    frame = torch.randint(0, 256, (h, w, 4), dtype=torch.uint8, device=dev)
    k, r = gaussian(sigma, dev, dtype)
    kh = k.view(1, 1, 1, -1).repeat(3, 1, 1, 1)
    kv = k.view(1, 1, -1, 1).repeat(3, 1, 1, 1)
    mh, mw = net.input_hw

    def fn():
        x = frame[..., :3].permute(2, 0, 1).unsqueeze(0).to(dtype) * (1.0 / 255.0)
        t = F.interpolate(x, size=(mh, mw), mode="bilinear", align_corners=False)
        m = net(t)
        m = F.interpolate(m, size=(h, w), mode="bilinear", align_corners=False)
        b = F.conv2d(F.pad(x, (r, r, 0, 0), mode="replicate"), kh, groups=3)
        b = F.conv2d(F.pad(b, (0, 0, r, r), mode="replicate"), kv, groups=3)
        out = b + (x - b) * m
        return (out * 255.0).clamp(0, 255).to(torch.uint8)
    return fn


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--io", help="folder written by `wgnn-bench models --save-io`: check against it")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--pipeline", action="store_true", help="also selfie + blur at 1080p")
    ap.add_argument("--blur", type=float, default=12.0)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for --check-only off a GPU machine")
    ap.add_argument("--check-only", action="store_true", help="only the --io check, no timing")
    args = ap.parse_args()

    dev = torch.device(args.device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    torch.backends.cudnn.benchmark = True
    print(f"device: {name}, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}")
    results = {"device": name, "torch": torch.__version__, "check": [], "models": [], "pipeline": []}

    if args.io:
        print("\nanchor (fp32) vs wgnn GPU output on the same input")
        print(f"{'model':<28} {'output':<16} {'max|diff|':>10} {'mean|diff|':>11} {'rel L2':>10}")
        for row in check(args.io, dev):
            print(f"{row[0]:<28} {row[1]:<16} {row[2]:>10} {row[3]:>11} {row[4]:>10}")
            results["check"].append(dict(zip(["model", "output", "max_abs_diff", "mean_abs_diff", "rel_l2"], row)))
    if args.check_only:
        return 0

    print(f"\n{'model':<28} {'precision':<10} {'eager ms':>9} {'min':>8} {'wall ms':>8} {'graph ms':>9} {'fps eager':>9}")
    for case in CASES:
        for label, dtype, tf32, cl in PRECISIONS:
            set_tf32(tf32)
            net = load(case).to(dev, dtype, cl)
            h, w = net.input_hw
            lo, hi = net.range
            x = (torch.rand(1, 3, h, w, device=dev) * (hi - lo) + lo).to(dtype)
            if cl:
                x = x.contiguous(memory_format=torch.channels_last)
            med, mn, wall = events(lambda: net(x), args.warmup, args.runs)
            gmed, _, _ = graphed(lambda: net(x), args.warmup, args.runs)
            print(f"{case[0]:<28} {label:<10} {med:>9.3f} {mn:>8.3f} {wall:>8.3f} {gmed:>9.3f} {1e3 / med:>9.1f}")
            results["models"].append({"model": case[0], "precision": label, "eager_ms": med, "eager_min_ms": mn,
                                      "wall_ms": wall, "cuda_graph_ms": gmed})
    if args.pipeline:
        print(f"\nselfie 256x256 + blur (sigma {args.blur}) composite, 1920x1080 RGBA frame on the GPU")
        print(f"{'precision':<10} {'eager ms':>9} {'min':>8} {'wall ms':>8} {'graph ms':>9}")
        for label, dtype, tf32, cl in PRECISIONS:
            set_tf32(tf32)
            net = load(CASES[0]).to(dev, dtype, cl)
            fn = pipeline_case(net, dev, dtype, args.blur)
            med, mn, wall = events(fn, args.warmup, args.runs)
            gmed, _, _ = graphed(fn, args.warmup, args.runs)
            print(f"{label:<10} {med:>9.3f} {mn:>8.3f} {wall:>8.3f} {gmed:>9.3f}")
            results["pipeline"].append({"precision": label, "eager_ms": med, "eager_min_ms": mn,
                                        "wall_ms": wall, "cuda_graph_ms": gmed})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
