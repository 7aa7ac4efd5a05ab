// Image tensor (f32 NHWC [1, in_h, in_w, 3], values nominally 0..255, e.g. a
// super-resolution model's output) -> a region of an RGBA8 texture, clamped
// and opaque. When the region is larger than the tensor, the tensor is
// resampled bicubically (Keys, a = -0.5, half-pixel centres, edges clamped):
// the "bicubic" half of a super-resolution comparison. At equal sizes the
// cubic weights are (0, 1, 0, 0), so the copy is exact. No switches: every
// size is a value in `params`, so one pipeline serves every size.

struct Params {
    // Tensor size, and the region's first column and size. With `whole` = 1
    // these are unused: tensor and region are the output texture's size, so
    // one params buffer serves every whole-texture write.
    in_w: u32,
    in_h: u32,
    x0: u32,
    out_w: u32,
    out_h: u32,
    whole: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var out: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(2) var<uniform> params: Params;

fn texel(x: i32, y: i32, in_size: vec2<u32>) -> vec3<f32> {
    let cx = u32(clamp(x, 0, i32(in_size.x) - 1));
    let cy = u32(clamp(y, 0, i32(in_size.y) - 1));
    let i = (cy * in_size.x + cx) * 3u;
    return vec3<f32>(src[i], src[i + 1u], src[i + 2u]);
}

fn cubic(t: f32) -> vec4<f32> {
    // Weights of the taps at -1, 0, 1, 2 for a sample t in [0, 1) past tap 0.
    let a = -0.5;
    let t2 = t * t;
    let t3 = t2 * t;
    return vec4<f32>(
        a * t3 - 2.0 * a * t2 + a * t,
        (a + 2.0) * t3 - (a + 3.0) * t2 + 1.0,
        -(a + 2.0) * t3 + (2.0 * a + 3.0) * t2 - a * t,
        -a * t3 + a * t2,
    );
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    var in_size = vec2<u32>(params.in_w, params.in_h);
    var out_size = vec2<u32>(params.out_w, params.out_h);
    var x0 = params.x0;
    if params.whole != 0u {
        in_size = textureDimensions(out);
        out_size = in_size;
        x0 = 0u;
    }
    if id.x >= out_size.x || id.y >= out_size.y {
        return;
    }
    var rgb: vec3<f32>;
    if all(in_size == out_size) {
        rgb = texel(i32(id.x), i32(id.y), in_size);
    } else {
        let sx = (f32(id.x) + 0.5) * f32(in_size.x) / f32(out_size.x) - 0.5;
        let sy = (f32(id.y) + 0.5) * f32(in_size.y) / f32(out_size.y) - 0.5;
        let fx = floor(sx);
        let fy = floor(sy);
        let wx = cubic(sx - fx);
        let wy = cubic(sy - fy);
        let bx = i32(fx) - 1;
        let by = i32(fy) - 1;
        rgb = vec3<f32>(0.0);
        for (var j = 0; j < 4; j++) {
            let row = texel(bx, by + j, in_size) * wx.x + texel(bx + 1, by + j, in_size) * wx.y
                + texel(bx + 2, by + j, in_size) * wx.z + texel(bx + 3, by + j, in_size) * wx.w;
            rgb += row * wy[j];
        }
    }
    let c = clamp(rgb / 255.0, vec3<f32>(0.0), vec3<f32>(1.0));
    textureStore(out, vec2<u32>(x0 + id.x, id.y), vec4<f32>(c, 1.0));
}
