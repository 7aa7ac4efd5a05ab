// 2-D pooling, one output element per invocation. `INIT`, `accumulate` and
// `finish` (average or max) are generated per kind.
// params: [total, c, oh, ow, nhwc, h, w, kh, kw, stride_h, stride_w,
//          dilation_h, dilation_w, pad_top, pad_left, input strides (n, c, h, w)]

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params[0] {
        return;
    }
    let c = params[1];
    let oh = params[2];
    let ow = params[3];
    var ch: u32;
    var oy: u32;
    var ox: u32;
    var n: u32;
    if params[4] != 0u {
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
    let h = i32(params[5]);
    let w = i32(params[6]);
    let kh = params[7];
    let kw = params[8];
    let sh = params[9];
    let sw = params[10];
    let dh = params[11];
    let dw = params[12];
    let pt = i32(params[13]);
    let pl = i32(params[14]);
    let xs = vec4<u32>(params[15], params[16], params[17], params[18]);
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
    y[i] = T(act(finish(acc, count)));
}
