#!/usr/bin/env python3
"""Tiny Ultralytics segment, pose and obb models with seeded random weights,
and what Ultralytics' own post-processing makes of them on a committed
input. Run from anywhere (offline: no weights or fonts are fetched):

    python3 tests/data/detect/ultralytics_tasks/make_models.py

Each model is built from Ultralytics' architecture file (yolov8n-seg.yaml,
yolov8n-pose.yaml, yolov8n-obb.yaml) at a smaller width (every layer 8 or 16
channels) so that the files stay small, seeded (`torch.manual_seed`), its
class biases raised so that some boxes pass, and exported by Ultralytics'
ONNX exporter at imgsz 64, opset 17, no NMS. `input.rgba` is a 64 x 64 RGBA
frame (seeded shapes on a gradient). The expected objects come from running
the ONNX file in onnxruntime on that frame (RGB / 255, no resize: the frame is
the input size) and Ultralytics' `non_max_suppression` (rotated for obb),
`process_mask` (upsample=True) and `regularize_rboxes` on the outputs.
"""
import json
import os
import tempfile

os.environ.setdefault("YOLO_OFFLINE", "1")

import numpy as np
import onnxruntime as ort
import torch
import ultralytics
import yaml
from ultralytics import YOLO
from ultralytics.utils import ops
from ultralytics.utils.nms import non_max_suppression

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = 64
IOU = 0.45
CFG = os.path.join(os.path.dirname(ultralytics.__file__), "cfg", "models", "v8")


def frame():
    rng = np.random.default_rng(41)
    y, x = np.mgrid[0:SIZE, 0:SIZE]
    img = np.stack([x * 4, y * 4, (x + y) * 2], axis=-1).astype(np.float32)
    for _ in range(6):
        cx, cy, r = rng.uniform(8, 56), rng.uniform(8, 56), rng.uniform(5, 14)
        colour = rng.uniform(0, 255, 3)
        img[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = colour
    rgb = np.clip(img, 0, 255).astype(np.uint8)
    rgba = np.concatenate([rgb, np.full((SIZE, SIZE, 1), 255, np.uint8)], axis=-1)
    return rgba


def build(task, yaml_name, seed, cls_bias):
    with open(os.path.join(CFG, yaml_name)) as f:
        cfg = yaml.safe_load(f)
    cfg["scales"] = {"n": [0.33, 0.0625, 256]}
    if task != "pose":
        cfg["nc"] = 3
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"tiny-{yaml_name}")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        model = YOLO(path, task=task)
        head = model.model.model[-1]
        with torch.no_grad():
            # Fresh batch norms pass activations that fade layer by layer:
            # random statistics keep them alive, as trained ones do.
            for m in model.model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.weight.uniform_(0.8, 1.6)
                    m.bias.normal_(0.0, 0.5)
                    m.running_var.uniform_(0.5, 1.5)
            for seq in head.cv3:
                seq[-1].weight.mul_(4.0)
                seq[-1].bias.fill_(cls_bias)
            # Box distances favour the first bins of the DFL: boxes a few
            # strides wide rather than all as wide as the image.
            for seq in head.cv2:
                seq[-1].bias.copy_(-0.6 * torch.arange(head.reg_max).float().repeat(4))
        model.model.names = {i: n for i, n in enumerate(names(task))}
        out = model.export(format="onnx", imgsz=SIZE, opset=17, simplify=False, dynamic=False)
        target = os.path.join(HERE, f"yolov8-{task}.onnx")
        os.replace(out, target)
    return target


def names(task):
    return ["person"] if task == "pose" else ["car", "boat", "plane"]


def run(path, rgba):
    x = rgba[None, :, :, :3].transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return [torch.from_numpy(o) for o in sess.run(None, {sess.get_inputs()[0].name: x})]


def rle(mask):
    """COCO uncompressed RLE, column-major, starting with a run of zeros."""
    flat = mask.T.reshape(-1).astype(np.uint8)
    counts, current, run_len = [], 0, 0
    for v in flat:
        if v != current:
            counts.append(run_len)
            current, run_len = v, 0
        run_len += 1
    counts.append(run_len)
    return counts


def threshold(scores):
    """The middle of the widest gap between the 8th and 24th best scores, so
    that no score sits near it."""
    s = np.sort(scores)[::-1][7:25]
    k = int(np.argmax(s[:-1] - s[1:]))
    return float(np.float32((s[k] + s[k + 1]) / 2)), float(s[k] - s[k + 1])


def objects(task, outs, nc, conf):
    rotated = task == "obb"
    det = non_max_suppression(outs[0], conf, IOU, nc=nc, rotated=rotated, max_det=300)[0]
    found = []
    if task == "segment":
        masks = ops.process_mask(outs[1][0], det[:, 6:], det[:, :4], (SIZE, SIZE), upsample=True)
    for k, d in enumerate(det):
        o = {"label": names(task)[int(d[5])], "label_id": int(d[5]), "confidence": float(d[4])}
        if rotated:
            xywhr = ops.regularize_rboxes(torch.cat([d[:4], d[-1:]])[None])[0]
            o["obb"] = [float(v) for v in xywhr]
        else:
            o["box"] = [float(v) for v in d[:4]]
        if task == "segment":
            m = masks[k].numpy()
            o["mask_full"] = rle(m)
            o["mask_area"] = int(m.sum())
        if task == "pose":
            o["keypoints"] = d[6:].view(-1, 3).tolist()
        found.append(o)
    return found


def main():
    rgba = frame()
    rgba.tofile(os.path.join(HERE, "input.rgba"))
    doc = {"ultralytics": ultralytics.__version__, "torch": torch.__version__.split("+")[0],
           "onnxruntime": ort.__version__, "size": SIZE,
           "iou_threshold": IOU, "models": []}
    for task, yaml_name, seed, bias in [("segment", "yolov8-seg.yaml", 1, 0.0),
                                        ("pose", "yolov8-pose.yaml", 2, 0.0),
                                        ("obb", "yolov8-obb.yaml", 3, 0.0)]:
        path = build(task, yaml_name, seed, bias)
        outs = run(path, rgba)
        nc = len(names(task))
        scores = outs[0][0, 4:4 + nc].max(0).values.numpy()
        conf, gap = threshold(scores)
        found = objects(task, outs, nc, conf)
        print(task, [tuple(o.shape) for o in outs], "objects", len(found),
              "candidates", int((scores >= conf).sum()), "threshold", conf, "gap", gap)
        doc["models"].append({"task": task, "model": os.path.basename(path), "threshold": conf,
                              "labels": names(task), "outputs": [list(o.shape) for o in outs],
                              "objects": found})
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
