#!/usr/bin/env python3
"""Seeded tracking sequences with ground truth, and py-motmetrics' scores of
the trackers' outputs.

    python3 make_sequences.py          # writes <seq>/gt.txt and <seq>/det.txt
    WGNN_BLESS=1 cargo test --lib -- track::tests   # writes <seq>/<tracker>.txt
    python3 make_sequences.py --score  # writes motmetrics.json

Each sequence is 640x360 pixels, frames numbered from 1, in MOTChallenge's
text format (frame,id,x,y,w,h,conf,-1,-1,-1). Objects are boxes moving at
constant velocity with a little wander; what a detector would see of them is
made from the ground truth: boxes jittered, some missed, weak scores where an
object is partly hidden, and false positives.

- crossing: pairs of objects walking towards each other at the same height;
  their boxes overlap as they pass.
- occlusion: a pillar in the middle of the frame hides the objects walking
  behind it for a dozen frames; entering and leaving it they are partly
  visible and score low.
- crowd: many objects on random headings, bouncing off the frame's edges,
  with more misses and false positives.

The ground truth lists an object on a frame where at least a quarter of it is
visible. The scores are py-motmetrics' (IoU distance, pairs up to 0.5):
MOTA and IDF1 for each tracker on each sequence.
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 640, 360
FRAMES = 120
TRACKERS = ["iou", "bytetrack", "bytetrack-every3"]
SEQUENCES = ["crossing", "occlusion", "crowd"]
# The pillar of the occlusion sequence: x from, x to (the whole height).
PILLAR = (280.0, 360.0)


def objects(name, rng):
    """Start frame, end frame, box (x, y, w, h) at start, velocity (vx, vy)."""
    objs = []
    if name == "crossing":
        for k in range(4):
            y = 40 + 75 * k + rng.uniform(-5, 5)
            speed = rng.uniform(2.5, 4.0)
            start = int(rng.integers(0, 20))
            objs.append((start, FRAMES, [20.0, y, 40.0, 80.0], [speed, rng.uniform(-0.2, 0.2)]))
            objs.append((start, FRAMES, [580.0, y + rng.uniform(-8, 8), 40.0, 80.0],
                         [-speed * rng.uniform(0.8, 1.1), rng.uniform(-0.2, 0.2)]))
    elif name == "occlusion":
        for k in range(6):
            y = 20 + 55 * k + rng.uniform(-5, 5)
            left = k % 2 == 0
            speed = rng.uniform(2.5, 4.5)
            x = rng.uniform(10, 60) if left else rng.uniform(540, 590)
            start = int(rng.integers(0, 25))
            objs.append((start, FRAMES, [x, y, 36.0, 72.0],
                         [speed if left else -speed, rng.uniform(-0.3, 0.3)]))
    else:
        for _ in range(12):
            w = rng.uniform(24, 48)
            h = w * rng.uniform(1.6, 2.4)
            x, y = rng.uniform(0, W - w), rng.uniform(0, H - h)
            a = rng.uniform(0, 2 * np.pi)
            v = rng.uniform(1.0, 3.0)
            start = int(rng.integers(0, 40))
            end = int(rng.integers(start + 40, FRAMES + 1))
            objs.append((start, end, [x, y, w, h], [v * np.cos(a), v * np.sin(a)]))
    return objs


def visible_part(name, box):
    """The visible fraction of a box (in the frame, not behind the pillar)."""
    x, y, w, h = box
    x0, x1 = max(x, 0.0), min(x + w, W)
    y0, y1 = max(y, 0.0), min(y + h, H)
    if x1 <= x0 or y1 <= y0:
        return 0.0
    seen = (x1 - x0) * (y1 - y0)
    if name == "occlusion":
        hidden = max(0.0, min(x1, PILLAR[1]) - max(x0, PILLAR[0])) * (y1 - y0)
        seen -= hidden
    return seen / (w * h)


def sequence(name, seed):
    rng = np.random.default_rng(seed)
    gt, det = [], []
    miss = {"crossing": 0.05, "occlusion": 0.05, "crowd": 0.10}[name]
    false_rate = {"crossing": 0.15, "occlusion": 0.15, "crowd": 0.4}[name]
    for oid, (start, end, box, vel) in enumerate(objects(name, rng), start=1):
        box, vel = list(box), list(vel)
        for f in range(start, end):
            if f > start:
                vel[0] += rng.normal(0, 0.05)
                vel[1] += rng.normal(0, 0.05)
                box[0] += vel[0]
                box[1] += vel[1]
                if name == "crowd":
                    for i, limit in ((0, W - box[2]), (1, H - box[3])):
                        if box[i] < 0 or box[i] > limit:
                            vel[i] = -vel[i]
                            box[i] = min(max(box[i], 0.0), limit)
            seen = visible_part(name, box)
            if seen < 0.25:
                continue
            gt.append((f + 1, oid, *box, 1.0))
            if rng.random() < miss + (0.3 if seen < 0.6 else 0.0):
                continue
            jitter = rng.normal(0, 1.5, 4)
            jitter[2:] = rng.normal(0, 2.0, 2)
            d = [box[0] + jitter[0], box[1] + jitter[1],
                 max(4.0, box[2] + jitter[2]), max(4.0, box[3] + jitter[3])]
            conf = rng.uniform(0.6, 0.95) if seen > 0.8 else rng.uniform(0.15, 0.45)
            det.append((f + 1, -1, *d, conf))
    for f in range(FRAMES):
        while rng.random() < false_rate:
            w = rng.uniform(20, 50)
            h = w * rng.uniform(1.2, 2.5)
            det.append((f + 1, -1, rng.uniform(0, W - w), rng.uniform(0, H - h), w, h,
                        rng.uniform(0.1, 0.65)))
            if rng.random() < 0.7:
                break
    gt.sort(key=lambda r: (r[0], r[1]))
    det.sort(key=lambda r: (r[0], r[2]))
    return gt, det


def write(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write("%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,-1,-1,-1\n" % r)


def make():
    for seed, name in enumerate(SEQUENCES, start=42):
        os.makedirs(os.path.join(HERE, name), exist_ok=True)
        gt, det = sequence(name, seed)
        write(os.path.join(HERE, name, "gt.txt"), gt)
        write(os.path.join(HERE, name, "det.txt"), det)
        print(name, len(gt), "ground-truth boxes,", len(det), "detections")


def load(path):
    rows = np.loadtxt(path, delimiter=",", ndmin=2)
    return {int(f): rows[rows[:, 0] == f] for f in np.unique(rows[:, 0])}


def score():
    if not hasattr(np, "asfarray"):
        # motmetrics 1.4 calls it; NumPy 2 dropped it.
        np.asfarray = lambda a: np.asarray(a, dtype=float)
    import motmetrics as mm

    scores = {"motmetrics": mm.__version__, "max_iou_distance": 0.5, "sequences": {}}
    for name in SEQUENCES:
        gt = load(os.path.join(HERE, name, "gt.txt"))
        per = {}
        for tracker in TRACKERS:
            hyp = load(os.path.join(HERE, name, tracker + ".txt"))
            acc = mm.MOTAccumulator(auto_id=False)
            for f in sorted(set(gt) | set(hyp)):
                g = gt.get(f, np.zeros((0, 10)))
                h = hyp.get(f, np.zeros((0, 10)))
                d = mm.distances.iou_matrix(g[:, 2:6], h[:, 2:6], max_iou=0.5)
                acc.update(g[:, 1].astype(int), h[:, 1].astype(int), d, frameid=f)
            m = mm.metrics.create().compute(
                acc, metrics=["mota", "idf1", "num_switches", "num_misses",
                              "num_false_positives", "num_objects"])
            per[tracker] = {k: float(m[k].iloc[0]) for k in m.columns}
            print(name, tracker, per[tracker])
        scores["sequences"][name] = per
    with open(os.path.join(HERE, "motmetrics.json"), "w") as f:
        json.dump(scores, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    score() if "--score" in sys.argv[1:] else make()
