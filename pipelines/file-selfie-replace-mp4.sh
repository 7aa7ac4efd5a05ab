#!/bin/sh
# The bundled sample video with the background replaced by a colour, encoded
# to H.264 High profile 4:2:0 (what every player decodes) in an MP4 (x264enc
# from gstreamer1.0-plugins-ugly). One upload and one download per frame: the
# encoder needs system memory.
gst-launch-1.0 -e filesrc location=assets/samples/astronaut.mp4 ! decodebin ! videoconvert ! \
    wgnnupload ! wgnnsegment effect=replace background=#2060c0 softness=0.2 ! wgnndownload ! \
    videoconvert ! video/x-raw,format=I420 ! x264enc tune=zerolatency ! video/x-h264,profile=high ! mp4mux ! filesink location=selfie-replace.mp4
