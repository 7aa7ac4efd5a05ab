// conv2d, one output element per LANES invocations, accumulating in f32.
// Params: conv2d_params.wgsl; the lowering prepends LANES (1, or a power of
// two dividing WG).
// The invocation index walks the output in memory order (so neighbouring
// outputs are written at neighbouring addresses in either layout). With
// LANES > 1 an output's neighbouring invocations take its input channels in
// turn (lane l channels l, l + LANES, ..., so that in NHWC their loads are
// one contiguous run) and their sums are added up in workgroup memory: on
// a small map over many channels one invocation an output waits on each
// round of loads in turn, with too few outputs to hide that (on an H200,
// selfie's 1x1 128 -> 32 over 16x16 took 12 us with one lane).

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
        // The bias once, first, as with one lane.
        if lane == 0u {
            acc = bias(m);
        }
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
        // `store` adds the residual before the activations, or after them
        // (a late residual: conv2d.rs).
        y[i] = T(store(part[lid], i));
    }
}
