#!/usr/bin/env python3
"""Ultralytics exports with seeded random weights, and the objects
Ultralytics' own post-processing finds in them. Run from anywhere (offline):

    python3 tests/data/detect/ultralytics/make_models.py

Each model is built from an Ultralytics architecture file (yolov8n.yaml,
yolo11n.yaml) with its width scaled to 1/16 (the `n` depth, channels
rounded up to 8) and 3 classes, so that a file stays near 1 MB; its names
hold both quote kinds, which the metadata writes as a Python dict literal.
Random weights score every box about equally and make every box span the
image: the class convolutions' biases are shifted so that the tenth best box
scores 0.3, and the box convolutions' so that boxes are a few
strides wide. It is
exported by Ultralytics (opset 17, imgsz 64 x 96: height x width) into
`<case>/model.onnx` with the metadata Ultralytics writes, and
`<case>/test_data_set_0/` holds the letterboxed frame as input and
onnxruntime's output.

`frame.png` (192 x 128) is the bundled astronaut picture reduced to
96 x 64 and enlarged 2x by repeating pixels, so that every bilinear
resampler (OpenCV's in Ultralytics' LetterBox, wgnn's tensorize shader)
halves it exactly. `expected.json` lists per case the objects Ultralytics
finds on it: LetterBox to 64 x 96, onnxruntime,
`ultralytics.utils.nms.non_max_suppression` (conf 0.25, IoU 0.45: its
predict defaults), `scale_boxes` back to the frame. A case is kept only
where these objects do not change when the thresholds move by 0.005 or the
outputs by 1e-4, so that float rounding on another runtime cannot flip one.
"""
import json
import os
import shutil

os.environ["YOLO_OFFLINE"] = "1"

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
import ultralytics  # noqa: E402
import yaml  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from ultralytics import YOLO  # noqa: E402
from ultralytics.data.augment import LetterBox  # noqa: E402
from ultralytics.nn.tasks import yaml_model_load  # noqa: E402
from ultralytics.utils import ops  # noqa: E402
from ultralytics.utils.nms import non_max_suppression  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
IMGSZ = (64, 96)  # height, width
NAMES = {0: "person", 1: "it's", 2: 'say "hi"'}
CONF, IOU = 0.25, 0.45

# (case, architecture, export arguments, first seed tried, tenth best score)
CASES = [
    ("yolov8n_detect", "yolov8n", {}, 1, 0.3),
    ("yolo11n_dynamic", "yolo11n", {"dynamic": True}, 1, 0.3),
]


def logits(model, head, image):
    """The class logits of every box, [C, N]."""
    seen = []
    hooks = [b[-1].register_forward_hook(lambda m, i, o: seen.append(o.flatten(2)))
             for b in head.cv3]
    model.model(image)
    for h in hooks:
        h.remove()
    return torch.cat(seen, 2)[0]


def frame():
    bgr = cv2.imread(os.path.join(ROOT, "assets/samples/astronaut.png"))
    small = cv2.resize(bgr, (IMGSZ[1], IMGSZ[0]), interpolation=cv2.INTER_AREA)
    return np.repeat(np.repeat(small, 2, axis=0), 2, axis=1)


