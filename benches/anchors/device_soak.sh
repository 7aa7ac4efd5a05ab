#!/usr/bin/env bash
# Issue 18's soak on the device machine: the zero-copy selfie + blur pipeline
# (wgnn-bench soak) for 100 000 1080p frames, a report every 5 000 (RSS,
# wgpu's allocator report, wgnn's live objects, fps), then the verdict: the
# last report against the first one after the warm-up, flat within 1%.
# wgnn-bench exits 1 when it is not flat; this script passes that on.
#
# Prepare here as for device_run.sh (see docs/BENCHMARKS.md, "Soak"):
#   cargo build --release --no-default-features --bin wgnn-bench
#   mkdir -p .devbin && strip -o .devbin/wgnn-bench target/release/wgnn-bench
#   .gl/  the Vulkan loader .debs (/work/.library/device/README.md)
# Then run with carry [".devbin", ".gl"] (it takes about FRAMES / fps
# seconds: at ~400 fps, 100 000 frames are ~4 minutes):
#   bash benches/anchors/device_soak.sh
# FRAMES, EVERY and FORMAT override the defaults.
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
    echo "cpus: $(nproc)"
    $B adapters
} 2>&1 | tee "$OUT/soak_env.txt"
$B soak --frames "${FRAMES:-100000}" --every "${EVERY:-5000}" --format "${FORMAT:-RGBA}" 2>&1 |
    tee "$OUT/soak.txt"
status=${PIPESTATUS[0]}
date -u | tee -a "$OUT/soak_env.txt"
exit "$status"
