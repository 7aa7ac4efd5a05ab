#!/usr/bin/env python3
"""Makes the face detection references in this folder (see README.md).

Runs MediaPipe 0.10.14's own face detection solution,
`mp.solutions.face_detection.FaceDetection(model_selection=0,
min_detection_confidence=0.5)` (the short-range model, the graph in
graph.pbtxt), on:

- assets/samples/astronaut.png (512x512, one face);
- frames of assets/samples/astronaut.mp4 decoded by GStreamer
  (decodebin ! videoconvert ! RGB), kept here as PNG so that the Rust tests
  read exactly the pixels MediaPipe saw;
- astronaut_100.png: the photo resized to 100x100 (pillow, box filter),
  smaller than the model's 128x128 input;
- an 8K frame (7680x4320): the photo's top 512x288 band scaled 15 times,
  nearest neighbour (not stored: a test rebuilds it from astronaut.png);
- no_face.png: the bottom strip of astronaut.png (the suit, below the face),
  made here; MediaPipe must find no face on it.

Writes references.json: per image its size and every face MediaPipe found,
in image pixels: score, box (x, y, w, h) and the 6 keypoints (right eye, left
eye, nose tip, mouth centre, right ear tragion, left ear tragion: MediaPipe's
order). Also writes graph.pbtxt, the expanded graph MediaPipe runs, from which
assets/models/mediapipe/face_detection_short_range.json takes its options.

Needs mediapipe 0.10.14, numpy, pillow and gst-launch-1.0. Run from anywhere:
    python3 tests/data/detect/faces/make_face_refs.py
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mediapipe as mp
import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
PHOTO = ROOT / "assets/samples/astronaut.png"
VIDEO = ROOT / "assets/samples/astronaut.mp4"
# Spread over the 180-frame clip: the first, the last and four between.
# Where the clip zooms in (frames 125 to 179) MediaPipe's scores fall to
# 0.5-0.7 and a few frames have none; 140 and 179 keep 0.6 or more, so that a
# score within the tests' 0.05 of MediaPipe's cannot fall under the 0.5
# threshold (144, at 0.54, could).
VIDEO_FRAMES = [0, 36, 72, 108, 140, 179]
# Smaller than the model's 128x128 input: the photo resized to 100x100.
SMALL = 100
# An 8K (7680x4320) frame: the photo's top 512x288 band (the face in it)
# scaled 15 times, nearest neighbour, so that a test rebuilds it exactly from
# astronaut.png rather than reading a 100 MB file.
BAND = (0, 0, 512, 288)
BAND_SCALE = 15
# The bottom strip of the photo (the suit, below the face), x, y, w, h:
# MediaPipe finds nothing there even at a 0.05 threshold.
NO_FACE_CROP = (0, 320, 512, 192)


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extract_video_frames() -> list[Path]:
    """Decodes the clip with GStreamer to RGB PNGs and keeps VIDEO_FRAMES."""
    kept = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                "gst-launch-1.0", "-q", "filesrc", f"location={VIDEO}", "!", "decodebin", "!",
                "videoconvert", "!", "video/x-raw,format=RGB", "!", "pngenc", "snapshot=false",
                "!", "multifilesink", f"location={tmp}/f%03d.png",
            ],
            check=True,
        )
        for i in VIDEO_FRAMES:
            src = Path(tmp) / f"f{i:03d}.png"
            dst = HERE / f"astronaut_mp4_f{i:03d}.png"
            # Re-saved by pillow so that the file only holds the pixels.
            Image.open(src).convert("RGB").save(dst, optimize=True)
            kept.append(dst)
    return kept


def make_small() -> Path:
    dst = HERE / f"astronaut_{SMALL}.png"
    img = Image.open(PHOTO).convert("RGB").resize((SMALL, SMALL), Image.Resampling.BOX)
    img.save(dst, optimize=True)
    return dst


def eight_k() -> np.ndarray:
    x, y, w, h = BAND
    band = np.asarray(Image.open(PHOTO).convert("RGB"))[y : y + h, x : x + w]
    return np.ascontiguousarray(band.repeat(BAND_SCALE, axis=0).repeat(BAND_SCALE, axis=1))


def make_no_face() -> Path:
    x, y, w, h = NO_FACE_CROP
    dst = HERE / "no_face.png"
    Image.open(PHOTO).convert("RGB").crop((x, y, x + w, y + h)).save(dst, optimize=True)
    return dst


def detect(detector, path: Path, rgb=None) -> dict:
    if rgb is None:
        rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.uint8)
    h, w = rgb.shape[:2]
    result = detector.process(rgb)
    faces = []
    for d in result.detections or []:
        box = d.location_data.relative_bounding_box
        faces.append(
            {
                "score": float(d.score[0]),
                "box": [box.xmin * w, box.ymin * h, box.width * w, box.height * h],
                "keypoints": [[k.x * w, k.y * h] for k in d.location_data.relative_keypoints],
            }
        )
    return {"image": rel(path), "width": w, "height": h, "faces": faces}


def detect_eight_k(detector) -> dict:
    r = detect(detector, PHOTO, eight_k())
    r["image"] = f"{rel(PHOTO)} band {list(BAND)} x{BAND_SCALE} nearest"
    return r


def to_json(refs: list) -> str:
    """references.json: one image a block, one face a line."""
    blocks = []
    for r in refs:
        faces = ",\n".join("    " + json.dumps(f) for f in r["faces"])
        head = json.dumps({k: r[k] for k in ("image", "width", "height")})[:-1]
        blocks.append(f"  {head}, \"faces\": [\n{faces}\n  ]}}" if faces else f"  {head}, \"faces\": []}}")
    return "{\"images\": [\n" + ",\n".join(blocks) + "\n]}\n"


def write_graph() -> None:
    from mediapipe.python._framework_bindings import validated_graph_config

    wheel = Path(mp.__file__).parent
    graph = validated_graph_config.ValidatedGraphConfig()
    graph.initialize(
        binary_graph_path=str(wheel / "modules/face_detection/face_detection_short_range_cpu.binarypb")
    )
    (HERE / "graph.pbtxt").write_text(
        "# MediaPipe 0.10.14 face_detection_short_range_cpu.binarypb with its subgraphs expanded\n"
        "# (ValidatedGraphConfig.text_config); written by make_face_refs.py\n" + graph.text_config
    )


def main() -> int:
    if mp.__version__ != "0.10.14":
        print(f"mediapipe {mp.__version__}: the references are MediaPipe 0.10.14's", file=sys.stderr)
        return 1
    images = [PHOTO, *extract_video_frames(), make_small(), make_no_face()]
    with mp.solutions.face_detection.FaceDetection(
        model_selection=0, min_detection_confidence=0.5
    ) as detector:
        # The face detection graph has no tracking: each image stands alone.
        refs = []
        for path in images:
            refs.append(detect(detector, path))
        # Last but one: the no-face photo stays last.
        refs.insert(-1, detect_eight_k(detector))
    for r in refs:
        print(f"{r['image']}: {len(r['faces'])} face(s) "
              + " ".join(f"{f['score']:.3f}" for f in r["faces"]))
    if refs[-1]["faces"]:
        print("no_face.png has a face: choose another crop", file=sys.stderr)
        return 1
    if any(len(r["faces"]) != 1 for r in refs[:-1]):
        print("an image meant to show one face has none or more", file=sys.stderr)
        return 1
    (HERE / "references.json").write_text(to_json(refs))
    write_graph()
    print("sha256:")
    for path in [PHOTO, VIDEO, *images[1:], HERE / "references.json", HERE / "graph.pbtxt"]:
        print(f"{sha256(path)}  {rel(path)}")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
