// 2-D pooling, one output element per invocation. `INIT`, `accumulate` and
// `finish` (average or max) are generated per kind (reduce.rs `reduction`).

// Mirrored by `Params` in pool2d.rs.
struct Params {
    // Input element strides in (n, c, h, w) order, whatever the layout.
    x_strides: vec4<u32>,
    // (y, x) pairs.
    stride: vec2<u32>,
    dilation: vec2<u32>,
    // (top, left)
    padding: vec2<u32>,
    // (kh, kw)
    window: vec2<u32>,
    // Output elements.
    total: u32,
    c: u32,
    oh: u32,
    ow: u32,
    // 1 where input and output are NHWC.
    nhwc: u32,
    h: u32,
    w: u32,
    // 1 where averages divide by the window's taps inside input + padding.
    include_pad: u32,
    // Input + padding extents (h, w).
    padded: vec2<u32>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

// Of a window's k taps from `start`, `dilation` apart, those before `end`.
fn taps_before(start: u32, k: u32, dilation: u32, end: u32) -> u32 {
    if start >= end {
        return 0u;
    }
    return min(k, (end - 1u - start) / dilation + 1u);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.total {
        return;
    }
    let c = params.c;
    let oh = params.oh;
    let ow = params.ow;
    var ch: u32;
    var oy: u32;
    var ox: u32;
    var n: u32;
    if params.nhwc != 0u {
        ch = i % c;
        let r = i / c;
        ox = r % ow;
        oy = (r / ow) % oh;
        n = r / (ow * oh);
    } else {
        ox = i % ow;
        let r = i / ow;
        oy = r % oh;
        ch = (r / oh) % c;
        n = r / (oh * c);
    }
    let h = i32(params.h);
    let w = i32(params.w);
    let kh = params.window.x;
    let kw = params.window.y;
    let sh = params.stride.x;
    let sw = params.stride.y;
    let dh = params.dilation.x;
    let dw = params.dilation.y;
    let pt = i32(params.padding.x);
    let pl = i32(params.padding.y);
    let xs = params.x_strides;
    let base = n * xs.x + ch * xs.y;
    var acc = INIT;
    var count = 0u;
    for (var ky = 0u; ky < kh; ky++) {
        let iy = i32(oy * sh + ky * dh) - pt;
        if iy < 0 || iy >= h {
            continue;
        }
        for (var kx = 0u; kx < kw; kx++) {
            let ix = i32(ox * sw + kx * dw) - pl;
            if ix < 0 || ix >= w {
                continue;
            }
            acc = accumulate(acc, f32(x[base + u32(iy) * xs.z + u32(ix) * xs.w]));
            count++;
        }
    }
    if params.include_pad != 0u {
        count = taps_before(oy * sh, kh, dh, params.padded.x) * taps_before(ox * sw, kw, dw, params.padded.y);
    }
    y[i] = T(act(finish(acc, count)));
}
