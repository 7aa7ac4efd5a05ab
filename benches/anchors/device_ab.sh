#!/usr/bin/env bash
# An A/B of two builds of wgnn-bench (no GStreamer) on the device machine, in
# one call: the speed models (speed_models.py export: YOLOv8n, YOLO11n,
# ResNet-50) in float16 at batch 1, 8 and 32, both builds twice in turn after
# a warm-up; YOLOv8n in float32 and the bundled models once each; then the
# new build's per-kernel list of YOLOv8n. Lines of ab.jsonl follow a
# {"label": ...} line naming the build, model and round.
#
# Prepare here, for each build:
#   cargo build --release --no-default-features --bin wgnn-bench
#   strip -o /tmp/wgnn-bench-<old|new> target/release/wgnn-bench
#   xz -c /tmp/wgnn-bench-<old|new> > .devbin/wgnn-bench-<old|new>.xz
# (.devbin holding only these: the working tree plus carry stays under 64
# MiB), .gl/ and .whl/ as for device_speed.sh. There, carrying [".devbin",
# ".gl", ".whl"]:
#   bash benches/anchors/device_ab.sh
set -u; O=${OUT:-/tmp/wgnn-ab-out}; mkdir -p "$O"; for f in .devbin/*.xz; do xz -dkf $f; chmod +x ${f%.xz}; done
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json WGNN_ASSETS_DIR=$PWD/assets XDG_RUNTIME_DIR=/tmp YOLO_OFFLINE=1 YOLO_VERBOSE=False YOLO_CONFIG_DIR=/tmp/ultralytics PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; } > $O/env.txt 2>&1
python3 benches/anchors/speed_models.py export --models yolov8n,yolo11n,resnet50 --out /tmp/m > $O/export.txt 2>&1
run() { local label=$1; shift; echo "{\"label\":\"$label\"}" >> $O/ab.jsonl; "$@" >> $O/ab.jsonl 2>>$O/err.txt; }
# warm the clock
.devbin/wgnn-bench-new models --model /tmp/m/yolov8n.onnx --context gpu --precision f16 --batch 8 --iterations 50 --json > /dev/null 2>&1
for round in 1 2; do
 for m in yolov8n yolo11n resnet50; do
  for side in old new; do
   run "$side $m r$round" .devbin/wgnn-bench-$side models --model /tmp/m/$m.onnx --context gpu --precision f16 --batch 1,8,32 --iterations 20 --json
  done
 done
done
for side in old new; do
  run "$side yolov8n f32" .devbin/wgnn-bench-$side models --model /tmp/m/yolov8n.onnx --context gpu --precision f32 --batch 1,32 --iterations 20 --json
  for p in f32 f16; do run "$side bundled $p" .devbin/wgnn-bench-$side models --context gpu --precision $p --iterations 20 --json; done
done
.devbin/wgnn-bench-new models --model /tmp/m/yolov8n.onnx --context gpu --precision f16 --batch 1,32 --iterations 10 --top 400 --json >> $O/top.jsonl 2>&1
date -u >> $O/env.txt
