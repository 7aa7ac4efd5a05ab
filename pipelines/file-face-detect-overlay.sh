#!/bin/sh
# Face detection drawn on the sample video in a window (needs a display): MediaPipe's face detector (wgnndetect) and
# boxes, labels and keypoints drawn on the GPU (wgnnoverlay); frames are never downloaded, only the
# few hundred bytes of detections are read back.
gst-launch-1.0 filesrc location=assets/samples/astronaut.mp4 ! decodebin ! wgnnupload ! \
    wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite ! \
    wgnnoverlay ! wgnnsink
