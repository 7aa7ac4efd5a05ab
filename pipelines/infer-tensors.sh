#!/bin/sh
# Any model on a stream: wgnninfer runs the selfie model on each frame, passes
# the frame through untouched and attaches the output tensors as a buffer meta
# (WgnnTensorMeta) for downstream code to read or rent on the GPU.
gst-launch-1.0 videotestsrc num-buffers=30 ! video/x-raw,width=160,height=120 ! wgnnupload ! \
    wgnninfer model=assets/models/selfie/selfie_segmentation.tflite ! fakesink
