#!/usr/bin/env python3
"""Exports small PyTorch networks to ONNX with both of PyTorch's exporters and
records onnxruntime's outputs for them: the "real models" test data of
tests/models/onnx_torch.rs.

Needs torch, torchvision, onnx and onnxruntime (the device machine has them;
see /work/.library/device). Weights are seeded random initialisations: the
tests check that wgnn computes what onnxruntime computes for the same file,
not what a trained network predicts.

    python3 tests/data/onnx/torch/export_models.py OUTDIR

writes, per case, OUTDIR/<case>/model.onnx (plus model.onnx.data where the
case stores its weights outside the graph, as the dynamo exporter does for
large models) and OUTDIR/<case>/test_data_set_0/{input,output}_N.pb, the
layout of ONNX's own backend test data, and OUTDIR/manifest.json with the
versions used and each case's exporter, opset and ONNX node count.
"""
import json
import os
import sys
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from onnx import numpy_helper


class ConvZoo(nn.Module):
    """The convolution, normalization, pooling and activation ops."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, stride=2, padding=2, dilation=2, groups=8)
        self.bn2 = nn.BatchNorm2d(8)
        self.grouped = nn.Conv2d(8, 12, 3, padding=(1, 0), groups=4)
        self.prelu = nn.PReLU(12)
        self.inorm = nn.InstanceNorm2d(12, affine=True)
        self.lrn = nn.LocalResponseNorm(3)
        self.up = nn.ConvTranspose2d(12, 6, 3, stride=2, padding=1, output_padding=1)
        self.lnorm = nn.LayerNorm([6])
        self.fc = nn.Linear(6, 5)
        with torch.no_grad():
            for bn in (self.bn, self.bn2):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        y = F.hardswish(self.bn2(self.dw(y)))
        y = F.max_pool2d(y, 3, stride=2, padding=1, ceil_mode=True)
        y = self.prelu(self.grouped(y))
        y = self.lrn(F.elu(self.inorm(y)))
        y = F.avg_pool2d(F.pad(y, (1, 1, 1, 1), mode="reflect"), 2, stride=1,
                         padding=1, count_include_pad=True)
        y = F.selu(self.up(y))
        y = F.gelu(y) + F.softplus(y) - F.hardsigmoid(y) * torch.tanh(y)
        y = F.leaky_relu(F.pad(y, (0, 1, 2, 0), mode="replicate"), 0.1)
        y = torch.clamp(torch.sigmoid(y), 0.1, 0.9)
        y = self.lnorm(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        g = F.adaptive_avg_pool2d(y, 1).flatten(1)
        m = y.amax(dim=(2, 3))
        return F.log_softmax(self.fc(g + m), dim=1), F.softmax(self.fc(g), dim=-1)


class TensorZoo(nn.Module):
    """Matmul, shape, indexing, reduction and element-wise ops."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(2, 1, 6, 4))
        self.register_buffer("idx", torch.tensor([3, 0, 2]))

    def forward(self, x):  # x: [2, 3, 5, 6]
        y = torch.matmul(x, self.w)  # [2, 3, 5, 4] batched, broadcast
        a, b = torch.chunk(y, 2, dim=3)
        z = torch.cat([b, a, y[:, :, ::2, 1:3]], dim=2)
        z = z.transpose(1, 3).reshape(2, -1, 3)
        s = z[:, 1:7:3, :] * 2.0
        s = s.unsqueeze(1).expand(2, 4, 2, 3).repeat(1, 1, 2, 1)
        s = torch.index_select(s, 3, torch.tensor([2, 0]))
        r = torch.where(s > 0, s.abs().sqrt(), torch.exp(s) - 1.0)
        r = r + torch.log(s.abs() + 1.0) * torch.neg(s).clamp(min=0)
        r = r / (torch.reciprocal(s.abs() + 2.0) + 1.0)
        r = torch.pow(r, 2) + torch.maximum(r, s) - torch.minimum(r, s)
        m = r.mean(dim=(1, 3), keepdim=True) + r.sum(dim=2, keepdim=True).amax(dim=-1, keepdim=True)
        e = torch.erf(r) * (r >= 0.5).float() + (r < -0.5).float() + (r == 0).float()
        am = torch.argmax(r.flatten(1), dim=1)
        g = x.flatten(1)[:, self.idx]
        out = (m + e).squeeze(0) if m.shape[0] == 1 else m + e
        return out, am, g + F.dropout(g, 0.5, training=False)


