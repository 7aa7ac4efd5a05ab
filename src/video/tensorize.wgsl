// Frame -> model input tensor in one pass: each invocation produces the C
// values of one output pixel. Prepended: `out_t` alias (f32 or f16) and a
// frame reader defining frame_size() and frame_rgb().

override out_w: u32;
override out_h: u32;
// 0 stretch, 1 letterbox, 2 center crop.
override resize_mode: u32;
override nchw: bool;
override bgr: bool;
override pad_r: f32;
override pad_g: f32;
override pad_b: f32;
// Per output channel: value = x * scale + offset, x in 0..255.
override scale0: f32;
override scale1: f32;
override scale2: f32;
override offset0: f32;
override offset1: f32;
override offset2: f32;

@group(1) @binding(0) var<storage, read_write> dst: array<out_t>;

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
    let dst_size = vec2<f32>(f32(out_w), f32(out_h));
    if resize_mode == 1u {
        // Scale to fit inside, centred; pixels whose centre falls outside the
        // scaled frame are padding.
        let s = max(src.x / dst_size.x, src.y / dst_size.y);
        let content = src / s;
        let q = o - (dst_size - content) * 0.5;
        if any(q < vec2<f32>(0.0)) || any(q >= content) {
            return vec3<f32>(pad_r, pad_g, pad_b);
        }
        return bilinear(q * s - 0.5, size);
    }
    if resize_mode == 2u {
        // Scale to cover, centred; the overhang is cut off.
        let s = min(src.x / dst_size.x, src.y / dst_size.y);
        let origin = (src - dst_size * s) * 0.5;
        return bilinear(origin + o * s - 0.5, size);
    }
    return bilinear(o * (src / dst_size) - 0.5, size);
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= out_w || id.y >= out_h {
        return;
    }
    var rgb = sample(vec2<f32>(id.xy) + 0.5);
    if bgr {
        rgb = rgb.bgr;
    }
    let v = rgb * vec3<f32>(scale0, scale1, scale2) + vec3<f32>(offset0, offset1, offset2);
    let pixel = id.y * out_w + id.x;
    if nchw {
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
