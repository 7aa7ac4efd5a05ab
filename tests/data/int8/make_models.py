#!/usr/bin/env python3
"""int8 models and their reference outputs for tests/models/int8.rs.

Writes, under tests/data/int8/:
- float.onnx: a small float model (Conv, Relu, Add, Mul, Sigmoid, depthwise
  Conv, Concat, MaxPool, GlobalAveragePool, Gemm, Softmax) written with
  onnx.helper, seeded random weights; its outputs are the class
  probabilities and the last feature map (so an error shows in 1024 values,
  not only in 10);
- qdq_tensor.onnx, qdq_channel.onnx, qop_tensor.onnx, qop_channel.onnx: it
  quantized by onnxruntime.quantization.quantize_static in the QDQ and
  QOperator formats, per tensor (uint8 activations) and per channel (int8
  activations), calibrated on seeded random images;
- int8.tflite: the same architecture in Keras, converted to a full-integer
  TFLite model (int8 input and output, per-channel weights) by TensorFlow's
  converter with a seeded representative dataset;
- uint8.tflite: the same with uint8 input and output (int8 inside, a
  QUANTIZE to and from uint8 at the edges; `make_models.py uint8` makes it
  alone);
- <model>.in / <model>.<k>.out: the committed input and each output of the
  model's own runtime (onnxruntime, LiteRT), raw little-endian values;
- references.json: per model its input (name, shape, dtype) and outputs
  (name, shape, dtype, and the output's quantization step, the unit the
  tests measure errors in);
- yolov8n_qdq.onnx: the tiny YOLOv8 export of tests/data/detect/ultralytics
  (yolov8n_detect) quantized by quantize_static in the QDQ format (int8
  activations, per-channel int8 weights; its convolutions only, the head's
  decoding stays float) with its Ultralytics metadata kept,
  calibrated on that folder's letterboxed frame;
  references.json's "yolov8n_qdq" holds the objects onnxruntime's output
  decodes to on the frame with Ultralytics' own post-processing (that
  folder's make_models.py `objects`), which tests/gst/detect_int8.rs
  compares with wgnndetect's JSON lines (no model-proc);
- yolov8n_qop.onnx: the same export quantized in the QOperator format
  (`make_models.py detector-qop`): QLinearConv, QLinearMul, QLinearSigmoid,
  QLinearAdd, QLinearConcat, with Split, MaxPool and Resize on uint8
  tensors (uint8 activations, per-channel int8 weights), its objects under
  "yolov8n_qop";
- <detector>.out.pb: onnxruntime's output on the letterboxed frame
  (tests/models/int8.rs);
- yolov8n_int8.tflite (`make_models.py detector-tflite`): Ultralytics'
  full-integer TFLite export of the same tiny YOLOv8 (see
  detector_tflite), with yolov8n_int8.in / .0.out: the frame quantized as
  its input asks and LiteRT's output, and under "yolov8n_int8" the objects
  that output decodes to with Ultralytics' post-processing.

Needs tensorflow-cpu 2.21, ai-edge-litert 2.3.0, onnx 1.22.0, onnxruntime
1.32.0 and numpy from PyPI (one virtual environment), and for the detector
ultralytics 8.4.190 and torch, and for detector-tflite also tensorflow-cpu
2.19.1, tf_keras 2.19.0, onnx2tf 1.28.8 (--no-deps), sng4onnx and
onnx_graphsurgeon (what Ultralytics' TensorFlow export asks for; no
download: Ultralytics runs offline). Run from anywhere:
    python3 tests/data/int8/make_models.py
or only one detector (it updates its key of references.json):
    python3 tests/data/int8/make_models.py detector|detector-qop|detector-tflite
"""

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

