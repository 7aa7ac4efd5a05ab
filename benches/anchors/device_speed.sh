#!/usr/bin/env bash
# Issue 40's measurement in one device-machine call: ResNet-50,
# MobileNetV3-Large, YOLOv8n and YOLO11n exported to ONNX with a dynamic
# batch axis (speed_models.py export), int8 QDQ YOLOv8n and ResNet-50 made
# from them (int8_models.py), their PyTorch eager anchors, then
# `wgnn-bench models --batch 1,8,32` on those files in f32 and f16, the
# eager anchors again (clocks drifting in between would show), and last the
# torch.compile anchors (slow to compile; skipped past a deadline so that
# the call ends inside its limit).
#
# Prepare here as for device_run.sh (the release `--no-default-features`
# build, stripped and xz-compressed in .devbin/, the Vulkan loader .debs in
# .gl/), and the wheels the device lacks (the `ultralytics` package, for the
# YOLO architectures) in .whl/:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 -d .whl \
#     ultralytics==8.4.190 ultralytics-thop==2.2.3
# then run with carry [".devbin", ".gl", ".whl"]:
#   bash benches/anchors/device_speed.sh
# or only the torch.compile anchors of some models (same carry):
#   bash benches/anchors/device_speed.sh compile yolov8n,yolo11n
# speed_models.py, int8_models.py (and cuda_timing.py) are found beside this
# script, so all four can travel in .devbin/ too when the checkout sent is not the one
# they are committed in.
set -u
OUT=${OUT:-/tmp/wgnn-bench-out}
HERE=$(dirname "$0")
mkdir -p "$OUT"
START=$(date +%s)
for f in .devbin/*.xz; do
    [ -e "$f" ] && xz -dkf "$f" && chmod +x "${f%.xz}"
done
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGNN_ASSETS_DIR=$PWD/assets XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
export YOLO_OFFLINE=1 YOLO_VERBOSE=False YOLO_CONFIG_DIR=/tmp/ultralytics
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/*.whl && export PYTHONPATH=/tmp/site
B=${BENCH:-.devbin/wgnn-bench}
P="python3 $HERE/speed_models.py"
M=/tmp/speed-models
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    $B adapters
} 2>&1 | tee "$OUT/env.txt"
if [ "${1:-}" = compile ]; then
    $P time --compile --models "${2:-resnet50,mobilenet_v3_large,yolov8n,yolo11n}" \
        --json "$OUT/compile.json" 2>&1 | tee "$OUT/anchor.txt"
    exit
fi
$P export --out $M 2>&1 | tee "$OUT/anchor.txt"
# int8 QDQ YOLOv8n and ResNet-50 from those files (their convolutions run in
# int8 on dot4I8Packed), timed beside the float ones below.
python3 "$HERE/int8_models.py" --dir $M 2>&1 | tee -a "$OUT/anchor.txt"
$P time --json "$OUT/eager.json" 2>&1 | tee -a "$OUT/anchor.txt"
# One wgnn-bench call per model and precision, so that a model wgnn cannot
# import or run fails alone; each prints one JSON line (or its error line).
for prec in f32 f16; do
    for m in resnet50 mobilenet_v3_large yolov8n yolo11n resnet50_int8 yolov8n_int8; do
        $B models --model $M/$m.onnx --context gpu --precision $prec --batch 1,8,32 \
            --iterations 20 --json 2>&1 | tee -a "$OUT/wgnn.jsonl"
    done
done
$P time --json "$OUT/eager_after.json" 2>&1 | tee -a "$OUT/anchor.txt"
# torch.compile last, as far as the call's time allows (480 s limit).
$P time --compile --deadline $((START + ${COMPILE_UNTIL:-360})) --json "$OUT/compile.json" 2>&1 |
    tee -a "$OUT/anchor.txt"
$P table --wgnn "$OUT/wgnn.jsonl" --anchors "$OUT"/eager.json "$OUT"/eager_after.json \
    "$OUT"/compile.json 2>&1 | tee "$OUT/table.md"
date -u | tee -a "$OUT/env.txt"
