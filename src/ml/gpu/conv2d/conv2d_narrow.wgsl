// conv2d with few output channels (one group): one invocation per output
// pixel computing OCG of them in registers, so that each input value is
// loaded once per pixel and tap instead of once per output channel (up to
// 8 of them: wider outputs measured slower here than on the GEMM kernels
// on an H100, conv2d.rs).
// Params: conv2d_params.wgsl. The specialisation declares the input binding
// with `fn load4(o, c)`, the input's channels c..c+3 from element offset o
// of channel c (one vector load where the channels are adjacent and a
// multiple of 4, four strided loads otherwise), and `fn load1(o, c)`, one
// channel; both scaled by any fused input scale. The filter comes as the
// table `wt` (conv2d.rs's `narrow_filter`): per tap and input channel a row
// of params.ocp values (OCG rounded up to 4, zero past it), so that one
// vector load serves four output channels.
// A fused nearest upsample (params.upsample) maps each input coordinate
// the window reaches to the pixel it replicates.
// The invocation index is the output pixel in (n, y, x) order, so
// neighbouring invocations read neighbouring input pixels in either layout.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = flat_id(gid, nwg);
    if p >= params.pixels {
        return;
    }
    let ow = params.ow;
    let oh = params.oh;
    let ox = p % ow;
    let r = p / ow;
    let oy = r % oh;
    let n = r / oh;
    let h = i32(params.h);
    let w = i32(params.w);
    let icg = params.icg;
    let kh = params.filter_size.x;
    let kw = params.filter_size.y;
    let pt = i32(params.padding.x);
    let pl = i32(params.padding.y);
    let xs = params.x_strides;
    // Lanes past the last channel (zero in the table) read its bias and
    // are not written.
    let last = OCG - 1u;
    // Channels past the last multiple of 4 go one at a time.
    let icg4 = icg & ~3u;
    // Table rows in vectors.
    let rows = params.ocp / 4u;
    var acc: array<vec4<f32>, OCG4>;
    for (var j = 0u; j < OCG4; j++) {
        let c = 4u * j;
        acc[j] = vec4<f32>(bias(min(c, last)), bias(min(c + 1u, last)),
            bias(min(c + 2u, last)), bias(min(c + 3u, last)));
    }
    for (var ky = 0u; ky < kh; ky++) {
        let iy = i32(oy * params.stride.x + ky * params.dilation.x) - pt;
        if iy < 0 || iy >= h {
            continue;
        }
        for (var kx = 0u; kx < kw; kx++) {
            let ix = i32(ox * params.stride.y + kx * params.dilation.y) - pl;
            if ix < 0 || ix >= w {
                continue;
            }
            let xo = n * xs.x + u32(iy) / params.upsample.x * xs.z
                + u32(ix) / params.upsample.y * xs.w;
            let to = (ky * kw + kx) * icg * rows;
            for (var ci = 0u; ci < icg4; ci += 4u) {
                let v = load4(xo + ci * xs.y, ci);
                let t = to + ci * rows;
                for (var j = 0u; j < OCG4; j++) {
                    acc[j] += v.x * wt[t + j] + v.y * wt[t + rows + j]
                        + v.z * wt[t + 2u * rows + j] + v.w * wt[t + 3u * rows + j];
                }
            }
            for (var ci = icg4; ci < icg; ci++) {
                let v = load1(xo + ci * xs.y, ci);
                let t = to + ci * rows;
                for (var j = 0u; j < OCG4; j++) {
                    acc[j] += v * wt[t + j];
                }
            }
        }
    }
    // NHWC: the pixel's channels are adjacent; NCHW: one plane per channel.
    let q = p % params.ohw;
    for (var m = 0u; m < OCG; m++) {
        var i = p * params.oc + m;
        if params.nhwc == 0u {
            i = (n * params.oc + m) * params.ohw + q;
        }
        y[i] = T(finish(acc[m / 4u][m % 4u], residual(i)));
    }
}
