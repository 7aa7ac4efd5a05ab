#!/usr/bin/env bash
# Regenerates src/models/onnx/proto/onnx.rs from src/models/onnx/proto/onnx.proto
# with the stand-alone generator in tools/onnx-proto (protox + prost-build: no
# protoc needed). Run from the repository root; commit both files together.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
proto="$root/src/models/onnx/proto"
out=$(mktemp -d)
cargo run --quiet --release --manifest-path "$root/tools/onnx-proto/Cargo.toml" -- "$proto" "$out"
cp "$out/onnx.rs" "$proto/onnx.rs"
rm -r "$out"
echo "wrote $proto/onnx.rs"
