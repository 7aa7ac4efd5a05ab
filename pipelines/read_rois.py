#!/usr/bin/env python3
"""Reads wgnn's results from the buffers themselves, through GObject
introspection: each frame's regions of interest (GstVideoRegionOfInterestMeta:
label, box, confidence, tracker id) and the line and zone counts wgnnanalytics
left on it (GstCustomMeta "WgnnAnalyticsMeta"). docs/RESULTS.md documents both.

Run from the repository root with the plugin built:
    GST_PLUGIN_PATH=$PWD/target/debug python3 pipelines/read_rois.py [frames]
(Debian: apt-get install python3-gi gir1.2-gst-plugins-base-1.0.)
"""

import ctypes
import json
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import GLib, Gst, GstVideo  # noqa: E402

FRAMES = int(sys.argv[1]) if len(sys.argv) > 1 else 10
PIPELINE = (
    "filesrc location=assets/samples/astronaut.mp4 ! decodebin ! "
    f"identity eos-after={FRAMES} ! wgnnupload ! "
    "wgnndetect model=assets/models/mediapipe/face_detection_short_range.tflite ! "
    "wgnnanalytics config=pipelines/door.json ! fakesink name=sink"
)

# GObject introspection cannot walk a buffer's metas (gst_buffer_iterate_meta
# takes an opaque state pointer), so the ids are listed through libgstreamer
# directly; each meta is then read through introspection by its id.
_gst = ctypes.CDLL("libgstreamer-1.0.so.0")
_gst.gst_buffer_iterate_meta_filtered.restype = ctypes.c_void_p
_gst.gst_buffer_iterate_meta_filtered.argtypes = [
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_size_t,
]


class _RoiHead(ctypes.Structure):
    """The start of GstVideoRegionOfInterestMeta, up to its id."""

    _fields_ = [
        ("flags", ctypes.c_uint),
        ("info", ctypes.c_void_p),
        ("roi_type", ctypes.c_uint32),
        ("id", ctypes.c_int),
    ]


def roi_ids(buf):
    """The ids of the buffer's ROI metas, in meta order."""
    # PyGObject hashes a GType by its value, and a boxed value by its address.
    api = hash(GstVideo.video_region_of_interest_meta_api_get_type())
    state = ctypes.c_void_p()
    ids = []
    pointer = hash(buf) & (2**64 - 1)
    while True:
        meta = _gst.gst_buffer_iterate_meta_filtered(pointer, ctypes.byref(state), api)
        if not meta:
            return ids
        ids.append(_RoiHead.from_address(meta).id)


def read(buf, width, height):
    """The frame's objects and analytics as plain Python values."""
    objects = []
    for roi_id in roi_ids(buf):
        meta = GstVideo.buffer_get_video_region_of_interest_meta_id(buf, roi_id)
        obj = {
            "label": GLib.quark_to_string(meta.roi_type),
            "x": meta.x, "y": meta.y, "w": meta.w, "h": meta.h,
        }
        detection = meta.get_param("detection")
        if detection is not None:
            obj["label"] = detection.get_string("label")
            obj["confidence"] = round(detection.get_double("confidence")[1], 3)
        tracking = meta.get_param("tracking")
        if tracking is not None:
            obj["id"] = tracking.get_value("id")
        objects.append(obj)
    analytics = buf.get_custom_meta("WgnnAnalyticsMeta")
    counts = json.loads(analytics.get_structure().get_string("json")) if analytics else {}
    return {"pts": buf.pts, "width": width, "height": height, "objects": objects, **counts}


def main():
    Gst.init(None)
    pipeline = Gst.parse_launch(PIPELINE)
    frames = []

    def probe(pad, info):
        caps = pad.get_current_caps().get_structure(0)
        width, height = caps.get_int("width")[1], caps.get_int("height")[1]
        frame = read(info.get_buffer(), width, height)
        frames.append(frame)
        print(json.dumps(frame))
        return Gst.PadProbeReturn.OK

    sink = pipeline.get_by_name("sink").get_static_pad("sink")
    sink.add_probe(Gst.PadProbeType.BUFFER, probe)
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(
        120 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg is None or msg.type == Gst.MessageType.ERROR:
        error = msg.parse_error()[0].message if msg else "no EOS in 120 s"
        sys.exit(f"read_rois.py: {error}")
    faces = sum(len(f["objects"]) for f in frames)
    print(f"{len(frames)} frames, {faces} regions of interest", file=sys.stderr)


if __name__ == "__main__":
    main()
