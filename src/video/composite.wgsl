// Person mask + frame -> RGBA. Prepended (composite.rs): the switches
// EFFECT (0 frame as is, 1 mask as grey, 2 colour background, 3 image
// background scaled to the frame, 4 blurred frame as background, computed
// at every `blur_step`-th pixel each way) and EDGE (harden the mask edge),
// then a frame reader (group 0). Sizes, colours, thresholds and the blur's
// step are values in `params`: a new frame or mask size compiles nothing.

struct Params {
    // Colour background (effect 2): rgb in 0..255, then alpha in 0..1; a
    // transparent colour makes the output an overlay with the person opaque.
    bg: vec4<f32>,
    mask_w: u32,
    mask_h: u32,
    // With EDGE: smoothstep(edge_lo, edge_hi, m), a step at edge_lo when equal.
    edge_lo: f32,
    edge_hi: f32,
    // Effect 4: the blur's sample step k; its texel (X, Y) is the blurred
    // frame at pixel (k X, k Y). 1 when the blur is full-size.
    blur_step: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(0) var<storage, read> mask: array<f32>;
@group(1) @binding(1) var bg: texture_2d<f32>;
@group(1) @binding(2) var out: texture_storage_2d<rgba8unorm, write>;
@group(1) @binding(3) var<uniform> params: Params;

fn mask_at(p: vec2<i32>) -> f32 {
    return mask[u32(p.y) * params.mask_w + u32(p.x)];
}

// Person probability at frame pixel p: the mask stretched over the frame,
// bilinear with pixel centres aligned, then optionally sharpened.
fn person(p: vec2<i32>, size: vec2<i32>) -> f32 {
    let msize = vec2<i32>(i32(params.mask_w), i32(params.mask_h));
    let pos = (vec2<f32>(p) + 0.5) * vec2<f32>(msize) / vec2<f32>(size) - 0.5;
    let q = clamp(pos, vec2<f32>(0.0), vec2<f32>(msize - 1));
    let q0 = vec2<i32>(floor(q));
    let q1 = min(q0 + 1, msize - 1);
    let f = q - vec2<f32>(q0);
    let top = mix(mask_at(q0), mask_at(vec2<i32>(q1.x, q0.y)), f.x);
    let bottom = mix(mask_at(vec2<i32>(q0.x, q1.y)), mask_at(q1), f.x);
    var m = clamp(mix(top, bottom, f.y), 0.0, 1.0);
    if EDGE {
        let lo = params.edge_lo;
        let hi = params.edge_hi;
        if hi > lo {
            m = smoothstep(lo, hi, m);
        } else {
            m = select(0.0, 1.0, m >= lo);
        }
    }
    return m;
}

fn bg_rgb(p: vec2<i32>) -> vec3<f32> {
    return textureLoad(bg, p, 0).rgb * 255.0;
}

// The background image stretched over the frame, bilinear.
fn bg_scaled(p: vec2<i32>, size: vec2<i32>) -> vec3<f32> {
    let bsize = vec2<i32>(textureDimensions(bg));
    let pos = (vec2<f32>(p) + 0.5) * vec2<f32>(bsize) / vec2<f32>(size) - 0.5;
    let q = clamp(pos, vec2<f32>(0.0), vec2<f32>(bsize - 1));
    let q0 = vec2<i32>(floor(q));
    let q1 = min(q0 + 1, bsize - 1);
    let f = q - vec2<f32>(q0);
    let top = mix(bg_rgb(q0), bg_rgb(vec2<i32>(q1.x, q0.y)), f.x);
    let bottom = mix(bg_rgb(vec2<i32>(q0.x, q1.y)), bg_rgb(q1), f.x);
    return mix(top, bottom, f.y);
}

// The blurred frame at pixel p: bilinear between the samples k apart around
// it (the last sample is at or past the frame's last pixel; the clamp only
// guards the texture's edge). Weights (p mod k) / k are exact fractions of
// integers, as `video::cpu` computes them.
fn bg_blurred(p: vec2<i32>) -> vec3<f32> {
    let k = i32(params.blur_step);
    if k == 1 {
        return bg_rgb(p);
    }
    let last = vec2<i32>(textureDimensions(bg)) - 1;
    let q0 = min(p / k, last);
    let q1 = min(q0 + 1, last);
    let f = vec2<f32>(p % k) / f32(k);
    let top = mix(bg_rgb(q0), bg_rgb(vec2<i32>(q1.x, q0.y)), f.x);
    let bottom = mix(bg_rgb(vec2<i32>(q0.x, q1.y)), bg_rgb(q1), f.x);
    return mix(top, bottom, f.y);
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let size = frame_size();
    let p = vec2<i32>(id.xy);
    if any(p >= size) {
        return;
    }
    let fg = frame_rgb(p);
    let m = person(p, size);
    var rgb = fg;
    var alpha = 1.0;
    switch EFFECT {
        case 1u: {
            rgb = vec3<f32>(m * 255.0);
        }
        case 2u: {
            rgb = mix(params.bg.rgb, fg, m);
            alpha = mix(params.bg.a, 1.0, m);
        }
        case 3u: {
            rgb = mix(bg_scaled(p, size), fg, m);
        }
        case 4u: {
            rgb = mix(bg_blurred(p), fg, m);
        }
        default: {}
    }
    textureStore(out, p, vec4<f32>(rgb / 255.0, alpha));
}
