// convTranspose2d, gather form, one output element per invocation.
// Input pixel iy scatters onto output row iy * stride + ky * dilation - pad,
// so output row oy gathers from iy = (oy + pad - ky * dilation) / stride
// where that division is exact.

// Mirrored by `Params` in conv_transpose2d.rs. Layouts come as element
// strides, as for conv2d.
struct Params {
    // Input strides in (n, c, h, w) order, filter strides in (i, o, h, w).
    x_strides: vec4<u32>,
    f_strides: vec4<u32>,
    // (y, x) pairs.
    stride: vec2<u32>,
    dilation: vec2<u32>,
    // (top, left)
    padding: vec2<u32>,
    // (kh, kw)
    filter_size: vec2<u32>,
    // Output elements.
    total: u32,
    oc: u32,
    // Output channels per group.
    ocg: u32,
    oh: u32,
    ow: u32,
    // 1 where input and output are NHWC.
    nhwc: u32,
    h: u32,
    w: u32,
    // Input channels per group.
    icg: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.total {
        return;
    }
    let oc = params.oc;
    let oh = params.oh;
    let ow = params.ow;
    var m: u32;
    var oy: u32;
    var ox: u32;
    var n: u32;
    if params.nhwc != 0u {
        m = i % oc;
        let r = i / oc;
        ox = r % ow;
        oy = (r / ow) % oh;
        n = r / (ow * oh);
    } else {
        ox = i % ow;
        let r = i / ow;
        oy = r % oh;
        m = (r / oh) % oc;
        n = r / (oh * oc);
    }
    let h = i32(params.h);
    let w = i32(params.w);
    let icg = params.icg;
    let kh = params.filter_size.x;
    let kw = params.filter_size.y;
    let sh = i32(params.stride.x);
    let sw = i32(params.stride.y);
    let dh = params.dilation.x;
    let dw = params.dilation.y;
    let pt = params.padding.x;
    let pl = params.padding.y;
    let ocg = params.ocg;
    let xs = params.x_strides;
    let fs = params.f_strides;
    let g = m / ocg;
    let xbase = n * xs.x + g * icg * xs.y;
    let fbase = g * icg * fs.x + (m % ocg) * fs.y;
    var acc = bias(m);
    for (var ky = 0u; ky < kh; ky++) {
        let ty = i32(oy + pt) - i32(ky * dh);
        if ty < 0 || ty % sh != 0 {
            continue;
        }
        let iy = ty / sh;
        if iy >= h {
            continue;
        }
        for (var kx = 0u; kx < kw; kx++) {
            let tx = i32(ox + pl) - i32(kx * dw);
            if tx < 0 || tx % sw != 0 {
                continue;
            }
            let ix = tx / sw;
            if ix >= w {
                continue;
            }
            let xo = xbase + u32(iy) * xs.z + u32(ix) * xs.w;
            let fo = fbase + ky * fs.z + kx * fs.w;
            for (var ci = 0u; ci < icg; ci++) {
                acc += f32(x[xo + ci * xs.y]) * f32(filt[fo + ci * fs.x]);
            }
        }
    }
    y[i] = T(act(acc));
}
