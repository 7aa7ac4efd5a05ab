// Frame -> model input tensor in one pass: each invocation produces the C
// values of one output pixel. Prepended (tensorize.rs): the `out_t` alias (f32
// or f16) and the switches RESIZE_MODE (0 stretch, 1 letterbox, 2 center
// crop), NCHW and BGR, then a frame reader defining frame_size() and
// frame_rgb() over group 0. Sizes and colours are values in `params`, so a
// new model or frame size compiles nothing.

struct Params {
    // Per output channel (xyz): value = x * scale + offset, x in 0..255.
    scale: vec4<f32>,
    offset: vec4<f32>,
    // Letterbox borders (rgb, 0..255), normalised like pixels.
    pad_color: vec4<f32>,
    out_w: u32,
    out_h: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(1) @binding(0) var<storage, read_write> dst: array<out_t>;
@group(1) @binding(1) var<uniform> params: Params;

// Bilinear sample at continuous pixel coordinate pos (pixel centres at
// integers), clamped to the edge.
fn bilinear(pos: vec2<f32>, size: vec2<i32>) -> vec3<f32> {
    let p = clamp(pos, vec2<f32>(0.0), vec2<f32>(size - 1));
    let p0 = vec2<i32>(floor(p));
    let p1 = min(p0 + 1, size - 1);
    let f = p - vec2<f32>(p0);
    let top = mix(frame_rgb(p0), frame_rgb(vec2<i32>(p1.x, p0.y)), f.x);
    let bottom = mix(frame_rgb(vec2<i32>(p0.x, p1.y)), frame_rgb(p1), f.x);
    return mix(top, bottom, f.y);
}

fn sample(o: vec2<f32>) -> vec3<f32> {
    let size = frame_size();
    let src = vec2<f32>(size);
    let dst_size = vec2<f32>(f32(params.out_w), f32(params.out_h));
    if RESIZE_MODE == 1u {
        // Scale to fit inside, centred; pixels whose centre falls outside the
        // scaled frame are padding.
        let s = max(src.x / dst_size.x, src.y / dst_size.y);
        let content = src / s;
        let q = o - (dst_size - content) * 0.5;
        if any(q < vec2<f32>(0.0)) || any(q >= content) {
            return params.pad_color.rgb;
        }
        return bilinear(q * s - 0.5, size);
    }
    if RESIZE_MODE == 2u {
        // Scale to cover, centred; the overhang is cut off.
        let s = min(src.x / dst_size.x, src.y / dst_size.y);
        let origin = (src - dst_size * s) * 0.5;
        return bilinear(origin + o * s - 0.5, size);
    }
    return bilinear(o * (src / dst_size) - 0.5, size);
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let out_w = params.out_w;
    let out_h = params.out_h;
    if id.x >= out_w || id.y >= out_h {
        return;
    }
    var rgb = sample(vec2<f32>(id.xy) + 0.5);
    if BGR {
        rgb = rgb.bgr;
    }
    let v = rgb * params.scale.xyz + params.offset.xyz;
    let pixel = id.y * out_w + id.x;
    if NCHW {
        let plane = out_w * out_h;
        dst[pixel] = out_t(v.x);
        dst[plane + pixel] = out_t(v.y);
        dst[2u * plane + pixel] = out_t(v.z);
    } else {
        dst[pixel * 3u] = out_t(v.x);
        dst[pixel * 3u + 1u] = out_t(v.y);
        dst[pixel * 3u + 2u] = out_t(v.z);
    }
}
