#!/bin/sh
# Webcam selfie with the background blurred, shown in a window (needs a display
# and a webcam). The frame is uploaded once; segmentation, blur and display happen on the GPU with no
# readback (wgnnsink presents the texture).
gst-launch-1.0 v4l2src ! videoconvert ! video/x-raw,format=NV12 ! \
    wgnnupload ! wgnnsegment effect=blur blur-strength=14 smoothing=0.6 ! wgnnsink
