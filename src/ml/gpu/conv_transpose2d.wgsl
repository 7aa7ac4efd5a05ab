// convTranspose2d, gather form, one output element per invocation.
// params: [total, oc, oh, ow, nhwc, h, w, icg, kh, kw, stride_h, stride_w,
//          dilation_h, dilation_w, pad_top, pad_left, ocg,
//          input strides (n, c, h, w), filter strides (i, o, h, w)]
// Input pixel iy scatters onto output row iy * stride + ky * dilation - pad,
// so output row oy gathers from iy = (oy + pad - ky * dilation) / stride
// where that division is exact.

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params[0] {
        return;
    }
    let oc = params[1];
    let oh = params[2];
    let ow = params[3];
    var m: u32;
    var oy: u32;
    var ox: u32;
    var n: u32;
    if params[4] != 0u {
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
    let h = i32(params[5]);
    let w = i32(params[6]);
    let icg = params[7];
    let kh = params[8];
    let kw = params[9];
    let sh = i32(params[10]);
    let sw = i32(params[11]);
    let dh = params[12];
    let dw = params[13];
    let pt = params[14];
    let pl = params[15];
    let ocg = params[16];
    let xs = vec4<u32>(params[17], params[18], params[19], params[20]);
    let fs = vec4<u32>(params[21], params[22], params[23], params[24]);
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
