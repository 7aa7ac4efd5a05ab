// Segment masks as Ultralytics' process_mask makes them (upsample=True),
// straight at frame pixels: for each pixel of an object's region of the
// frame, its centre maps back to the model input, the mask logit there is
// the bilinear interpolation (align_corners=False, as F.interpolate) of
// coefficients x prototypes at the four nearest prototype cells, and the
// pixel is set where the logit is > 0 (sigmoid > 0.5) and inside the box.
// One invocation writes one word: 32 pixels of one object's region, row
// major. Only these words are read back. The same formulas as masks.rs.
// Prepended (masks.rs): the element type `proto_t` (f32 or f16).

struct Params {
    // Frame pixels -> model input pixels: input = (frame - offset) / scale.
    scale: vec2<f32>,
    offset: vec2<f32>,
    input_size: vec2<f32>,
    // Prototype channels, height, width.
    channels: u32,
    proto_h: u32,
    proto_w: u32,
    jobs: u32,
    _pad0: u32,
    _pad1: u32,
}

struct Job {
    // The box in model input pixels: x0, y0, x1, y1.
    box_in: vec4<f32>,
    // The region of the frame the mask covers: x, y, width, height.
    region: vec4<u32>,
    // Its first word in `out`.
    word: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> protos: array<proto_t>;
@group(0) @binding(1) var<storage, read> jobs: array<Job>;
// `channels` coefficients per job.
@group(0) @binding(2) var<storage, read> coefs: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;

fn logit_at(j: u32, cell: u32) -> f32 {
    let plane = params.proto_h * params.proto_w;
    var sum = 0.0;
    for (var c = 0u; c < params.channels; c++) {
        sum += coefs[j * params.channels + c] * f32(protos[c * plane + cell]);
    }
    return sum;
}

// PyTorch's source index for align_corners=False: clamped at 0 below.
fn source(u: f32, cells: u32, size: f32) -> vec3<f32> {
    let s = max(u * f32(cells) / size - 0.5, 0.0);
    let i0 = min(u32(floor(s)), cells - 1u);
    let i1 = min(i0 + 1u, cells - 1u);
    return vec3<f32>(f32(i0), f32(i1), s - f32(i0));
}

fn pixel(j: u32, px: u32, py: u32) -> bool {
    let job = jobs[j];
    let u = (vec2<f32>(f32(px), f32(py)) + 0.5 - params.offset) / params.scale;
    let r = u - 0.5;
    if r.x < job.box_in.x || r.x >= job.box_in.z || r.y < job.box_in.y || r.y >= job.box_in.w {
        return false;
    }
    let sx = source(u.x, params.proto_w, params.input_size.x);
    let sy = source(u.y, params.proto_h, params.input_size.y);
    let w = params.proto_w;
    let x0 = u32(sx.x);
    let x1 = u32(sx.y);
    let y0 = u32(sy.x);
    let y1 = u32(sy.y);
    let top = logit_at(j, y0 * w + x0) * (1.0 - sx.z) + logit_at(j, y0 * w + x1) * sx.z;
    let bottom = logit_at(j, y1 * w + x0) * (1.0 - sx.z) + logit_at(j, y1 * w + x1) * sx.z;
    return top * (1.0 - sy.z) + bottom * sy.z > 0.0;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let j = id.y;
    if j >= params.jobs {
        return;
    }
    let region = jobs[j].region;
    let pixels = region.z * region.w;
    let first = id.x * 32u;
    if first >= pixels {
        return;
    }
    var bits = 0u;
    for (var b = 0u; b < 32u; b++) {
        let k = first + b;
        if k >= pixels {
            break;
        }
        if pixel(j, region.x + k % region.z, region.y + k / region.z) {
            bits |= 1u << b;
        }
    }
    out[jobs[j].word + id.x] = bits;
}
