#!/bin/sh
# Segmentation then super-resolution then display (needs a display), all on GPU textures: after
# the one upload, no element downloads a byte (check the elements'
# bytes-downloaded properties, or GST_DEBUG=wgnn*:5 for the per-frame lines).
gst-launch-1.0 videotestsrc num-buffers=60 pattern=ball ! video/x-raw,width=96,height=72 ! \
    wgnnupload ! wgnnsegment effect=blur blur-strength=4 ! wgnnsuperres scale=2 ! wgnnsink
