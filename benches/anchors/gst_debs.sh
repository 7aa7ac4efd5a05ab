#!/usr/bin/env bash
# Downloads into .gst/ (git-ignored) the Debian 12 (bookworm) amd64 packages
# that the GStreamer-enabled wgnn-bench (.devbin/wgnn-bench-gst, for
# `wgnn-bench streams`) needs at run time on the device machine, which has no
# GStreamer: the GStreamer core and its base libraries, the plugins the
# streams pipelines use (coreelements: filesrc, capsfilter, fakesink;
# videoconvertscale: videoconvert, videoscale; png: pngdec; imagefreeze),
# and every library those link that is not glibc or libgcc (found with ldd
# on the binary, the four plugins and gst-plugin-scanner; a CUDA Ubuntu image
# has none of glib, orc, libunwind or libdw). device_run.sh unpacks them
# into /tmp/gstroot with dpkg -x, never into /.
# For `streams decode` (H.264 decoded in each stream's pipeline): gst-launch
# (gstreamer1.0-tools), and from plugins-bad only the openh264 and
# videoparsersbad plugins with the two libraries they link, as
# .gst/h264.tar.xz (the whole packages would not fit the 64 MiB a device
# call carries).
#
# Run from anywhere on a Debian 12 machine (apt-get downloads from this
# host's sources; a separate list folder leaves the host's apt state alone):
#   bash benches/anchors/gst_debs.sh
set -eu
cd "$(dirname "$0")/../.."
. /etc/os-release
if [ "${VERSION_CODENAME:-}" != bookworm ]; then
    echo "error: gst_debs.sh needs a Debian 12 (bookworm) host; this is ${PRETTY_NAME:-unknown}" >&2
    exit 2
fi
PACKAGES=(
    libgstreamer1.0-0               # libgstreamer, libgstbase, coreelements, gst-plugin-scanner
    libgstreamer-plugins-base1.0-0  # libgstvideo, libgstallocators
    gstreamer1.0-plugins-base       # videoconvertscale
    gstreamer1.0-plugins-good       # png, imagefreeze
    libglib2.0-0 libffi8 libpcre2-8-0
    liborc-0.4-0 libunwind8 libdw1 libelf1
    zlib1g liblzma5 libbz2-1.0 libpng16-16
    gstreamer1.0-tools              # gst-launch-1.0 (streams decode encodes its clip)
)
# Packages whose few files go into .gst/h264.tar.xz, and those files.
H264_PACKAGES=(gstreamer1.0-plugins-bad libgstreamer-plugins-bad1.0-0 libopenh264-7)
H264_FILES=(
    usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstopenh264.so
    usr/lib/x86_64-linux-gnu/gstreamer-1.0/libgstvideoparsersbad.so
    usr/lib/x86_64-linux-gnu/libgstcodecparsers-1.0.so.0
    usr/lib/x86_64-linux-gnu/libopenh264.so.7
)
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
mkdir -p .gst /tmp/amd64/partial
apt-get "${o[@]}" update -qq
rm -f .gst/*.deb .gst/*.tar.xz
(cd .gst && apt-get "${o[@]}" download "${PACKAGES[@]}")
tmp=$(mktemp -d)
(cd "$tmp" && apt-get "${o[@]}" download "${H264_PACKAGES[@]}" &&
    for f in ./*.deb; do dpkg -x "$f" root; done)
# The libraries are symlinks to versioned files: -h stores what they point at.
tar -C "$tmp/root" -chJf .gst/h264.tar.xz "${H264_FILES[@]}"
rm -rf "$tmp"
du -ch .gst/* | tail -1