OUT = os.path.dirname(os.path.abspath(__file__))
SIZE = 16  # input height and width
CLASSES = 10
DTYPE = {np.dtype(np.float32): "f32", np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8"}


def weights(rng, *shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def float_model(path):
    rng = np.random.default_rng(0)
    inits = []

    def init(name, value):
        inits.append(numpy_helper.from_array(value, name))
        return name

    def conv(name, x, cin, cout, k, group=1):
        w = init(f"{name}.w", weights(rng, cout, cin // group, k, k, fan_in=cin // group * k * k))
        b = init(f"{name}.b", (rng.standard_normal(cout) * 0.1).astype(np.float32))
        return helper.make_node("Conv", [x, w, b], [name], name=name, pads=[k // 2] * 4,
                                group=group)

    nodes = [
        conv("conv1", "image", 3, 8, 3),
        helper.make_node("Relu", ["conv1"], ["a"], name="relu1"),
        conv("conv2", "a", 8, 8, 3),
        helper.make_node("Add", ["a", "conv2"], ["c"], name="add"),
        helper.make_node("Sigmoid", ["c"], ["sig"], name="sigmoid"),
        helper.make_node("Mul", ["c", "sig"], ["d"], name="mul"),
        conv("dw", "d", 8, 8, 3, group=8),
        helper.make_node("Concat", ["d", "dw"], ["cat"], name="concat", axis=1),
        helper.make_node("MaxPool", ["cat"], ["pool"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        conv("conv4", "pool", 16, 16, 1),
        helper.make_node("Relu", ["conv4"], ["features"], name="relu4"),
        helper.make_node("GlobalAveragePool", ["features"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", init("fc.w", weights(rng, CLASSES, 16, fan_in=16)),
                                  init("fc.b", np.zeros(CLASSES, np.float32))],
                         ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "int8_test",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, CLASSES]),
         helper.make_tensor_value_info("features", TensorProto.FLOAT,
                                       [1, 16, SIZE // 2, SIZE // 2])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


class Images(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(1)
        self.data = iter([{"image": rng.random((1, 3, SIZE, SIZE), np.float32)}
                          for _ in range(16)])

    def get_next(self):
        return next(self.data, None)


def output_steps(path):
    """Each graph output's quantization step: the scale of the
    DequantizeLinear that writes it."""
    m = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    steps = {}
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] in [o.name for o in m.graph.output]:
            steps[n.output[0]] = float(inits[n.input[1]])
    return steps


def write(name, input_name, x, outputs, steps, refs):
    x.tofile(os.path.join(OUT, f"{name}.in"))
    outs = []
    for k, (oname, y) in enumerate(outputs):
        y.tofile(os.path.join(OUT, f"{name}.{k}.out"))
        outs.append({"name": oname, "shape": list(y.shape), "dtype": DTYPE[y.dtype],
                     "step": steps[oname]})
    refs[name] = {"input": {"name": input_name, "shape": list(x.shape),
                            "dtype": DTYPE[x.dtype]},
                  "outputs": outs}


def onnx_models(x, refs):
    float_path = os.path.join(OUT, "float.onnx")
    float_model(float_path)
    for fmt, fname in [(QuantFormat.QDQ, "qdq"), (QuantFormat.QOperator, "qop")]:
        for per_channel, kind, act in [(False, "tensor", QuantType.QUInt8),
                                       (True, "channel", QuantType.QInt8)]:
            name = f"{fname}_{kind}"
            path = os.path.join(OUT, f"{name}.onnx")
            quantize_static(float_path, path, Images(), quant_format=fmt,
                            per_channel=per_channel, activation_type=act,
                            weight_type=QuantType.QInt8)
            s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            names = [o.name for o in s.get_outputs()]
            ys = s.run(names, {"image": x})
            write(name, "image", x, list(zip(names, ys)), output_steps(path), refs)


def keras_model():
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    L = tf.keras.layers
    image = L.Input((SIZE, SIZE, 3), batch_size=1, name="image")
    a = L.Conv2D(8, 3, padding="same", activation="relu")(image)
    c = L.Add()([a, L.Conv2D(8, 3, padding="same")(a)])
    d = L.Multiply()([c, L.Activation("sigmoid")(c)])
    e = L.DepthwiseConv2D(3, padding="same")(d)
    f = L.MaxPooling2D(2)(L.Concatenate()([d, e]))
    features = L.Conv2D(16, 1, activation="relu", name="features")(f)
    g = L.GlobalAveragePooling2D()(features)
    probs = L.Softmax(name="probs")(L.Dense(CLASSES)(g))
    return tf.keras.Model(image, [probs, features])


def tflite_model(x, refs, name="int8_tflite", file="int8.tflite", io="int8"):
    """The Keras network as a full-integer TFLite model whose input and
    output are `io`: int8, or uint8 (int8 inside, a uint8 QUANTIZE at each
    edge, as TF2's converter writes it)."""
    import tensorflow as tf
    from ai_edge_litert import interpreter as litert

    model = keras_model()

    def representative():
        rng = np.random.default_rng(1)
        for _ in range(16):
            yield [rng.random((1, SIZE, SIZE, 3), np.float32)]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = getattr(tf, io)
    conv.inference_output_type = getattr(tf, io)
    path = os.path.join(OUT, file)
    with open(path, "wb") as f:
        f.write(conv.convert())

    it = litert.Interpreter(model_path=path)
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    scale, zero = inp["quantization"]
    # The ONNX models' input, NHWC, quantized as the model's input asks.
    info = np.iinfo(inp["dtype"])
    q = np.clip(np.round(x.transpose(0, 2, 3, 1) / scale) + zero, info.min, info.max)
    q = q.astype(inp["dtype"])
    it.set_tensor(inp["index"], q)
    it.invoke()
    outputs, steps = [], {}
    for o in it.get_output_details():
        outputs.append((o["name"], it.get_tensor(o["index"])))
        # The outputs hold integers: one step is one.
        steps[o["name"]] = 1.0
    write(name, inp["name"], q, outputs, steps, refs)


class Frames(CalibrationDataReader):
    """The letterboxed frame alone: with random images too, the ranges grow
    until the random-weight head's scores collapse onto a few values."""

    def __init__(self, name, frame):
        self.data = iter([{name: frame}])

    def get_next(self):
        return next(self.data, None)


def shared_initializers(model):
    """The export writes a bias shared by two convolutions once, with an
    Identity naming the second use; the QOperator quantizer looks biases
    up among the initializers (and fails on the Identity's), so each use
    gets its own copy."""
    inits = {t.name: t for t in model.graph.initializer}
    for n in [n for n in model.graph.node if n.op_type == "Identity" and n.input[0] in inits]:
        copy = onnx.TensorProto()
        copy.CopyFrom(inits[n.input[0]])
        copy.name = n.output[0]
        model.graph.initializer.append(copy)
        model.graph.node.remove(n)
    return model


# Per detector: (file, format, activation type, operators quantized). The
# QDQ one quantizes the convolutions only; the QOperator one every
# operator onnxruntime has a QLinear or 8-bit form for (its Split, MaxPool
# and Resize then run on uint8 tensors), with uint8 activations: with int8
# ones the random-weight network's scores drift until one object is left.
# Its weights take 7 bits (reduce_range): onnxruntime's uint8 x int8
# convolution on x86 CPUs without VNNI sums pairs of products in int16,
# which saturates with 8-bit weights (255 * 127 * 2 > 32767), so its
# output would depend on the CPU that made it.
DETECTORS = {
    "yolov8n_qdq": ("yolov8n_qdq.onnx", QuantFormat.QDQ, QuantType.QInt8, ["Conv"], False),
    "yolov8n_qop": ("yolov8n_qop.onnx", QuantFormat.QOperator, QuantType.QUInt8,
                    ["Conv", "Mul", "Sigmoid", "Add", "Concat", "MaxPool", "Resize", "Split"],
                    True),
}


def detector(refs, key):
    import importlib.util

    folder = os.path.join(OUT, "../detect/ultralytics")
    spec = importlib.util.spec_from_file_location(
        "ultralytics_models", os.path.join(folder, "make_models.py"))
    ultra = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ultra)
    src = os.path.join(folder, "yolov8n_detect/model.onnx")
    tensor = onnx.load_tensor(os.path.join(folder, "yolov8n_detect/test_data_set_0/input_0.pb"))
    frame = numpy_helper.to_array(tensor)
    file, fmt, act, ops, reduce_range = DETECTORS[key]
    path = os.path.join(OUT, file)
    model = onnx.load(src)
    if fmt == QuantFormat.QOperator:
        model = shared_initializers(model)
    name = model.graph.input[0].name
    # The head's decoding (DFL softmax, box arithmetic, the concat of boxes
    # in pixels with scores in [0, 1]) stays float but for the DFL's
    # convolution: quantized, it would share one int8 scale and lose its
    # scores.
    decoding = [n.name for n in model.graph.node
                if n.name.startswith("/model.22/") and not n.name.startswith("/model.22/cv")
                and n.op_type != "Conv"]
    quantize_static(model, path, Frames(name, frame), quant_format=fmt,
                    per_channel=True, activation_type=act, weight_type=QuantType.QInt8,
                    op_types_to_quantize=ops, nodes_to_exclude=decoding,
                    reduce_range=reduce_range)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (out,) = s.run(None, {name: frame})
    # tests/models/int8.rs compares the output itself.
    onnx.save_tensor(numpy_helper.from_array(out, "output0"), os.path.join(OUT, f"{key}.out.pb"))
    with open(os.path.join(folder, "expected.json")) as f:
        doc = json.load(f)
    hw = (doc["height"], doc["width"])
    found = ultra.objects(out, hw)
    print(f"{key}: {len(found)} objects, stable: {ultra.stable(out, hw, found)}")
    refs[key] = {"model": file, "frame": "../detect/ultralytics/frame.png", "objects": found}


# The tenth best box's score the float model is built for (0.3 in
# tests/data/detect/ultralytics): int8 activations throughout pull the
# random-weight head's scores down until one box is left above 0.25.
SCORE_INT8 = 0.6


def detector_tflite(refs):
    """Ultralytics' TensorFlow export (`format="saved_model"`, `int8=True`:
    onnx2tf, calibrated on the frame through a local data yaml) of the
    tiny YOLOv8 of tests/data/detect/ultralytics; its full-integer model
    (int8 input and output) is yolov8n_int8.tflite, with the metadata
    Ultralytics appends to it. The head writes its boxes divided by the
    input size, as Ultralytics' TFLite exports do (onnx2tf's before 8.4.83,
    litert-torch's since: its LiteRT backend multiplies them back), so
    that boxes and scores share the output's int8 scale."""
    import importlib.util
    import shutil
    import tempfile

    os.environ["YOLO_OFFLINE"] = "1"
    import torch
    import yaml
    from ai_edge_litert import interpreter as litert
    from ultralytics.nn.modules.head import Detect

    folder = os.path.join(OUT, "../detect/ultralytics")
    spec = importlib.util.spec_from_file_location(
        "ultralytics_models", os.path.join(folder, "make_models.py"))
    ultra = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ultra)
    tensor = onnx.load_tensor(os.path.join(folder, "yolov8n_detect/test_data_set_0/input_0.pb"))
    frame = numpy_helper.to_array(tensor)
    h, w = ultra.IMGSZ
    pixels = Detect._get_decode_boxes

    def normalized(self, x):
        return pixels(self, x) * torch.tensor([1 / w, 1 / h, 1 / w, 1 / h]).view(1, 4, 1)

    Detect._get_decode_boxes = normalized
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        os.makedirs("images")
        shutil.copy(os.path.join(folder, "frame.png"), "images/frame.png")
        with open("data.yaml", "w") as f:
            yaml.safe_dump({"path": work, "train": "images", "val": "images",
                            "names": dict(ultra.NAMES)}, f)
        # onnx2tf's sample calibration file, which Ultralytics would
        # download; unused with `data=`.
        np.save("calibration_image_sample_data_20x128x128x3_float32.npy",
                np.zeros((1, 8, 8, 3), np.float32))
        model = ultra.build("yolov8n", 1, SCORE_INT8, work, torch.from_numpy(frame))
        out = model.export(format="saved_model", int8=True, data="data.yaml", imgsz=ultra.IMGSZ)
        path = os.path.join(OUT, "yolov8n_int8.tflite")
        shutil.copy(os.path.join(out, "yolov8n-w16_full_integer_quant.tflite"), path)
        os.chdir(cwd)
    Detect._get_decode_boxes = pixels

    it = litert.Interpreter(model_path=path)
    it.allocate_tensors()
    inp, (outp,) = it.get_input_details()[0], it.get_output_details()
    scale, zero = inp["quantization"]
    q = np.clip(np.round(frame.transpose(0, 2, 3, 1) / scale) + zero, -128, 127).astype(np.int8)
    it.set_tensor(inp["index"], q)
    it.invoke()
    y = it.get_tensor(outp["index"])
    # tests/models/int8.rs compares the output in steps, as the small models'.
    write("yolov8n_int8", inp["name"], q, [(outp["name"], y)], {outp["name"]: 1.0}, refs)
    scale, zero = outp["quantization"]
    out = (y.astype(np.float32) - zero) * scale
    out[:, [0, 2]] *= w
    out[:, [1, 3]] *= h
    with open(os.path.join(folder, "expected.json")) as f:
        doc = json.load(f)
    hw = (doc["height"], doc["width"])
    found = ultra.objects(out, hw)
    print(f"yolov8n_int8: {len(found)} objects, stable: {ultra.stable(out, hw, found)}")
    refs["yolov8n_int8"].update({"model": "yolov8n_int8.tflite",
                                 "frame": "../detect/ultralytics/frame.png", "objects": found})


def main():
    import sys

    path = os.path.join(OUT, "references.json")
    if sys.argv[1:] == ["uint8"]:
        with open(path) as f:
            refs = json.load(f)
        x = np.random.default_rng(2).random((1, 3, SIZE, SIZE), np.float32)
        tflite_model(x, refs, "uint8_tflite", "uint8.tflite", "uint8")
        with open(path, "w") as f:
            json.dump(refs, f, indent=1, sort_keys=True)
            f.write("\n")
        return
    detectors = {"detector": ["yolov8n_qdq"], "detector-qop": ["yolov8n_qop"],
                 "detector-tflite": []}
    if sys.argv[1:2] and sys.argv[1] in detectors:
        with open(path) as f:
            refs = json.load(f)
        keys = detectors[sys.argv[1]]
    else:
        x = np.random.default_rng(2).random((1, 3, SIZE, SIZE), np.float32)
        refs = {}
        onnx_models(x, refs)
        tflite_model(x, refs)
        tflite_model(x, refs, "uint8_tflite", "uint8.tflite", "uint8")
        keys = list(DETECTORS)
    for key in keys:
        detector(refs, key)
    if sys.argv[1:2] in ([], ["detector-tflite"]):
        detector_tflite(refs)
    with open(path, "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
