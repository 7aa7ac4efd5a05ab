// Detection decoding: one invocation per box (anchor). It finds the box's
// best class, compares the raw score with the threshold, and only for a box
// that passes takes a slot from the atomic counter and writes one record:
// index, class, raw score (bits), x0, y0, x1, y1 in model input pixels, then
// x, y per keypoint, then the YOLO extras as they are. Only the counter and the records are read back.
// Prepended (gpu.rs): the element types `box_t` and `score_t` (f32 or f16)
// and DECODER (0 SSD anchors, 1 YOLOv5 rows, 2 YOLOv8 columns, 3 end2end
// rows, 4 boxes, scores and labels listed in three outputs). The same
// formulas as decode.rs and listed.rs.

struct Params {
    // SSD: x, y, w, h scales.
    scale: vec4<f32>,
    // Model input width and height in pixels.
    input_size: vec2<f32>,
    // A box passes when its raw score is >= this (for sigmoid scores the
    // logit whose sigmoid is the threshold, found exactly on the CPU).
    threshold: f32,
    // SSD sigmoid scores: logits are clamped to [-clip, clip]; < 0: none.
    clip: f32,
    n: u32,
    classes: u32,
    // Values per box: SSD num_coords, YOLOv5 5 + C + extras, end2end 6 +
    // extras (unused for YOLOv8).
    row: u32,
    box_offset: u32,
    keypoint_offset: u32,
    keypoints: u32,
    keypoint_stride: u32,
    // SSD: boxes stored x, y, w, h (MediaPipe's reverse_output_order).
    xywh: u32,
    // YOLO: box values are 0..1 of the input.
    normalized: u32,
    // Records the buffer holds.
    cap: u32,
    record_words: u32,
    // YOLO: values per box after the class scores (mask coefficients,
    // keypoints, angle), copied into the record after the corners.
    extras: u32,
    // Listed: subtracted from each label; rows below it are dropped.
    label_offset: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

struct Out {
    count: atomic<u32>,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    words: array<u32>,
}

@group(0) @binding(0) var<storage, read> boxes: array<box_t>;
@group(0) @binding(1) var<storage, read> scores: array<score_t>;
// SSD: x_center, y_center, w, h per anchor (0..1); one unused entry else.
@group(0) @binding(2) var<storage, read> anchors: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: Out;
@group(0) @binding(4) var<uniform> params: Params;
// Listed: one label per box; one unused entry else.
@group(0) @binding(5) var<storage, read> labels: array<i32>;

// Bit test rather than x != x, which a compiler may fold away.
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn box_value(at: u32) -> f32 {
    return f32(boxes[at]);
}

fn class_value(i: u32, c: u32) -> f32 {
    if DECODER == 0u {
        return f32(scores[i * params.classes + c]);
    }
    if DECODER == 1u || DECODER == 3u {
        return f32(scores[i * params.row + 5u + c]);
    }
    return f32(scores[(4u + c) * params.n + i]);
}

// YOLO value j (0..3 box, 4 objectness) of box i.
fn yolo_value(i: u32, j: u32) -> f32 {
    if DECODER == 2u {
        return box_value(j * params.n + i);
    }
    return box_value(i * params.row + j);
}

fn put(at: u32, v: f32) {
    out.words[at] = bitcast<u32>(v);
}

// A slot for one record, or none when the buffer is full.
fn take_slot() -> u32 {
    let slot = atomicAdd(&out.count, 1u);
    if slot >= params.cap {
        return 0xffffffffu;
    }
    return slot * params.record_words;
}

// The record of a row the graph already decoded: its corners as they are
// (0..1 of the input where `normalized`).
fn put_row(i: u32, id: u32, raw: f32, corners: vec4<f32>) {
    let r = take_slot();
    if r == 0xffffffffu {
        return;
    }
    var s = vec2<f32>(1.0);
    if params.normalized != 0u {
        s = params.input_size;
    }
    out.words[r] = i;
    out.words[r + 1u] = id;
    put(r + 2u, raw);
    put(r + 3u, corners.x * s.x);
    put(r + 4u, corners.y * s.y);
    put(r + 5u, corners.z * s.x);
    put(r + 6u, corners.w * s.y);
}

// An end2end row: x1, y1, x2, y2, score, class id (a whole number 0..2^24
// held as a float), boxes read as they are: the graph did its NMS.
fn end2end(i: u32) {
    let raw = box_value(i * params.row + 4u);
    if is_nan(raw) || !(raw >= params.threshold) {
        return;
    }
    let id = class_value(i, 0u);
    if !(id >= 0.0 && id <= 16777216.0) || fract(id) != 0.0 {
        return;
    }
    let at = i * params.row;
    let corners = vec4<f32>(box_value(at), box_value(at + 1u), box_value(at + 2u),
        box_value(at + 3u));
    put_row(i, u32(id), raw, corners);
}

// Listed row i: boxes [N, 4] x0, y0, x1, y1, scores [N], labels [N].
fn listed(i: u32) {
    let raw = f32(scores[i]);
    if is_nan(raw) || !(raw >= params.threshold) {
        return;
    }
    let label = labels[i];
    if label < 0 || u32(label) < params.label_offset {
        return;
    }
    let corners = vec4<f32>(box_value(4u * i), box_value(4u * i + 1u), box_value(4u * i + 2u),
        box_value(4u * i + 3u));
    put_row(i, u32(label) - params.label_offset, raw, corners);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= params.n {
        return;
    }
    if DECODER == 3u {
        end2end(i);
        return;
    }
    if DECODER == 4u {
        listed(i);
        return;
    }
    var found = false;
    var best = 0.0;
    var best_class = 0u;
    for (var c = 0u; c < params.classes; c++) {
        var v = class_value(i, c);
        if is_nan(v) {
            continue;
        }
        if DECODER == 0u && params.clip >= 0.0 {
            v = clamp(v, -params.clip, params.clip);
        }
        if !found || v > best {
            found = true;
            best = v;
            best_class = c;
        }
    }
    if !found {
        return;
    }
    var raw = best;
    if DECODER == 1u {
        raw = yolo_value(i, 4u) * best;
    }
    if is_nan(raw) || !(raw >= params.threshold) {
        return;
    }
    let r = take_slot();
    if r == 0xffffffffu {
        return;
    }
    out.words[r] = i;
    out.words[r + 1u] = best_class;
    put(r + 2u, raw);
    let size = params.input_size;
    if DECODER == 0u {
        let a = anchors[i];
        let at = i * params.row + params.box_offset;
        var xc = box_value(at + 1u);
        var yc = box_value(at);
        var w = box_value(at + 3u);
        var h = box_value(at + 2u);
        if params.xywh != 0u {
            xc = box_value(at);
            yc = box_value(at + 1u);
            w = box_value(at + 2u);
            h = box_value(at + 3u);
        }
        xc = xc / params.scale.x * a.z + a.x;
        yc = yc / params.scale.y * a.w + a.y;
        w = w / params.scale.z * a.z;
        h = h / params.scale.w * a.w;
        put(r + 3u, (xc - w / 2.0) * size.x);
        put(r + 4u, (yc - h / 2.0) * size.y);
        put(r + 5u, (xc + w / 2.0) * size.x);
        put(r + 6u, (yc + h / 2.0) * size.y);
        for (var k = 0u; k < params.keypoints; k++) {
            let kat = i * params.row + params.keypoint_offset + k * params.keypoint_stride;
            var kx = box_value(kat + 1u);
            var ky = box_value(kat);
            if params.xywh != 0u {
                kx = box_value(kat);
                ky = box_value(kat + 1u);
            }
            put(r + 7u + 2u * k, (kx / params.scale.x * a.z + a.x) * size.x);
            put(r + 8u + 2u * k, (ky / params.scale.y * a.w + a.y) * size.y);
        }
    } else {
        var s = vec2<f32>(1.0);
        if params.normalized != 0u {
            s = size;
        }
        let cx = yolo_value(i, 0u) * s.x;
        let cy = yolo_value(i, 1u) * s.y;
        let w = yolo_value(i, 2u) * s.x;
        let h = yolo_value(i, 3u) * s.y;
        put(r + 3u, cx - w / 2.0);
        put(r + 4u, cy - h / 2.0);
        put(r + 5u, cx + w / 2.0);
        put(r + 6u, cy + h / 2.0);
        var first = 5u + params.classes;
        if DECODER == 2u {
            first = 4u + params.classes;
        }
        for (var e = 0u; e < params.extras; e++) {
            put(r + 7u + e, yolo_value(i, first + e));
        }
    }
}
