#!/bin/sh
# Detection, then a classifier on every detected face (cropped and resized on the GPU), with the
# results of each frame appended as one JSON line to faces.jsonl. The classifier here is the
# test model that names each region's dominant colour; any classifier with a model-proc goes there.
gst-launch-1.0 filesrc location=assets/samples/astronaut.mp4 ! decodebin ! wgnnupload ! \
    wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite ! \
    wgnnclassify model=tests/data/classify/mean_color.onnx inference-region=roi-list \
        results-location=faces.jsonl ! fakesink
