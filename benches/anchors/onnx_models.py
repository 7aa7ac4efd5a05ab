#!/usr/bin/env python3
"""Anchor for `wgnn-bench models --model`: torchvision ResNet-50 and
MobileNetV3-Large (random initialisation, seeded), exported to ONNX for
wgnn-bench to load, and timed on the same GPU in PyTorch eager (fp32 with TF32
off, and fp16 channels-last) and in onnxruntime (CUDA execution provider with
inputs and outputs bound on the GPU, when the installed onnxruntime has it;
else its CPU provider, and the table says so).

    python3 benches/anchors/onnx_models.py --out /tmp/onnx-models [--json FILE]

Run it in the same device call as `wgnn-bench models --model ...` on the
files it writes (benches/anchors/device_onnx.sh does both), so that ratios come
from one GPU in one session.
"""
import argparse
import json
import os
import statistics

import numpy as np
import onnxruntime as ort
import torch
import torchvision

from cuda_timing import cuda_ms

MODELS = [
    ("resnet50", lambda: torchvision.models.resnet50(weights=None)),
    ("mobilenet_v3_large", lambda: torchvision.models.mobilenet_v3_large(weights=None)),
]
SHAPE = (1, 3, 224, 224)


def ort_ms(path, x, warmup=10, iters=50):
    """Median and minimum ms of one run; the provider used."""
    providers = ort.get_available_providers()
    if "CUDAExecutionProvider" in providers:
        sess = ort.InferenceSession(path, providers=["CUDAExecutionProvider"])
        binding = sess.io_binding()
        xv = ort.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
        binding.bind_ortvalue_input(sess.get_inputs()[0].name, xv)
        for o in sess.get_outputs():
            binding.bind_output(o.name, "cuda", 0)
        run = lambda: sess.run_with_iobinding(binding)  # noqa: E731
        provider = "CUDA"
    else:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {sess.get_inputs()[0].name: x}
        run = lambda: sess.run(None, feeds)  # noqa: E731
        provider = "CPU"
    import time
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times), provider


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"onnxruntime {ort.__version__} ({', '.join(ort.get_available_providers())}), "
          f"{torch.cuda.get_device_name()}")
    print(f"{'model':<22} {'runtime':<34} {'ms':>8} {'min':>8}")
    for name, make in MODELS:
        torch.manual_seed(0)
        m = make().eval()
        x = torch.rand(SHAPE, generator=torch.Generator().manual_seed(1))
        path = os.path.join(args.out, f"{name}.onnx")
        with torch.no_grad():
            torch.onnx.export(m, (x,), path, dynamo=False, opset_version=17,
                              input_names=["input"], output_names=["logits"])
        mc, xc = m.cuda(), x.cuda()
        with torch.no_grad():
            med, mn = cuda_ms(lambda: mc(xc))
            rows.append((name, "PyTorch eager fp32", med, mn))
            mh = m.half().to(memory_format=torch.channels_last).cuda()
            xh = xc.half().to(memory_format=torch.channels_last)
            med, mn = cuda_ms(lambda: mh(xh))
            rows.append((name, "PyTorch eager fp16 channels-last", med, mn))
        med, mn, provider = ort_ms(path, x.numpy())
        rows.append((name, f"onnxruntime {provider} fp32", med, mn))
        for r in rows[-3:]:
            print(f"{r[0]:<22} {r[1]:<34} {r[2]:>8.3f} {r[3]:>8.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(zip(("model", "runtime", "ms", "min_ms"), r)) for r in rows], f,
                      indent=1)


if __name__ == "__main__":
    main()
