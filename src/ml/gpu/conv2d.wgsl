// conv2d, one output element per invocation, accumulating in f32.
// Params: conv2d_params.wgsl.
// The invocation index walks the output in memory order (so neighbouring
// invocations write neighbouring addresses in either layout).

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.total {
        return;
    }
    let e = output_element(i);
    let n = e.x;
    let m = e.y;
    let oy = e.z;
    let ox = e.w;
    let h = i32(params.h);
    let w = i32(params.w);
    let icg = params.icg;
    let kh = params.filter_size.x;
    let kw = params.filter_size.y;
    let sh = params.stride.x;
    let sw = params.stride.y;
    let dh = params.dilation.x;
    let dw = params.dilation.y;
    let pt = i32(params.padding.x);
    let pl = i32(params.padding.y);
    let ocg = params.ocg;
    let xs = params.x_strides;
    let fs = params.f_strides;
    let xbase = n * xs.x + (m / ocg) * icg * xs.y;
    let fbase = m * fs.x;
    let cbase = (m / ocg) * icg;
    var acc = bias(m);
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
            let xo = xbase + u32(iy) / params.upsample.x * xs.z + u32(ix) / params.upsample.y * xs.w;
            let fo = fbase + ky * fs.z + kx * fs.w;
            for (var ci = 0u; ci < icg; ci++) {
                acc += f32(x[xo + ci * xs.y]) * in_scale(cbase + ci) * f32(filt[fo + ci * fs.y]);
            }
        }
    }
    // `store` adds the residual before the activations, or after them
    // (a late residual: conv2d.rs).
    y[i] = T(store(acc, i));
}
