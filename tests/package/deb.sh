#!/usr/bin/env bash
# The Debian package, built as a user builds it (`cargo deb`) and used from
# its files only: unpacked into a throwaway root (dpkg -x), GStreamer finds
# the plugin in the package's plugin folder, wgnn-selfie runs a job from an
# unrelated folder and reads its model from the package's /usr/share/wgnn,
# and gst-launch-1.0 with the packaged plugin finds the default model beside
# the plugin. The source tree the binaries were built in is still here, so
# every check names the packaged path it expects: a binary that fell back to
# the tree's assets/ fails.
#
# Usage: bash tests/package/deb.sh [--profile dev]
#   The package's own profile (dist) by default, as `cargo deb` builds it;
#   `bash .ci/test` packages the dev build it has just tested instead
#   (--profile dev: the same files in the same places, built with the test
#   profile), which spares CI a second optimised build of everything.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() {
  echo "package: FAILED: $*" >&2
  exit 1
}

# Pinned, so that CI builds the same package every time; --locked builds it
# with the dependency versions cargo-deb was released with.
cargo_deb_version=3.8.0
if ! cargo deb --version 2>/dev/null | grep -qx "cargo-deb $cargo_deb_version"; then
  echo "package: installing cargo-deb $cargo_deb_version"
  cargo install cargo-deb --version "$cargo_deb_version" --locked --quiet
fi

deb_flags=(--locked)
if [ "${1:-}" = "--profile" ] && [ -n "${2:-}" ]; then
  # Another profile's binaries keep their line tables unless told to strip.
  deb_flags+=(--profile "$2" --strip --fast)
elif [ $# -gt 0 ]; then
  fail "usage: bash tests/package/deb.sh [--profile NAME]"
fi
echo "package: cargo deb ${deb_flags[*]}"
cargo deb "${deb_flags[@]}"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb="target/debian/wgnn_${version}_${arch}.deb"
[ -f "$deb" ] || fail "$deb was not built (target/debian holds: $(ls target/debian))"
echo "package: $deb, $(du -h "$deb" | cut -f1)"

# The control file: runtime packages only, never the -dev ones.
depends=$(dpkg-deb -f "$deb" Depends)
recommends=$(dpkg-deb -f "$deb" Recommends)
echo "package: Depends: $depends"
for p in libgstreamer1.0-0 libgstreamer-plugins-base1.0-0 libvulkan1 gstreamer1.0-plugins-base; do
  grep -q "\b$p\b" <<<"$depends" || fail "Depends lacks $p"
done
for p in gstreamer1.0-plugins-ugly gstreamer1.0-libav "mesa-vulkan-drivers | vulkan-icd"; do
  grep -qF "$p" <<<"$recommends" || fail "Recommends lacks $p"
done
if grep -q -- "-dev\b" <<<"$depends $recommends"; then
  fail "a -dev package among the dependencies: $depends / $recommends"
fi

# The files, where Debian's tools look for them.
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in \
  "./usr/lib/$triplet/gstreamer-1.0/libgstwgnn.so" \
  ./usr/bin/wgnn-selfie ./usr/bin/wgnn-superres ./usr/bin/wgnn-bench \
  ./usr/share/wgnn/models/selfie/selfie_segmentation.tflite \
  ./usr/share/wgnn/models/selfie/LICENSE ./usr/share/wgnn/models/selfie/PROVENANCE \
  ./usr/share/wgnn/models/mediapipe/face_detection_short_range.json \
  ./usr/share/wgnn/models/mediapipe/LICENSE \
  ./usr/share/wgnn/models/esrgan-slim/x2/model.json ./usr/share/wgnn/models/esrgan-slim/LICENSE \
  ./usr/share/wgnn/samples/astronaut.mp4 ./usr/share/wgnn/samples/PROVENANCE \
  ./usr/share/wgnn/fonts/LICENSE \
  ./usr/share/doc/wgnn/copyright \
  ./usr/share/man/man1/wgnn-selfie.1.gz ./usr/share/man/man1/wgnn-superres.1.gz \
  ./usr/share/man/man1/wgnn-bench.1.gz \
  ./usr/share/bash-completion/completions/wgnn-selfie; do
  grep -qxF "$f" <<<"$contents" || fail "$f is not in the package"
done

root=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$root" "$work"' EXIT
dpkg -x "$deb" "$root"
plugins="$root/usr/lib/$triplet/gstreamer-1.0"
# Nothing from the build tree or the caller's environment.
unset WGNN_ASSETS_DIR GST_PLUGIN_PATH
export GST_REGISTRY="$work/registry.bin" GST_REGISTRY_FORK=no GST_DEBUG_NO_COLOR=1

echo "package: gst-inspect-1.0 wgnn"
out=$(GST_PLUGIN_SYSTEM_PATH="$plugins" gst-inspect-1.0 wgnn 2>&1) || fail "gst-inspect-1.0 wgnn: $out"
grep -qF "$plugins/libgstwgnn.so" <<<"$out" || fail "gst-inspect-1.0 did not load the packaged plugin: $out"
# Exactly the elements of the table in src/gst/elements.rs (its rows'
# `name: "..."` lines), which tests/gst and the inspect test check as well.
table=$(sed -n 's/^ *name: "\(wgnn[a-z0-9]*\)",$/\1/p' src/gst/elements.rs | sort)
[ -n "$table" ] || fail "no element names read from src/gst/elements.rs"
listed=$(sed -n 's/^ *\(wgnn[a-z0-9]*\): .*/\1/p' <<<"$out" | sort)
[ "$listed" = "$table" ] \
  || fail "gst-inspect-1.0 wgnn lists $(echo $listed), the table $(echo $table): $out"

echo "package: wgnn-selfie --test-pattern --frames 10 -o x.mp4 (from $work)"
out=$(cd "$work" && "$root/usr/bin/wgnn-selfie" --test-pattern --frames 10 -o x.mp4 2>&1) \
  || fail "wgnn-selfie: $out"
grep -qF "model $root/usr/share/wgnn/models/selfie/selfie_segmentation.tflite" <<<"$out" \
  || fail "wgnn-selfie did not read the packaged model: $out"
[ -s "$work/x.mp4" ] || fail "wgnn-selfie wrote no x.mp4: $out"
grep -q "10 frames in" <<<"$out" || fail "wgnn-selfie did not run 10 frames: $out"
mp4=$(gst-launch-1.0 -q filesrc location="$work/x.mp4" ! decodebin ! fakesink 2>&1) \
  || fail "x.mp4 does not decode: $mp4"

echo "package: gst-launch-1.0 ... wgnnsegment (default model) with the packaged plugin"
out=$(GST_PLUGIN_SYSTEM_PATH="$plugins:/usr/lib/$triplet/gstreamer-1.0" GST_DEBUG=wgnnsegment:4 \
  gst-launch-1.0 -q videotestsrc num-buffers=3 ! video/x-raw,width=64,height=48 ! \
  wgnnsegment device=cpu ! fakesink 2>&1) || fail "gst-launch-1.0: $out"
grep -qF "model $root/usr/share/wgnn/models/selfie/selfie_segmentation.tflite" <<<"$out" \
  || fail "the packaged plugin did not read the packaged model: $out"

echo "package: man wgnn-selfie"
out=$(man --warnings -l "$root/usr/share/man/man1/wgnn-selfie.1.gz" 2>&1) || fail "man: $out"
grep -q "EXIT STATUS" <<<"$out" || fail "the man page has no EXIT STATUS: $out"
echo "package: ok"
