// conv2d for small maps over longer reductions: each output element's sum
// split over LANES neighbouring invocations, which take its input channels
// in turn (lane l channels l, l + LANES, ..., so that in NHWC a group's
// loads are one contiguous run), then added up in workgroup memory. The
// direct kernel (conv2d.wgsl) gives each output one invocation, whose loop
// over 96-128 channels waits on each round of loads in turn; a small map has
// too few outputs to hide that: on an H200, selfie's 1x1 128 -> 32 over
// 16x16 took 12 us. Params: conv2d_params.wgsl; the lowering prepends
// LANES (a power of two dividing WG).

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let flat = flat_id(gid, nwg);
    let i = flat / LANES;
    let lane = flat % LANES;
    // Invocations past the output still take part in the sums' barriers.
    let live = i < params.total;
    var acc = 0.0;
    if live {
        let e = output_element(i);
        let n = e.x;
        let m = e.y;
        let oy = e.z;
        let ox = e.w;
        let h = i32(params.h);
        let w = i32(params.w);
        let icg = params.icg;
        let xs = params.x_strides;
        let fs = params.f_strides;
        let xbase = n * xs.x + (m / params.ocg) * icg * xs.y;
        let fbase = m * fs.x;
        let cbase = (m / params.ocg) * icg;
        for (var ky = 0u; ky < params.filter_size.x; ky++) {
            let iy = i32(oy * params.stride.x + ky * params.dilation.x) - i32(params.padding.x);
            if iy < 0 || iy >= h {
                continue;
            }
            for (var kx = 0u; kx < params.filter_size.y; kx++) {
                let ix = i32(ox * params.stride.y + kx * params.dilation.y) - i32(params.padding.y);
                if ix < 0 || ix >= w {
                    continue;
                }
                let xo = xbase + u32(iy) * xs.z + u32(ix) * xs.w;
                let fo = fbase + ky * fs.z + kx * fs.w;
                for (var ci = lane; ci < icg; ci += LANES) {
                    acc += f32(x[xo + ci * xs.y]) * in_scale(cbase + ci) * f32(filt[fo + ci * fs.y]);
                }
            }
        }
    }
    part[lid] = acc;
    for (var s = LANES / 2u; s > 0u; s /= 2u) {
        workgroupBarrier();
        if lane < s {
            part[lid] += part[lid + s];
        }
    }
    if live && lane == 0u {
        let m = output_element(i).y;
        // `store` adds the residual before the activations, or after them
        // (a late residual: conv2d.rs).
        y[i] = T(store(bias(m) + part[lid], i));
    }
}
