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
)
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
mkdir -p .gst /tmp/amd64/partial
apt-get "${o[@]}" update -qq
rm -f .gst/*.deb
(cd .gst && apt-get "${o[@]}" download "${PACKAGES[@]}")
du -ch .gst/*.deb | tail -1
