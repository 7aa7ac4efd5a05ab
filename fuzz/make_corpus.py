#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora under fuzz/corpus/<target>/.

Seeds are small valid models, so that a mutation lands in the parser's
interesting parts rather than in kilobytes of weights:

- tflite: the single-op models of tests/data/tflite/ops (300 B to 1 KB each);
- onnx: ONNX's backend-test node models in tests/data/onnx/backend/node up
  to 1 KB, plus the hand-made conv+batchnorm+relu model;
- tfjs: tiny TF.js layers models written here (every layer class the
  importer knows), each as `model.json` + NUL + its one weight shard, the
  form the tfjs target splits;
- onnx_structured: a few fixed-seed random byte strings (the target turns
  any bytes into mutations of its embedded seed models);
- elements: the same, for the element/property/caps choices.

Run from anywhere: python3 fuzz/make_corpus.py. Deterministic; it replaces
the seed files it writes and leaves files the fuzzer added alone.
"""

import hashlib
import json
import random
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def put(target: str, data: bytes, name: str | None = None) -> None:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()
    (folder / name).write_bytes(data)


def tflite() -> None:
    for f in sorted((ROOT / "tests/data/tflite/ops").glob("*.tflite")):
        put("tflite", f.read_bytes(), f.stem)


def onnx() -> None:
    for f in sorted((ROOT / "tests/data/onnx/backend/node").glob("*/model.onnx")):
        if f.stat().st_size <= 1024:
            put("onnx", f.read_bytes(), f.parent.name)
    put("onnx", (ROOT / "tests/data/onnx/handmade/conv_bn_relu/model.onnx").read_bytes(),
        "conv_bn_relu")


def floats(rng: random.Random, n: int) -> bytes:
    return struct.pack(f"<{n}f", *(rng.uniform(-1, 1) for _ in range(n)))


def layer(cls: str, name: str, inbound: list[str], **config) -> dict:
    return {
        "class_name": cls,
        "name": name,
        "config": {"name": name, **config},
        "inbound_nodes": [[[i, 0, 0, {}] for i in inbound]] if inbound else [],
    }


def tfjs_model(layers: list[dict], weights: list[tuple[str, list[int]]], wrapped: bool,
               rng: random.Random) -> bytes:
    config = {
        "name": "m",
        "layers": layers,
        "input_layers": [[layers[0]["name"], 0, 0]],
        "output_layers": [[layers[-1]["name"], 0, 0]],
    }
    model_config = {"class_name": "Functional", "config": config}
    topology = {"model_config": model_config} if wrapped else model_config
    shard = b""
    manifest = []
    for name, shape in weights:
        n = 1
        for d in shape:
            n *= d
        shard += floats(rng, n)
        manifest.append({"name": name, "shape": shape, "dtype": "float32"})
    doc = {
        "format": "layers-model",
        "modelTopology": topology,
        "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": manifest}],
    }
    return json.dumps(doc, separators=(",", ":")).encode() + b"\0" + shard


def tfjs() -> None:
    rng = random.Random(18)

    def inp(c: int, hw=(None, None)) -> dict:
        return layer("InputLayer", "in", [], batch_input_shape=[None, *hw, c], dtype="float32")

    def conv(name, src, filters, k, **kw) -> dict:
        return layer("Conv2D", name, [src], filters=filters, kernel_size=[k, k],
                     strides=kw.get("strides", [1, 1]), padding=kw.get("padding", "same"),
                     dilation_rate=kw.get("dilation_rate", [1, 1]), groups=1,
                     activation=kw.get("activation", "linear"), use_bias=kw.get("use_bias", True))

    seeds = {
        "conv_relu": ([inp(3), conv("c", "in", 4, 3, activation="relu")],
                      [("c/kernel", [3, 3, 3, 4]), ("c/bias", [4])]),
        "conv_valid_stride2_nobias": (
            [inp(2, (6, 5)), conv("c", "in", 2, 3, padding="valid", strides=[2, 2],
                                  use_bias=False)],
            [("c/kernel", [3, 3, 2, 2])]),
        "conv_dilated": ([inp(1), conv("c", "in", 1, 2, dilation_rate=[2, 2],
                                       activation="sigmoid")],
                         [("c/kernel", [2, 2, 1, 1]), ("c/bias", [1])]),
        "upsample_nearest": ([inp(3), layer("UpSampling2D", "up", ["in"], size=[2, 2],
                                            interpolation="nearest")], []),
        "upsample_bilinear": ([inp(2), layer("UpSampling2D", "up", ["in"], size=[3, 2],
                                             interpolation="bilinear")], []),
        "pixel_shuffle": ([inp(8), layer("PixelShuffle", "ps", ["in"], scale=2)], []),
        "multiply_beta": ([inp(3), layer("MultiplyBeta", "mb", ["in"], beta=0.2)], []),
        "activations": ([inp(3), layer("Activation", "a", ["in"], activation="relu6"),
                         layer("Activation", "b", ["a"], activation="tanh"),
                         layer("Activation", "c", ["b"], activation="hard_swish")], []),
        "residual_block": (
            [inp(4),
             conv("a", "in", 4, 1, activation="relu"),
             layer("Concatenate", "cat", ["in", "a"], axis=3),
             conv("b", "cat", 4, 1),
             layer("Add", "add", ["b", "in"]),
             layer("MultiplyBeta", "mb", ["add"], beta=0.5),
             layer("PixelShuffle", "ps", ["mb"], scale=2),
             layer("UpSampling2D", "up", ["ps"], size=[2, 2], interpolation="nearest")],
            [("a/kernel", [1, 1, 4, 4]), ("a/bias", [4]),
             ("b/kernel", [1, 1, 8, 4]), ("b/bias", [4])]),
    }
    for i, (name, (layers, weights)) in enumerate(sorted(seeds.items())):
        put("tfjs", tfjs_model(layers, weights, wrapped=i % 2 == 0, rng=rng), name)


def random_seeds(target: str, count: int, length: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(count):
        put(target, bytes(rng.randrange(256) for _ in range(length)), f"seed{i:02}")


if __name__ == "__main__":
    tflite()
    onnx()
    tfjs()
    random_seeds("onnx_structured", 36, 96, 1)
    random_seeds("elements", 24, 256, 2)
    total = sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file())
    print(f"{CORPUS}: {sum(1 for f in CORPUS.rglob('*') if f.is_file())} files, {total} bytes")
