// conv2d 1x1 over a short reduction (up to 16 input channels, one group)
// onto outputs in runs of 4, NHWC out (conv2d_pointwise.rs says when it is
// chosen): ESRGAN-slim's 4 -> 64 pieces of a split concat, which add a
// 64-channel residual. Such a conv moves bytes, it hardly multiplies: per
// output vec4 one vec4 of residual in, one out, and ICG multiply-adds. So
// one invocation per output vec4, and a subgroup's invocations are
// neighbouring vec4s of one or two pixels: its residual loads and stores
// are whole contiguous lines, and its input loads fall on the same few
// bytes (served once). A GEMM tile walks a 4-long reduction with its whole
// machinery (0.145 ms for the 960x540 4 -> 64 on an H100, 3x its bytes'
// time at the memory's bandwidth).
// Params: conv2d_params.wgsl (strides: a 1x1 with stride s reads input
// pixel (s oy, s ox)). The specialisation declares the bindings with
// `fn bias4(j)`, `fn residual4(i)` (vec4s; zero where absent), `fn
// load4(o, c)` (input channels c .. c + 3 from element offset o, scaled by
// any fused input scale, zero past icg) and y as vec4s. The filter comes as
// the table `wt` (conv2d.rs's `narrow_filter`): for input channel c a row
// of OC4 vec4s of its output channels, float32. ICG4: input channels in
// runs of 4, rounded up.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    let oc4 = params.oc / 4u;
    if i >= params.pixels * oc4 {
        return;
    }
    let p = i / oc4;
    let j = i % oc4;
    let ox = p % params.ow;
    let r = p / params.ow;
    let oy = r % params.oh;
    let n = r / params.oh;
    let xs = params.x_strides;
    let xo = n * xs.x + oy * params.stride.x * xs.z + ox * params.stride.y * xs.w;
    // The residual first: its load, the one that goes to memory, is then
    // in flight during the sums.
    let res = residual4(i);
    var acc = bias4(j);
    for (var c4 = 0u; c4 < ICG4; c4++) {
        let v = load4(xo, 4u * c4);
        let t = 4u * c4 * oc4 + j;
        acc += v.x * wt[t] + v.y * wt[t + oc4] + v.z * wt[t + 2u * oc4] + v.w * wt[t + 3u * oc4];
    }
    y[i] = vec4<T>(vec4<f32>(finish(acc.x, res.x), finish(acc.y, res.y), finish(acc.z, res.z), finish(acc.w, res.w)));
}
