#!/bin/sh
# Faces detected on every third frame and tracked across all of them (ByteTrack puts each face where
# it is expected on the frames between); each frame's faces, with their ids, appended as one JSON
# line to tracks.jsonl. No frame is downloaded.
gst-launch-1.0 filesrc location=assets/samples/astronaut.mp4 ! decodebin ! wgnnupload ! \
    wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite inference-interval=3 ! \
    wgnntrack tracker=bytetrack results-location=tracks.jsonl ! fakesink
