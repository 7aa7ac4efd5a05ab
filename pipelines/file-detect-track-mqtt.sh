#!/bin/sh
# Faces in the sample video, tracked and counted against pipelines/door.json as in
# file-detect-analytics-mp4.sh, each frame's results published as one JSON message to the MQTT
# broker on this machine (Debian: apt install mosquitto; topic wgnn/door, QoS 1; watch them with
# mosquitto_sub -t wgnn/door), the boxes and counts drawn on the GPU, encoded to an H.264 MP4.
gst-launch-1.0 -e filesrc location=assets/samples/astronaut.mp4 ! decodebin ! wgnnupload ! \
    wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite ! \
    wgnntrack tracker=bytetrack ! wgnnanalytics config=pipelines/door.json ! \
    wgnnpublish method=mqtt address=127.0.0.1:1883 topic=wgnn/door qos=1 ! wgnnoverlay ! wgnndownload ! \
    videoconvert ! video/x-raw,format=I420 ! x264enc tune=zerolatency ! video/x-h264,profile=high ! mp4mux ! filesink location=tracked-mqtt.mp4
