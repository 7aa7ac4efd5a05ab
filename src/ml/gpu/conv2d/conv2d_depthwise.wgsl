// Depthwise conv2d (one input channel per group, one output per group, no
// fused upsample): one output element per invocation, as the direct kernel
// (conv2d.wgsl), with the filter's KH x KW taps compiled in and no branch
// around a tap: a tap outside the input reads a clamped pixel and adds
// nothing. The loops then unroll and every tap's loads can be in flight at
// once, where the direct kernel's loop waited on each tap's loads in turn
// behind its bounds checks. Small depthwise layers have few invocations to
// hide that latency with: on an H200, selfie's 5x5 over 16x16x128 took 12
// us on the direct kernel. Params: conv2d_params.wgsl; the lowering
// prepends KH and KW.

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
    let xs = params.x_strides;
    let fs = params.f_strides;
    // Group m reads input channel m (icg = ocg = 1).
    let xbase = n * xs.x + m * xs.y;
    let fbase = m * fs.x;
    let scale = in_scale(m);
    let y0 = i32(oy * params.stride.x) - i32(params.padding.x);
    let x0 = i32(ox * params.stride.y) - i32(params.padding.y);
    var acc = bias(m);
    for (var ky = 0u; ky < KH; ky++) {
        let iy = y0 + i32(ky * params.dilation.x);
        let row = xbase + u32(clamp(iy, 0, h - 1)) * xs.z;
        let y_in = iy >= 0 && iy < h;
        for (var kx = 0u; kx < KW; kx++) {
            let ix = x0 + i32(kx * params.dilation.y);
            let v = f32(x[row + u32(clamp(ix, 0, w - 1)) * xs.w]);
            let f = f32(filt[fbase + ky * fs.z + kx * fs.w]);
            acc += select(0.0, v * scale * f, y_in && ix >= 0 && ix < w);
        }
    }
    // `store` adds the residual before the activations, or after them
    // (a late residual: conv2d.rs).
    y[i] = T(store(acc, i));
}
