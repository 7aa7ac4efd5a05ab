#!/bin/sh
# Super-resolution of the sample video, side by side: bicubic on the left,
# ESRGAN-slim x2 on the right, written to an MP4. The input is scaled down to
# 160x90 first, the kind of low-resolution source super-resolution is for.
gst-launch-1.0 -e filesrc location=assets/samples/astronaut.mp4 ! decodebin ! videoconvert ! \
    videoscale ! video/x-raw,width=160,height=90 ! \
    wgnnupload ! wgnnsuperres scale=2 compare=true ! wgnndownload ! \
    videoconvert ! video/x-raw,format=I420 ! x264enc tune=zerolatency ! video/x-h264,profile=high ! mp4mux ! filesink location=superres-compare.mp4
