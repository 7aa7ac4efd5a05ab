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

`make_models.py ssd` makes only the torchvision case (and updates its entry
of `expected.json`): `ssdlite/model.onnx`, torchvision's SSDlite (its
MobileNetV3-Large backbone and its extra blocks at width 1/4, 3 classes of
which 0 is the background, input 64 x 96) with seeded random weights,
exported by torch.onnx (TorchScript exporter, opset 17) from a wrapper that
takes a [1, 3, 64, 96] batch of RGB 0..1 and returns the first image's
`boxes` [N, 4] (x0, y0, x1, y1 in input pixels), `scores` [N] and `labels`
[N] (int64, 1-based). The graph normalises and resizes the image itself
(its transform: Ceil, Resize), then decodes, thresholds per class (NonZero,
TopK, GatherND), runs torchvision's batched NMS (an If on whether any box
is left, NonMaxSuppression) and keeps the best (TopK). All its
convolutions are re-initialised (Kaiming) so that the features are not all
zero, the class convolutions' weights scaled by SSD_CLASS_STD so that a few
boxes score high, and the model's score threshold placed in a gap of the
scores so that float rounding elsewhere cannot move a box across it.
`ssdlite/test_data_set_0/` holds the input (`../ultralytics/frame.png`
halved, which every bilinear resampler does exactly) and onnxruntime's
three outputs.
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


SSD_CASE, SSD_SIZE, SSD_WIDTH, SSD_SEED, SSD_CLASS_STD = "ssdlite", (64, 96), 0.25, 1, 0.5
SSD_NAMES = ["background", "person", "it's"]


def ssd_model(threshold):
    from functools import partial

    from torch import nn
    from torchvision.models.detection import _utils as det_utils
    from torchvision.models.detection import ssdlite
    from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
    from torchvision.models.detection.ssd import SSD
    from torchvision.models.mobilenetv3 import mobilenet_v3_large

    torch.manual_seed(SSD_SEED)
    # torchvision's ssdlite320_mobilenet_v3_large, with the width passed to
    # the extra blocks too (its builder passes it to the backbone only).
    norm = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    backbone = mobilenet_v3_large(weights=None, norm_layer=norm, reduced_tail=True,
                                  width_mult=SSD_WIDTH).features
    stages = [0] + [i for i, b in enumerate(backbone) if getattr(b, "_is_cn", False)]
    backbone = ssdlite.SSDLiteFeatureExtractorMobileNet(backbone, stages[-1], norm,
                                                        width_mult=SSD_WIDTH)
    anchors = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    channels = det_utils.retrieve_out_channels(backbone, SSD_SIZE)
    head = ssdlite.SSDLiteHead(channels, anchors.num_anchors_per_location(), len(SSD_NAMES),
                               norm)
    for m in list(backbone.modules()) + list(head.modules()):
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
    for block in head.classification_head.module_list:
        nn.init.normal_(block[-1].weight, std=SSD_CLASS_STD / block[-1].weight[0].numel() ** 0.5)
    for block in head.regression_head.module_list:
        nn.init.normal_(block[-1].weight, std=0.3 / block[-1].weight[0].numel() ** 0.5)
    model = SSD(backbone, anchors, SSD_SIZE, len(SSD_NAMES), head=head,
                score_thresh=threshold, nms_thresh=0.55, detections_per_img=100,
                topk_candidates=100, image_mean=[0.5] * 3, image_std=[0.5] * 3).eval()

    class FirstImage(nn.Module):
        """A batch in, the first image's detections out (torchvision's
        detectors take a list of images and return a list of dicts)."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            out = self.m(list(x))[0]
            return out["boxes"], out["scores"], out["labels"]

    return FirstImage(model).eval()


def ssd():
    from onnx import numpy_helper

    image = cv2.imread(os.path.join(HERE, FRAME))
    small = image[::2, ::2]  # the frame is made of 2 x 2 blocks
    assert small.shape[:2] == SSD_SIZE
    tensor = np.ascontiguousarray(small[..., ::-1].transpose(2, 0, 1))[None]
    tensor = torch.from_numpy((tensor / 255.0).astype(np.float32))
    with torch.no_grad():
        scores = sorted(ssd_model(0.001)(tensor)[1].tolist(), reverse=True)
    # The threshold: midway in the widest gap between the 8th and 16th
    # best scores after NMS.
    gaps = [(scores[i] - scores[i + 1], i) for i in range(7, 15)]
    _, i = max(gaps)
    threshold = (scores[i] + scores[i + 1]) / 2
    model = ssd_model(threshold)
    case = os.path.join(HERE, SSD_CASE)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(case, "model.onnx")
    names = ["boxes", "scores", "labels"]
    torch.onnx.export(model, (tensor,), path, opset_version=17, input_names=["images"],
                      output_names=names, dynamo=False)
    outputs = ort.InferenceSession(path).run(None, {"images": tensor.numpy()})
    with torch.no_grad():
        torch_out = model(tensor)
    for o, t in zip(outputs, torch_out):
        assert o.shape == tuple(t.shape) and np.allclose(o, t.numpy(), atol=1e-4), (o, t)
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(tensor.numpy(), "images").SerializeToString())
    for k, (name, o) in enumerate(zip(names, outputs)):
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(o, name).SerializeToString())
    gap = min(abs(s - threshold) for s in scores)
    # In the frame's pixels: the frame is the input enlarged 2x.
    found = [{"label": SSD_NAMES[int(c)], "label_id": int(c), "confidence": float(s),
              "x": 2 * float(b[0]), "y": 2 * float(b[1]), "w": 2 * float(b[2] - b[0]),
              "h": 2 * float(b[3] - b[1])} for b, s, c in zip(*outputs)]
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(f"{SSD_CASE}: {len(found)} objects, threshold {threshold:.4f} (nearest score "
          f"{gap:.4f} away), {os.path.getsize(path)} bytes; ops {ops}")
    with open(os.path.join(HERE, "expected.json")) as f:
        doc = json.load(f)
    doc["torchvision"] = torchvision_version()
    doc["cases"] = [c for c in doc["cases"] if c["model"] != f"{SSD_CASE}/model.onnx"]
    doc["cases"].append({"model": f"{SSD_CASE}/model.onnx", "seed": SSD_SEED,
                         "threshold": threshold, "labels": SSD_NAMES, "objects": found})
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def torchvision_version():
    import torchvision
    return torchvision.__version__


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
    # The torchvision case (`ssd`) is kept, after this one.
    path = os.path.join(HERE, "expected.json")
    kept = json.load(open(path))["cases"][1:] if os.path.exists(path) else []
    doc = {"frame": FRAME, "width": int(image.shape[1]), "height": int(image.shape[0]),
           "ultralytics": ultralytics.__version__, "torch": torch.__version__,
           "onnxruntime": ort.__version__, "torchvision": torchvision_version(),
           "cases": [{"model": f"{CASE}/model.onnx", "seed": SEED, "objects": found}] + kept}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    shutil.rmtree(workdir)


if __name__ == "__main__":
    if sys.argv[1:] == ["ssd"]:
        ssd()
    else:
        main()
