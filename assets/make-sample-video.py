#!/usr/bin/env python3
"""Makes assets/samples/astronaut.mp4: a 6 s, 640x360, 30 fps pan and zoom over
assets/samples/astronaut.png (scikit-image's public-domain `astronaut`), encoded
by GStreamer (x264enc, mp4mux). Needs numpy, pillow and gst-launch-1.0."""
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

W, H, FPS, SECONDS = 640, 360, 30, 6
here = Path(__file__).resolve().parent
src = Image.open(here / "samples" / "astronaut.png").convert("RGB")
out = here / "samples" / "astronaut.mp4"

gst = subprocess.Popen(
    [
        "gst-launch-1.0", "-q", "fdsrc", "fd=0", "!",
        "rawvideoparse", "format=rgb", f"width={W}", f"height={H}", f"framerate={FPS}/1", "!",
        "videoconvert", "!", "video/x-raw,format=I420", "!",
        "x264enc", "speed-preset=slow", "bitrate=1200", "key-int-max=30", "!",
        "video/x-h264,profile=high", "!", "mp4mux", "!", "filesink", f"location={out}",
    ],
    stdin=subprocess.PIPE,
)
n = FPS * SECONDS
for i in range(n):
    t = i / (n - 1)
    ease = 0.5 - 0.5 * np.cos(np.pi * t)
    # Crop a 16:9 window that zooms from the whole width to 70% of it while
    # drifting down from the helmet to the face.
    cw = 512 * (1.0 - 0.3 * ease)
    ch = cw * H / W
    cx = 256 + 40 * np.sin(2 * np.pi * t)
    cy = 150 + 80 * ease
    box = (cx - cw / 2, cy - ch / 2, cx + cw / 2, cy + ch / 2)
    frame = src.transform((W, H), Image.Transform.EXTENT, box, Image.Resampling.BILINEAR)
    gst.stdin.write(np.asarray(frame, dtype=np.uint8).tobytes())
gst.stdin.close()
sys.exit(gst.wait())
