// conv2d's split reduction, second pass (see conv2d_gemm.wgsl): one
// invocation per output element adds its SPLITS partial sums, in order
// (part: [split][channel][pixel], pixel = n * ohw + position: the first
// pass's lanes hold adjacent pixels, and here adjacent invocations read
// adjacent partial sums), then the bias, residual and activations, and
// writes it in the output's layout.
// Params: conv2d_params.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat_id(gid, nwg);
    if e >= params.total {
        return;
    }
    var sum = 0.0;
    for (var s = 0u; s < SPLITS; s++) {
        sum += part[s * params.total + e];
    }
    let oc = params.oc;
    let mo = e / params.pixels;
    let pp = e % params.pixels;
    let n = pp / params.ohw;
    let rr = pp % params.ohw;
    let at = select((n * oc + mo) * params.ohw + rr, pp * oc + mo, params.nhwc != 0u);
    y[at] = T(finish(sum + bias(mo), residual(at)));
}