class DynamicSeg(nn.Module):
    """A small encoder-decoder taking any height and width: its resizes read
    the input's size at run time (Shape/Gather/Concat/Resize subgraphs)."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
        self.enc2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.enc3 = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.dec = nn.Conv2d(32, 8, 3, padding=1)
        self.head = nn.Conv2d(16, 2, 1)
        self.shuffle = nn.Conv2d(8, 8 * 4, 1)

    def forward(self, x):
        e1 = F.relu(self.enc1(x))
        e2 = F.relu(self.enc2(e1))
        e3 = F.relu(self.enc3(e2))
        u = self.up(e3)
        u = F.interpolate(u, size=e2.shape[-2:], mode="nearest")
        d = F.relu(self.dec(torch.cat([u, e2], dim=1)))
        d = F.interpolate(d, size=x.shape[-2:], mode="bilinear", align_corners=False)
        p = F.pixel_unshuffle(F.pixel_shuffle(self.shuffle(e1), 2), 2)[:, :8]
        y = self.head(torch.cat([d, p], dim=1))
        return torch.softmax(y, dim=1)


def tv(name, **kw):
    return getattr(torchvision.models, name)(weights=None, **kw)


# name, module factory, input shapes, dynamic H/W
CASES = [
    ("conv_zoo", ConvZoo, [(1, 3, 20, 18)], False),
    ("tensor_zoo", TensorZoo, [(2, 3, 5, 6)], False),
    ("dynamic_seg", DynamicSeg, [(1, 3, 36, 52)], True),
    ("mobilenet_v3_small_w025", lambda: tv("mobilenet_v3_small", width_mult=0.25, num_classes=10),
     [(1, 3, 64, 64)], False),
    ("squeezenet1_1", lambda: tv("squeezenet1_1", num_classes=10), [(1, 3, 64, 64)], False),
    ("shufflenet_v2_x0_5", lambda: tv("shufflenet_v2_x0_5", num_classes=10), [(1, 3, 64, 64)],
     False),
]

# exporter name, dynamo flag, opset (None: the exporter's default)
EXPORTS = [("legacy11", False, 11), ("legacy17", False, 17), ("dynamo", True, None)]


def save_pb(arr, path, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def export(module, inputs, path, dynamo, opset, dynamic):
    names = [f"input_{i}" for i in range(len(inputs))]
    if dynamo:
        kw = {}
        if dynamic:
            h = torch.export.Dim("height", min=8, max=2048)
            w = torch.export.Dim("width", min=8, max=2048)
            kw["dynamic_shapes"] = ({2: h * 4, 3: w * 4},)
        prog = torch.onnx.export(module, tuple(inputs), dynamo=True, input_names=names, **kw)
        prog.optimize()
        # Weights outside the graph, as the dynamo exporter writes large models.
        prog.save(path, external_data=True)
    else:
        axes = {n: {2: "height", 3: "width"} for n in names} if dynamic else None
        torch.onnx.export(module, tuple(inputs), path, dynamo=False, opset_version=opset,
                          input_names=names, dynamic_axes=axes, do_constant_folding=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = {
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "onnx": onnx.__version__, "onnxruntime": ort.__version__, "cases": [], "failed": [],
    }
    for name, make, shapes, dynamic in CASES:
        for tag, dynamo, opset in EXPORTS:
            case = f"{name}_{tag}"
            d = os.path.join(out, case)
            os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
            torch.manual_seed(0)
            module = make().eval()
            gen = torch.Generator().manual_seed(1)
            inputs = [torch.rand(s, generator=gen) * 2 - 1 for s in shapes]
            path = os.path.join(d, "model.onnx")
            try:
                with torch.no_grad():
                    export(module, inputs, path, dynamo, opset, dynamic)
                model = onnx.load(path)
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                feeds = {i.name: x.numpy() for i, x in zip(sess.get_inputs(), inputs)}
                results = sess.run(None, feeds)
            except Exception as e:  # recorded, so a missing case has a reason
                traceback.print_exc()
                manifest["failed"].append({"case": case, "error": f"{type(e).__name__}: {e}"})
                continue
            for k, (i, x) in enumerate(zip(sess.get_inputs(), inputs)):
                save_pb(x.numpy(), os.path.join(d, "test_data_set_0", f"input_{k}.pb"), i.name)
            for k, (o, y) in enumerate(zip(sess.get_outputs(), results)):
                save_pb(y, os.path.join(d, "test_data_set_0", f"output_{k}.pb"), o.name)
            with torch.no_grad():
                ref = module(*inputs)
            ref = ref if isinstance(ref, tuple) else (ref,)
            err = max(float(np.abs(r.numpy().astype(np.float64) - y).max())
                      for r, y in zip(ref, results))
            opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
            manifest["cases"].append({
                "case": case, "exporter": "dynamo" if dynamo else "torchscript",
                "opset": opsets.get("ai.onnx"), "nodes": len(model.graph.node),
                "ops": sorted({n.op_type for n in model.graph.node}),
                "external_data": os.path.exists(path + ".data"),
                "input_shapes": [list(s) for s in shapes],
                "max_abs_diff_onnxruntime_vs_torch": err,
                "bytes": sum(os.path.getsize(os.path.join(r, f))
                             for r, _, fs in os.walk(d) for f in fs),
            })
            print(f"{case}: {len(model.graph.node)} nodes, opset {opsets.get('ai.onnx')}, "
                  f"ort vs torch {err:.2e}", flush=True)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
