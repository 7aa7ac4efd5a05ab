#!/usr/bin/env python3
"""int8 QDQ models for the device's int8-against-f16 measurement
(device_speed.sh).

Reads DIR/<model>.onnx as speed_models.py export wrote it (input "images",
a dynamic batch axis) and writes DIR/<model>_int8.onnx: onnxruntime's
quantize_static in the QDQ format with int8 activations and per-channel
int8 weights (the form whose convolutions wgnn computes in int8,
Op::QuantConv2d), calibrated on 8 seeded random images of the model's size.
Needs only onnx, onnxruntime and numpy (all on the device); no network.

    python3 int8_models.py --dir /tmp/speed-models [--models yolov8n,resnet50]

`--size HxW` calibrates at another size (a small static export, to try the
script away from the device).
"""

import argparse
import os
import time

import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

SIZE = {"resnet50": 224, "yolov8n": 640}


class Images(CalibrationDataReader):
    """8 seeded random images in [0, 1), batch 1."""

    def __init__(self, name, hw):
        rng = np.random.default_rng(0)
        self.data = iter([{name: rng.random((1, 3, *hw), np.float32)}
                          for _ in range(8)])

    def get_next(self):
        return next(self.data, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--models", default="yolov8n,resnet50")
    ap.add_argument("--size", help="HxW for every model")
    args = ap.parse_args()
    for name in args.models.split(","):
        src = os.path.join(args.dir, f"{name}.onnx")
        dst = os.path.join(args.dir, f"{name}_int8.onnx")
        started = time.time()
        input_name = onnx.load(src, load_external_data=False).graph.input[0].name
        hw = (SIZE[name], SIZE[name])
        if args.size:
            hw = tuple(int(v) for v in args.size.split("x"))
        quantize_static(src, dst, Images(input_name, hw),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        print(f"{dst}: {os.path.getsize(dst) / 1e6:.1f} MB in {time.time() - started:.0f} s",
              flush=True)


if __name__ == "__main__":
    main()
