#!/bin/sh
# The same segmentation with device=cpu: the model runs on wgnn's CPU context
# and the frames stay in system memory (no GPU needed). device=auto does this
# by itself, with a warning, on a machine without a hardware GPU (none, or
# only a software one such as llvmpipe, which is slower than the CPU context).
gst-launch-1.0 videotestsrc num-buffers=30 pattern=ball ! video/x-raw,width=160,height=120 ! \
    wgnnsegment device=cpu effect=blur blur-strength=6 ! videoconvert ! autovideosink
