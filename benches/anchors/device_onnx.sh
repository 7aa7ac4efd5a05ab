#!/usr/bin/env bash
# Issue 15's measurement in one device-machine call: torchvision ResNet-50 and
# MobileNetV3-Large exported to ONNX, then `wgnn-bench models --model` on those
# files (GPU and CPU contexts, the CPU result checked against the GPU one) and
# the PyTorch eager / onnxruntime anchor (onnx_models.py) on the same GPU.
#
# Prepare here as for device_run.sh (release `--no-default-features` build in
# .devbin/wgnn-bench, the Vulkan loader .debs in .gl/), then run with
# carry [".devbin", ".gl"]:
#   bash benches/anchors/device_onnx.sh
set -u
OUT=${OUT:-/tmp/wgnn-bench-out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGNN_ASSETS_DIR=$PWD/assets XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
B=${BENCH:-.devbin/wgnn-bench}
M=/tmp/onnx-models
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    $B adapters
} 2>&1 | tee "$OUT/env.txt"
python3 benches/anchors/onnx_models.py --out $M --json "$OUT/anchor.json" 2>&1 | tee "$OUT/anchor.txt"
$B models --model $M/resnet50.onnx --model $M/mobilenet_v3_large.onnx --context both \
    --iterations 50 --cpu-iterations 2 --top 6 2>&1 | tee "$OUT/models.txt"
# The anchor again after wgnn, so that clocks drifting in between would show.
python3 benches/anchors/onnx_models.py --out $M 2>&1 | tee -a "$OUT/anchor.txt"
date -u | tee -a "$OUT/env.txt"
