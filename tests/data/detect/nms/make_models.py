#!/usr/bin/env python3
"""An Ultralytics `nms=True` export with seeded random weights, onnxruntime's
output on the committed frame, and the objects Ultralytics itself finds with
it. Run from anywhere (offline):

    python3 tests/data/detect/nms/make_models.py

The model is `../ultralytics/make_models.py`'s YOLOv8n (1/16 width, 3
classes, the class bias shifted so that the tenth best box scores 0.3),
exported with `nms=True` (opset 17, imgsz 64 x 96): its graph ends in
NonZero, GatherND, NonMaxSuppression (IoU 0.7, conf 0.25, Ultralytics'
export defaults), Pad and ScatterND, and writes [1, 300, 6] rows of
(x0, y0, x1, y1, score, class) with zero rows after the last object.

- `yolov8n_nms/model.onnx` and `yolov8n_nms/test_data_set_0/`: the
  letterboxed `../ultralytics/frame.png` as `input_0.pb`, onnxruntime's
  output as `output_0.pb`;
- `expected.json`: the objects `YOLO(model.onnx).predict` finds on the frame
  (conf 0.25), in the frame's pixels.
"""
import json
import os
import shutil
import sys

os.environ["YOLO_OFFLINE"] = "1"

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
import ultralytics  # noqa: E402
from ultralytics import YOLO  # noqa: E402
from ultralytics.data.augment import LetterBox  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../ultralytics"))
import make_models as ultralytics_cases  # noqa: E402
from make_models import IMGSZ, NAMES  # noqa: E402

# Its export writes <HERE>/<case>/: here.
ultralytics_cases.HERE = HERE

CASE = "yolov8n_nms"
FRAME = "../ultralytics/frame.png"
SEED, SCORE = 1, 0.3


def main():
    image = cv2.imread(os.path.join(HERE, FRAME))
    boxed = LetterBox(IMGSZ, auto=False, stride=32)(image=image)
    tensor = np.ascontiguousarray(boxed[..., ::-1].transpose(2, 0, 1))[None]
    tensor = (tensor / 255.0).astype(np.float32)
    workdir = os.path.join(HERE, ".build")
    os.makedirs(workdir, exist_ok=True)
    path, out = ultralytics_cases.export(CASE, "yolov8n", {"nms": True}, SEED, SCORE, workdir,
                                         tensor)
    result = YOLO(path, task="detect").predict(image, imgsz=IMGSZ, conf=0.25, verbose=False)[0]
    found = []
    for (x0, y0, x1, y1), score, cls in zip(result.boxes.xyxy.tolist(),
                                            result.boxes.conf.tolist(),
                                            result.boxes.cls.tolist()):
        found.append({"label": NAMES[int(cls)], "label_id": int(cls), "confidence": score,
                      "x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0})
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    rows = int((out[0, :, 4] > 0).sum())
    print(f"{CASE}: {rows} rows, {len(found)} objects, {os.path.getsize(path)} bytes; ops {ops}")
    doc = {"frame": FRAME, "width": int(image.shape[1]), "height": int(image.shape[0]),
           "ultralytics": ultralytics.__version__, "torch": torch.__version__,
           "onnxruntime": ort.__version__,
           "cases": [{"model": f"{CASE}/model.onnx", "seed": SEED, "objects": found}]}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
