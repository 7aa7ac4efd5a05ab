#!/usr/bin/env bash
# A/B of two wgnn-bench builds in one device-machine call, interleaved so that
# clock and thermal drift hit both alike: the 3x3 64->64 conv (`ops`), the
# selfie and ESRGAN-slim x2 models (`models`, whole-dispatch GPU ms) and the
# 1080p selfie + blur pipeline (`pipeline`, GPU ms per frame and per stage).
# Used to show that a restructuring kept the speed (issue 14: within 3%).
#
# Prepare here (both builds without GStreamer, as device_run.sh):
#   git worktree add --detach /tmp/old <old commit>
#   (cd /tmp/old && cargo build --release --no-default-features --bin wgnn-bench)
#   cargo build --release --no-default-features --bin wgnn-bench
#   mkdir -p .devbin && strip -o .devbin/wgnn-bench-old <old target>/release/wgnn-bench
#   strip -o .devbin/wgnn-bench-new target/release/wgnn-bench
# Then run with carry [".devbin", ".gl"]:
#   bash benches/anchors/device_ab.sh [rounds]
set -u
OUT=${OUT:-/tmp/wgnn-ab-out}
ROUNDS=${1:-2}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGNN_ASSETS_DIR=$PWD/assets XDG_RUNTIME_DIR=/tmp
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    .devbin/wgnn-bench-new adapters | head -3
} 2>&1 | tee "$OUT/env.txt"
for round in $(seq "$ROUNDS"); do
    for side in old new; do
        B=.devbin/wgnn-bench-$side
        echo "== round $round: $side" | tee -a "$OUT/ab.txt"
        $B ops --iterations 20 --filter "64->64" 2>&1 | tee -a "$OUT/ab.txt"
        $B models --context gpu --filter selfie 2>&1 | tee -a "$OUT/ab.txt"
        $B models --context gpu --filter "esrgan-slim x2" 2>&1 | tee -a "$OUT/ab.txt"
        $B pipeline 2>&1 | tee -a "$OUT/ab.txt"
    done
done
date -u | tee -a "$OUT/env.txt"
