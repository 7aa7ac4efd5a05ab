#!/usr/bin/env python3
"""Issue 40's anchors: the models users bring, exported to ONNX for
`wgnn-bench models --batch` and timed in PyTorch on the same GPU.

    python3 benches/anchors/speed_models.py export --out DIR [--models NAME,...]
    python3 benches/anchors/speed_models.py time --json FILE [--compile] [--deadline UNIX_S]
        [--models NAME,...]
    python3 benches/anchors/speed_models.py table --anchors FILE... --wgnn FILE

`export` writes DIR/{resnet50,mobilenet_v3_large,yolov8n,yolo11n}.onnx
(opset 17, a dynamic batch axis "batch", fixed height and width): torchvision
ResNet-50 and MobileNetV3-Large at 224x224, and YOLOv8n and YOLO11n at 640x640
built from the `ultralytics` package's architecture
(`DetectionModel("yolov8n.yaml")`), every model with seeded random weights
(torch.manual_seed(0)), in eval mode, YOLO's convolutions and batch norms fused
and its detection head in export form as Ultralytics' ONNX exporter sets it
(one (batch, 84, 8400) output of boxes and class scores; the anchors are
constants, as only the batch is dynamic). The YOLO exports carry the
metadata Ultralytics' exporter writes (task, names, imgsz, stride, batch), so
that wgnndetect takes them with no model-proc (`wgnn-bench streams --model`).

`time` times each model in PyTorch eager or, with --compile,
torch.compile(mode="reduce-overhead") (CUDA graphs), in fp32 (TF32 off, so
that it is float32 arithmetic as wgnn's f32 is) and fp16 channels-last, at
batch 1 and 32: CUDA events around each run, after warm-up, median of many.
Compiling takes tens of seconds per (model, precision, batch); past
--deadline the remaining compiled rows are skipped and say so.

`table` prints the markdown tables of docs/BENCHMARKS.md ("General models
(issue 40)") from `time`'s JSON and `wgnn-bench models --json` output (one
JSON document per line).

benches/anchors/device_speed.sh runs all three in one device call.
"""
import argparse
import json
import os
import sys
import time

MODELS = ["resnet50", "mobilenet_v3_large", "yolov8n", "yolo11n"]
SIZE = {"resnet50": 224, "mobilenet_v3_large": 224, "yolov8n": 640, "yolo11n": 640}
BATCHES = [1, 32]


def make(name):
    """The model in eval mode, float32, on the CPU, weights seeded."""
    import torch

    torch.manual_seed(0)
    if name in ("resnet50", "mobilenet_v3_large"):
        import torchvision

        return getattr(torchvision.models, name)(weights=None).eval()
    os.environ.setdefault("YOLO_OFFLINE", "1")
    os.environ.setdefault("YOLO_VERBOSE", "False")
    from ultralytics.nn.modules import C2f, Detect
    from ultralytics.nn.tasks import DetectionModel

    m = DetectionModel(f"{name}.yaml", verbose=False)
    for p in m.parameters():
        p.requires_grad = False
    m = m.eval().float().fuse(verbose=False)
    # What ultralytics.engine.exporter sets before an ONNX export.
    for mod in m.modules():
        if isinstance(mod, Detect):
            mod.dynamic = False
            mod.export = True
            mod.format = "onnx"
            mod.xyxy = False
            mod.shape = None
        elif isinstance(mod, C2f):
            mod.forward = mod.forward_split
    return m


def ultralytics_metadata(path, name, m, size):
    """Records in the ONNX file at `path` what Ultralytics' exporter writes
    in its metadata (each value as Python's str() of it)."""
    import onnx

    model = onnx.load(path)
    meta = {"description": f"{name} with seeded random weights (speed_models.py)",
            "stride": int(m.stride.max()), "task": "detect", "batch": 1,
            "imgsz": [size, size], "names": m.names}
    for key, value in meta.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = key, str(value)
    onnx.save(model, path)


def export(args):
    import torch

    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        m = make(name)
        if args.cls_bias and name.startswith("yolo"):
            # The last conv of each scale's class branch (Detect.cv3).
            for mod in m.modules():
                if type(mod).__name__ == "Detect":
                    for branch in mod.cv3:
                        branch[-1].bias.add_(args.cls_bias)
        s = SIZE[name]
        x = torch.rand((1, 3, s, s), generator=torch.Generator().manual_seed(1))
        path = os.path.join(args.out, f"{name}.onnx")
        with torch.no_grad():
            torch.onnx.export(m, (x,), path, dynamo=False, opset_version=17,
                              input_names=["images"], output_names=["output"],
                              dynamic_axes={"images": {0: "batch"}, "output": {0: "batch"}})
        if name.startswith("yolo"):
            ultralytics_metadata(path, name, m, s)
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)