def build(arch, seed, score, workdir, calibration):
    cfg = yaml_model_load(f"{arch}.yaml")
    cfg["scales"] = {"n": [cfg["scales"]["n"][0], 0.0625, 1024]}
    cfg["nc"] = len(NAMES)
    for key in ("scale", "yaml_file"):
        cfg.pop(key, None)
    path = os.path.join(workdir, f"{arch}-w16.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    torch.manual_seed(seed)
    model = YOLO(path)
    model.model.names = dict(NAMES)
    head = model.model.model[-1]
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        # PyTorch's default init shrinks activations a few times per layer
        # (to 1e-9 at the head): every box would score the same. He init,
        # then batch norm statistics from the frame itself, keep them near 1.
        for module in model.model.modules():
            if isinstance(module, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(module.weight, generator=gen)
            if isinstance(module, torch.nn.BatchNorm2d):
                module.momentum = None
                module.reset_running_stats()
        model.model.train()
        model.model(calibration)
        model.model.eval()
        for branch in head.cv3:
            conv = branch[-1]
            conv.bias.copy_(0.5 * torch.randn(conv.bias.shape, generator=gen))
        # Random distance logits make every box span the image: favour the
        # first DFL bins (about 2 strides a side) and let the image move them.
        bins = torch.arange(head.reg_max, dtype=torch.float32).repeat(4)
        for branch in head.cv2:
            conv = branch[-1]
            conv.weight.mul_(0.3)
            conv.bias.copy_(-0.4 * bins)
        # Class logits spread by about 1 between boxes, shifted so that the
        # tenth best box scores `score`.
        for branch in head.cv3:
            branch[-1].weight.mul_(1.0 / logits(model, head, calibration).std())
        best = logits(model, head, calibration).max(0).values.sort(descending=True).values
        for branch in head.cv3:
            branch[-1].bias.add_(torch.logit(torch.tensor(score)) - best[9])
    return model


def objects(out, frame_hw, conf=CONF, iou=IOU):
    det = non_max_suppression(torch.from_numpy(out), conf_thres=conf, iou_thres=iou,
                              max_det=300)[0]
    boxes = ops.scale_boxes(IMGSZ, det[:, :4].clone(), frame_hw)
    found = []
    for (x0, y0, x1, y1), score, cls in zip(boxes.tolist(), det[:, 4].tolist(),
                                            det[:, 5].tolist()):
        found.append({"label": NAMES[int(cls)], "label_id": int(cls), "confidence": score,
                      "x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0})
    return found


def stable(out, frame_hw, want):
    def same(objs):
        return len(objs) == len(want) and all(
            o["label_id"] == w["label_id"]
            and max(abs(o[k] - w[k]) for k in "xywh") < 0.5
            for o, w in zip(objs, want))
    rng = np.random.default_rng(0)
    for conf, iou in [(CONF - 0.005, IOU), (CONF + 0.005, IOU), (CONF, IOU - 0.005),
                      (CONF, IOU + 0.005)]:
        if not same(objects(out, frame_hw, conf, iou)):
            return False
    for _ in range(4):
        noisy = out * (1 + rng.uniform(-1e-4, 1e-4, out.shape)).astype(np.float32)
        if not same(objects(noisy, frame_hw)):
            return False
    return True


def export(name, arch, kwargs, seed, score, workdir, tensor):
    """Exports the case into its folder with onnxruntime's output beside."""
    model = build(arch, seed, score, workdir, torch.from_numpy(tensor))
    exported = model.export(format="onnx", imgsz=IMGSZ, opset=17, simplify=False, **kwargs)
    case = os.path.join(HERE, name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(case, "model.onnx")
    os.replace(exported, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {session.get_inputs()[0].name: tensor})
    for kind, value in [("input_0", tensor), ("output_0", out)]:
        proto = numpy_helper.from_array(value, kind)
        with open(os.path.join(data, f"{kind}.pb"), "wb") as f:
            f.write(proto.SerializeToString())
    return path, out


def main():
    image = frame()
    cv2.imwrite(os.path.join(HERE, "frame.png"), image)
    boxed = LetterBox(IMGSZ, auto=False, stride=32)(image=image)
    tensor = np.ascontiguousarray(boxed[..., ::-1].transpose(2, 0, 1))[None]
    tensor = (tensor / 255.0).astype(np.float32)
    cases = []
    workdir = os.path.join(HERE, ".build")
    os.makedirs(workdir, exist_ok=True)
    for name, arch, kwargs, first_seed, score in CASES:
        # The first seed from `first_seed` whose objects are stable.
        for seed in range(first_seed, first_seed + 20):
            path, out = export(name, arch, kwargs, seed, score, workdir, tensor)
            found = objects(out, image.shape[:2])
            if 2 <= len(found) <= 40 and stable(out, image.shape[:2], found):
                break
        else:
            raise SystemExit(f"{name}: no seed gives stable objects")
        meta = {p.key: p.value for p in onnx.load(path).metadata_props}
        cases.append({"model": f"{name}/model.onnx", "task": meta["task"],
                      "dynamic": bool(kwargs.get("dynamic")), "seed": seed,
                      "objects": found})
        print(f"{name}: {len(found)} objects, {os.path.getsize(path)} bytes")
    doc = {"frame": "frame.png", "width": int(image.shape[1]), "height": int(image.shape[0]),
           "ultralytics": ultralytics.__version__, "torch": torch.__version__,
           "onnxruntime": ort.__version__, "cases": cases}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
