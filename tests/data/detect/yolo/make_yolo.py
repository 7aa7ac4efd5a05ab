#!/usr/bin/env python3
"""Synthetic YOLO models whose outputs are known constants, and what a
detector must make of them, decoded independently here with NumPy. Run from
anywhere:

    python3 tests/data/detect/yolo/make_yolo.py

Each model takes a [1, 3, 64, 96] image (NCHW, 96 wide, 64 high) and outputs
`Constant + 0 * ReduceMean(image)` (the mean reshaped to [1, 1, 1]): the output does not depend on the frame,
so the expected detections are fixed. `yolov5.onnx` outputs [1, N, 5 + C]
rows (cx, cy, w, h in input pixels, objectness, C class scores);
`yolov8.onnx` outputs [1, 4 + C, N] columns (cx, cy, w, h as 0..1 of the
input, C class scores). C = 3. Among background boxes whose scores stay
under the threshold, a handful of objects: two same-class boxes that
overlap (one must go), a box of another class on the same spot (kept), a
box running off the input's edge, a tiny one in a corner and one inside the
strip a wide frame's letterbox leaves empty.

`expected.json` lists, for each model, resize (letterbox, stretch) and frame
size, the detections in frame pixels: decoded, thresholded (score >= 0.25),
class-aware greedy NMS (IoU > 0.45 suppresses), at most `max_detections`,
mapped back through the resize as wgnn's tensorize shader fits frames,
clamped to the frame, empty boxes dropped.
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
IN_W, IN_H = 96, 64
CLASSES = 3
THRESHOLD = 0.25
IOU = 0.45
LABELS = ["cat", "dog", "bird"]

# (cx, cy, w, h) in input pixels, class, score.
OBJECTS = [
    ((30, 30, 20, 20), 0, 0.9),
    ((32, 31, 20, 20), 0, 0.8),  # IoU ~0.8 with the first: suppressed
    ((32, 31, 20, 20), 1, 0.7),  # another class: kept
    ((70, 20, 16, 24), 2, 0.6),
    ((72, 40, 30, 20), 2, 0.5),  # touches the one above a little: kept
    ((90, 60, 20, 20), 1, 0.55),  # runs off the input
    ((5, 5, 4, 4), 0, 0.3),
    ((48, 2, 10, 3), 1, 0.4),  # inside the top border of a wide frame's letterbox
]


def layout_values(rng, n, v8):
    """The raw output values and the objects' indices."""
    slots = rng.choice(n, len(OBJECTS), replace=False)
    boxes = np.stack([
        rng.uniform(0, IN_W, n), rng.uniform(0, IN_H, n),
        rng.uniform(2, 30, n), rng.uniform(2, 30, n)], axis=1).astype(np.float32)
    obj = rng.uniform(0.0, 0.2, n).astype(np.float32)
    cls = rng.uniform(0.0, 1.0, (n, CLASSES)).astype(np.float32)
    if v8:
        cls = rng.uniform(0.0, 0.2, (n, CLASSES)).astype(np.float32)
    for slot, (box, c, score) in zip(slots, OBJECTS):
        boxes[slot] = box
        if v8:
            cls[slot] = rng.uniform(0.0, 0.2, CLASSES)
            cls[slot, c] = score
        else:
            obj[slot] = rng.uniform(0.9, 1.0)
            cls[slot] = rng.uniform(0.0, 0.2, CLASSES)
            cls[slot, c] = np.float32(score) / obj[slot]
    if v8:
        scale = np.array([IN_W, IN_H, IN_W, IN_H], np.float32)
        values = np.concatenate([boxes / scale, cls], axis=1).T[None]  # [1, 4 + C, N]
    else:
        values = np.concatenate([boxes, obj[:, None], cls], axis=1)[None]  # [1, N, 5 + C]
    return values.astype(np.float32)


def model(values, name):
    const = numpy_helper.from_array(values, "table")
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["mean"], keepdims=1),
        helper.make_node("Constant", [], ["zero"],
                         value=numpy_helper.from_array(np.zeros((), np.float32), "zero")),
        helper.make_node("Constant", [], ["shape"],
                         value=numpy_helper.from_array(np.ones(3, np.int64), "shape")),
        helper.make_node("Reshape", ["mean", "shape"], ["mean3"]),
        helper.make_node("Mul", ["mean3", "zero"], ["nothing"]),
        helper.make_node("Add", ["table", "nothing"], ["output0"]),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, IN_H, IN_W])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(values.shape))],
        [const])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m)
    return m


