// Frame -> model input tensor in one pass: each invocation produces the C
// values of one output pixel. Prepended (tensorize.rs): the `out_t` alias (f32
// or f16) and the switches RESIZE_MODE (0 stretch, 1 letterbox, 2 center
// crop), NCHW and BGR, then a frame reader defining frame_size() and
// frame_rgb() over group 0. Sizes, colours and the source region are values
// in `params`, so a new model or frame size, or another region, compiles
// nothing.

struct Params {
    // Per output channel (xyz): value = x * scale + offset, x in 0..255.
    scale: vec4<f32>,
    offset: vec4<f32>,
    // Letterbox borders (rgb, 0..255), normalised like pixels.
    pad_color: vec4<f32>,
    // Unless whole_frame: the source region (x, y, w, h in frame pixels,
    // inside the frame) that is fitted to the output instead of the frame,
    // and the first (xy) and last (zw) pixel it touches, which bilinear taps
    // stay within.
    region: vec4<f32>,
    region_pixels: vec4<i32>,
    out_w: u32,
    out_h: u32,
    whole_frame: u32,
    // 1: output pixel i samples the source at i * scale (OpenCV's
    // warpAffine); 0: pixel centres map to pixel centres.
    asymmetric: u32,
    // Element index of this item's first value in `dst`: a batched tensor's
    // slot lies where the binding (offset-aligned) does not start.
    dst_offset: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(0) var<storage, read_write> dst: array<out_t>;
@group(1) @binding(1) var<uniform> params: Params;

// Bilinear sample at continuous pixel coordinate pos (pixel centres at
// integers), clamped to the pixels first..last.
fn bilinear(pos: vec2<f32>, first: vec2<i32>, last: vec2<i32>) -> vec3<f32> {
    let p = clamp(pos, vec2<f32>(first), vec2<f32>(last));
    let p0 = vec2<i32>(floor(p));
    let p1 = min(p0 + 1, last);
    let f = p - vec2<f32>(p0);
    let top = mix(frame_rgb(p0), frame_rgb(vec2<i32>(p1.x, p0.y)), f.x);
    let bottom = mix(frame_rgb(vec2<i32>(p0.x, p1.y)), frame_rgb(p1), f.x);
    return mix(top, bottom, f.y);
}

fn sample(o: vec2<f32>) -> vec3<f32> {
    let size = frame_size();
    // The source: the whole frame, or the region.
    var origin = vec2<f32>(0.0);
    var src = vec2<f32>(size);
    var first = vec2<i32>(0);
    var last = size - 1;
    if params.whole_frame == 0u {
        origin = params.region.xy;
        src = params.region.zw;
        first = params.region_pixels.xy;
        last = params.region_pixels.zw;
    }
    let dst_size = vec2<f32>(f32(params.out_w), f32(params.out_h));
    // The source position of output position q (pixel centres at half
    // integers) at scale s is (q - k) * s - (0.5 - k): half-pixel (k = 0)
    // or asymmetric (k = 0.5).
    let k = select(0.0, 0.5, params.asymmetric == 1u);
    if RESIZE_MODE == 1u {
        // Scale to fit inside, centred; pixels whose centre falls outside the
        // scaled source are padding.
        let s = max(src.x / dst_size.x, src.y / dst_size.y);
        let content = src / s;
        let q = o - (dst_size - content) * 0.5;
        if any(q < vec2<f32>(0.0)) || any(q >= content) {
            return params.pad_color.rgb;
        }
        return bilinear(origin + (q - k) * s - (0.5 - k), first, last);
    }
    if RESIZE_MODE == 2u {
        // Scale to cover, centred; the overhang is cut off.
        let s = min(src.x / dst_size.x, src.y / dst_size.y);
        let start = origin + (src - dst_size * s) * 0.5;
        return bilinear(start + (o - k) * s - (0.5 - k), first, last);
    }
    return bilinear(origin + (o - k) * (src / dst_size) - (0.5 - k), first, last);
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
    let base = params.dst_offset;
    // One scalar store per value (f16 too: never a packed pair), so an item
    // may start at any element, odd ones included.
    if NCHW {
        let plane = out_w * out_h;
        dst[base + pixel] = out_t(v.x);
        dst[base + plane + pixel] = out_t(v.y);
        dst[base + 2u * plane + pixel] = out_t(v.z);
    } else {
        dst[base + pixel * 3u] = out_t(v.x);
        dst[base + pixel * 3u + 1u] = out_t(v.y);
        dst[base + pixel * 3u + 2u] = out_t(v.z);
    }
}
