#!/usr/bin/env bash
# Issue 16's measurement in one device-machine call: `wgnn-bench detect`
# (upload, MediaPipe face detector, GPU decode + compaction, the short list
# read back, NMS, boxes and labels drawn on the GPU) on 1080p frames in RGBA
# and NV12.
#
# Prepare here as for device_run.sh (release `--no-default-features` build in
# .devbin/wgnn-bench, the Vulkan loader .debs in .gl/), then run with
# carry [".devbin", ".gl"]:
#   bash benches/anchors/device_detect.sh
set -u
OUT=${OUT:-/tmp/wgnn-bench-out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGNN_ASSETS_DIR=$PWD/assets XDG_RUNTIME_DIR=/tmp
B=${BENCH:-.devbin/wgnn-bench}
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    $B adapters
} 2>&1 | tee "$OUT/env.txt"
for format in RGBA NV12; do
    $B detect --format $format --frames 300 2>&1 | tee -a "$OUT/detect.txt"
    $B detect --format $format --frames 300 --json > "$OUT/detect-$format.json" 2>>"$OUT/detect.txt"
done
date -u | tee -a "$OUT/env.txt"