def decode(values, v8):
    """Candidates (index, class, score, x0, y0, x1, y1 in input pixels)."""
    if v8:
        cols = values[0].T  # [N, 4 + C]
        boxes = cols[:, :4] * np.array([IN_W, IN_H, IN_W, IN_H], np.float32)
        cls = cols[:, 4:]
        best = cls.argmax(axis=1)
        score = cls[np.arange(len(cls)), best]
    else:
        rows = values[0]
        boxes = rows[:, :4]
        cls = rows[:, 5:]
        best = cls.argmax(axis=1)
        score = (rows[:, 4] * cls[np.arange(len(cls)), best]).astype(np.float32)
    out = []
    for i in np.nonzero(score >= THRESHOLD)[0]:
        cx, cy, w, h = (float(v) for v in boxes[i])
        out.append((int(i), int(best[i]), float(score[i]),
                    cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    return out


def iou(a, b):
    ix = max(0.0, min(a[5], b[5]) - max(a[3], b[3]))
    iy = max(0.0, min(a[6], b[6]) - max(a[4], b[4]))
    inter = ix * iy
    union = (a[5] - a[3]) * (a[6] - a[4]) + (b[5] - b[3]) * (b[6] - b[4]) - inter
    return inter / union if union > 0 else 0.0


def nms(cands, max_det):
    kept = []
    for c in sorted(cands, key=lambda c: (-c[2], c[0])):
        if len(kept) >= max_det:
            break
        if all(k[1] != c[1] or iou(k, c) <= IOU for k in kept):
            kept.append(c)
    return kept


def to_frame(resize, fw, fh):
    """Input pixels -> frame pixels, the inverse of tensorize.wgsl's fit."""
    if resize == "stretch":
        return lambda x, y: (x * fw / IN_W, y * fh / IN_H)
    s = max(fw / IN_W, fh / IN_H)
    pad_x, pad_y = (IN_W - fw / s) / 2, (IN_H - fh / s) / 2
    return lambda x, y: ((x - pad_x) * s, (y - pad_y) * s)


def detections(cands, resize, fw, fh, max_det):
    f = to_frame(resize, fw, fh)
    out = []
    for c in nms(cands, max_det):
        x0, y0 = f(c[3], c[4])
        x1, y1 = f(c[5], c[6])
        x0, x1 = min(max(x0, 0.0), fw), min(max(x1, 0.0), fw)
        y0, y1 = min(max(y0, 0.0), fh), min(max(y1, 0.0), fh)
        if x1 - x0 <= 0 or y1 - y0 <= 0:
            continue
        out.append({"label": LABELS[c[1]], "label_id": c[1], "confidence": c[2],
                    "x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0})
    return out


def main():
    rng = np.random.default_rng(16)
    cases = []
    for name, v8, n, normalized in [("yolov5", False, 60, False), ("yolov8", True, 83, True)]:
        values = layout_values(rng, n, v8)
        path = os.path.join(HERE, f"{name}.onnx")
        onnx.save(model(values, name), path)
        # The model outputs the table whatever the image.
        image = rng.uniform(0, 1, (1, 3, IN_H, IN_W)).astype(np.float32)
        (got,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
            None, {"images": image})
        assert np.array_equal(got, values)
        cands = decode(values, v8)
        for resize in ["letterbox", "stretch"]:
            for fw, fh in [(160, 90), (90, 160), (96, 64)]:
                max_det = 3 if (name, resize, fw) == ("yolov5", "letterbox", 90) else 300
                cases.append({
                    "model": f"{name}.onnx", "layout": name, "normalized": normalized,
                    "resize": resize, "width": fw, "height": fh,
                    "max_detections": max_det,
                    "detections": detections(cands, resize, fw, fh, max_det)})
    doc = {"labels": LABELS, "threshold": THRESHOLD, "iou_threshold": IOU,
           "onnx": onnx.__version__, "onnxruntime": ort.__version__, "cases": cases}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, {len(cases)} cases")


if __name__ == "__main__":
    main()
