#!/bin/sh
# The same segmentation with device=cpu: the model runs on wgnn's CPU context
# and the frames stay in system memory (no GPU needed), written to an MP4
# (H.264 High 4:2:0). device=auto does this by itself, with a warning, on a
# machine without a hardware GPU (none, or only a software one such as
# llvmpipe, which is slower than the CPU context). Runs headless; to watch it
# instead, end the line with autovideosink after videoconvert (a screen is
# required then).
gst-launch-1.0 -e videotestsrc num-buffers=30 pattern=ball ! video/x-raw,width=160,height=120 ! \
    wgnnsegment device=cpu effect=blur blur-strength=6 ! videoconvert ! video/x-raw,format=I420 ! \
    x264enc tune=zerolatency ! video/x-h264,profile=high ! mp4mux ! filesink location=cpu-fallback.mp4
