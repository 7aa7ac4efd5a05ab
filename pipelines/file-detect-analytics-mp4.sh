#!/bin/sh
# Faces in the sample video, tracked (ids across frames), counted against pipelines/door.json (a
# line down the middle, a zone over the left half): each frame's counts and events appended to
# analytics.jsonl, each frame's results also published as one JSON line to publish.jsonl
# (method=mqtt address=host:port topic=... sends them to a broker instead), the boxes, the door with
# its counts and the zone with its count drawn on the GPU, encoded to an H.264 MP4.
gst-launch-1.0 -e filesrc location=assets/samples/astronaut.mp4 ! decodebin ! wgnnupload ! \
    wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite ! \
    wgnntrack tracker=bytetrack ! wgnnanalytics config=pipelines/door.json results-location=analytics.jsonl ! \
    wgnnpublish method=file file-location=publish.jsonl ! wgnnoverlay ! wgnndownload ! \
    videoconvert ! video/x-raw,format=I420 ! x264enc tune=zerolatency ! video/x-h264,profile=high ! mp4mux ! filesink location=analytics.mp4
