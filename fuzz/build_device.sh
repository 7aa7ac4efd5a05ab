#!/usr/bin/env bash
# Builds the parser fuzz targets for fuzz/run_device.sh: release with debug
# assertions (integer overflow panics), no sanitizer (safe Rust; smaller and
# about twice as fast as ASan), stripped, into .devbin/fuzz/. Prints sizes:
# the device copy carries the working tree and these binaries, 64 MiB in all.
#
#   fuzz/build_device.sh [TARGET...]   (default: tflite tfjs onnx onnx_structured)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tflite tfjs onnx onnx_structured)
for t in "${targets[@]}"; do
    cargo +nightly fuzz build -O --debug-assertions -s none "$t"
done
mkdir -p .devbin/fuzz
for t in "${targets[@]}"; do
    strip -o ".devbin/fuzz/$t" "fuzz/target/x86_64-unknown-linux-gnu/release/$t"
done
ls -l .devbin/fuzz
du -ch .devbin/fuzz/* | tail -n 1