def time_models(args):
    import torch
    from cuda_timing import cuda_ms

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    print(f"{'model':<20} {'runtime':<30} {'batch':>5} {'ms':>9} {'min':>9} {'ms/img':>9}",
          flush=True)
    rows = []
    runtimes = ["compile"] if args.compile else ["eager"]
    for name in args.models.split(","):
        base = make(name)
        s = SIZE[name]
        for prec in ("fp32", "fp16"):
            if prec == "fp32":
                m = base.cuda()
            else:
                m = base.half().to(memory_format=torch.channels_last).cuda()
            for runtime in runtimes:
                for batch in BATCHES:
                    row = {"model": name, "runtime": runtime, "precision": prec,
                           "batch": batch}
                    label = f"{runtime} {prec}" + (" channels-last" if prec == "fp16" else "")
                    if runtime == "compile" and args.deadline and time.time() > args.deadline:
                        row["skipped"] = "time budget of the device call"
                        rows.append(row)
                        print(f"{name:<20} {label:<30} {batch:>5} skipped (time budget)",
                              flush=True)
                        continue
                    x = torch.rand((batch, 3, s, s), generator=torch.Generator().manual_seed(1))
                    x = x.cuda()
                    if prec == "fp16":
                        x = x.half().to(memory_format=torch.channels_last)
                    fn = m
                    t = time.time()
                    if runtime == "compile":
                        torch._dynamo.reset()
                        fn = torch.compile(m, mode="reduce-overhead")
                    with torch.inference_mode():
                        if runtime == "compile":
                            for _ in range(3):
                                fn(x)
                            row["compile_s"] = round(time.time() - t, 1)
                        iters = 50 if batch == 1 else 20
                        med, mn = cuda_ms(lambda: fn(x), warmup=5, iters=iters)
                    row.update(ms=med, min_ms=mn, ms_per_image=med / batch)
                    rows.append(row)
                    print(f"{name:<20} {label:<30} {batch:>5} {med:>9.3f} {mn:>9.3f} "
                          f"{med / batch:>9.4f}", flush=True)
            del m
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                       "rows": rows}, f, indent=1)


def read_wgnn(path):
    """wgnn-bench models --json documents, one a line (a failed run's line
    is its error, kept as text)."""
    rows, errors = [], []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rows.extend(json.loads(line)["models"])
            except (json.JSONDecodeError, KeyError):
                errors.append(line)
    return rows, errors


def table(args):
    rows, errors = read_wgnn(args.wgnn)
    print("| model | prec | batch | GPU ms | ms/img | img/s | kernels | PSNR f16 vs f32 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        stem = os.path.basename(r["model"]).removesuffix(".onnx")
        psnr = r.get("psnr_vs_f32_db")
        print(f"| {stem} | {r['precision']} | {r['batch']} | {r['gpu_ms']:.3f} | "
              f"{r['ms_per_image']:.4f} | {r['images_per_s']:.0f} | {r['kernels']} | "
              f"{'-' if psnr is None else f'{psnr:.1f} dB'} |")
    for e in errors:
        print(f"\nwgnn: {e}")
    for path in args.anchors:
        with open(path) as f:
            a = json.load(f)
        print(f"\nPyTorch {a['torch']} on {a['device']} ({os.path.basename(path)}):\n")
        print("| model | runtime | batch | ms | ms/img |")
        print("|---|---|---:|---:|---:|")
        for r in a["rows"]:
            what = f"{r['runtime']} {r['precision']}"
            if "skipped" in r:
                print(f"| {r['model']} | {what} | {r['batch']} | skipped | - |")
            else:
                print(f"| {r['model']} | {what} | {r['batch']} | {r['ms']:.3f} | "
                      f"{r['ms_per_image']:.4f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--models", default=",".join(MODELS), help="a comma-separated subset")
    e.add_argument("--cls-bias", type=float, default=0.0,
                   help="added to a YOLO head's class-logit biases, so that random weights find "
                        "objects: +9 gives 15 on assets/samples/astronaut.png letterboxed to 640 "
                        "(0: as initialised, none)")
    t = sub.add_parser("time")
    t.add_argument("--json")
    t.add_argument("--compile", action="store_true")
    t.add_argument("--deadline", type=float, help="UNIX time after which no model is compiled")
    t.add_argument("--models", default=",".join(MODELS), help="a comma-separated subset")
    s = sub.add_parser("table")
    s.add_argument("--anchors", nargs="*", default=[])
    s.add_argument("--wgnn", required=True)
    args = ap.parse_args()
    {"export": export, "time": time_models, "table": table}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
