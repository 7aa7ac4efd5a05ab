#!/usr/bin/env python3
"""MediaPipe CPU anchor for `wgnn-bench models --context cpu` (selfie rows).

Times MediaPipe 0.10.14 (PyPI, TFLite + XNNPACK on the CPU) on the selfie
segmentation models, on this machine's CPU:

- Tasks API `ImageSegmenter` loading *our* bundled .tflite files (the same
  weights wgnn runs), fed an image of the model's input size, so that the
  resize in MediaPipe's pre-processing is nearly free;
- the legacy `solutions.selfie_segmentation` graph with the copy of the
  models that the wheel bundles (model_selection 0 = square 256x256,
  1 = landscape 144x256), at the model's size and on a 1920x1080 frame
  (resize in, mask out, as an application would call it).

Times are host wall ms per call (median of --runs after --warmup calls).

Set up (Python 3.11 here):
    python3 -m venv /tmp/mpvenv
    /tmp/mpvenv/bin/pip install mediapipe==0.10.14 "numpy<2"
    /tmp/mpvenv/bin/python benches/anchors/mediapipe_cpu.py
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.join(HERE, "..", "..", "assets")


def sample(h, w):
    """The sample picture resized to w x h, RGB uint8 (plain numpy, bilinear)."""
    try:
        from PIL import Image

        img = Image.open(os.path.join(ASSETS, "samples", "astronaut.png")).convert("RGB")
        return np.asarray(img.resize((w, h), Image.BILINEAR), dtype=np.uint8).copy()
    except ImportError:
        import cv2

        img = cv2.imread(os.path.join(ASSETS, "samples", "astronaut.png"))[:, :, ::-1]
        return np.ascontiguousarray(cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR))


def timed(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


TASKS = [
    ("selfie 256x256", "selfie_segmentation.tflite", (256, 256)),
    ("selfie landscape 144x256", "selfie_segmentation_landscape.tflite", (144, 256)),
]
SOLUTIONS = [
    ("selfie 256x256", 0, (256, 256)),
    ("selfie landscape 144x256", 1, (144, 256)),
    ("selfie 256x256, 1920x1080 frame", 0, (1080, 1920)),
]


def one(kind, index, warmup, runs):
    """Times one case in this process; prints 'name<TAB>median<TAB>min'."""
    import mediapipe as mp

    if kind == "tasks":
        from mediapipe.tasks import python as mp_tasks
        from mediapipe.tasks.python import vision

        label, file, (h, w) = TASKS[index]
        options = vision.ImageSegmenterOptions(
            base_options=mp_tasks.BaseOptions(
                model_asset_path=os.path.join(ASSETS, "models", "selfie", file)),
            output_confidence_masks=True,
            output_category_mask=False,
        )
        seg = vision.ImageSegmenter.create_from_options(options)
        image = mp.Image(image_format=mp.ImageFormat.SRGB, data=sample(h, w))
        med, mn = timed(lambda: seg.segment(image), warmup, runs)
        name = f"tasks ImageSegmenter {label} (our file)"
    else:
        label, selection, (h, w) = SOLUTIONS[index]
        image = sample(h, w)
        with mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=selection) as seg:
            med, mn = timed(lambda: seg.process(image), warmup, runs)
        name = f"solutions {label} (wheel's model)"
    print(f"{name}\t{med}\t{mn}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--one", nargs=2, metavar=("KIND", "INDEX"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.one[0], int(args.one[1]), args.warmup, args.runs)
        return 0

    import subprocess

    import mediapipe as mp

    print(f"mediapipe {mp.__version__}, {os.cpu_count()} CPUs")
    print(f"{'case':<58} {'median ms':>10} {'min ms':>8} {'fps':>7}")
    # Each case in its own process: MediaPipe can crash on a model without
    # metadata, and a crash must not lose the other rows.
    cases = [("tasks", i, t[0]) for i, t in enumerate(TASKS)]
    cases += [("solutions", i, s[0]) for i, s in enumerate(SOLUTIONS)]
    for kind, index, label in cases:
        p = subprocess.run(
            [sys.executable, __file__, "--one", kind, str(index),
             "--runs", str(args.runs), "--warmup", str(args.warmup)],
            capture_output=True, text=True)
        line = next((l for l in p.stdout.splitlines() if "\t" in l), None)
        if p.returncode != 0 or line is None:
            print(f"{kind + ' ' + label:<58} failed (exit {p.returncode})")
            continue
        name, med, mn = line.split("\t")
        med, mn = float(med), float(mn)
        print(f"{name:<58} {med:>10.3f} {mn:>8.3f} {1e3 / med:>7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
