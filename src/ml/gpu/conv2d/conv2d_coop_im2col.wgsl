// The first pass of the im2col tensor-core conv2d (coop_im2col.rs): copies
// the patches of a float16 NHWC input that each output pixel reads into
// `xb`, one row of K = kh * kw * icg halves a pixel, taps in filter order
// and each tap's channels in order:
//
//   xb[(p * kh * kw + ky * kw + kx) * icg + c]
//     = x[n, oy * sy + ky * dy - pad top, ox * sx + kx * dx - pad left, c]
//
// for output pixel p = (n, oy, ox), zero outside the image. The
// convolution is then a 1x1 over `xb`'s pixels as one long row, which the
// direct kernel runs in whole runs of pixels however short the output's
// rows are. Every element is written, zeros too: `xb` is a recycled
// scratch buffer. One invocation per 8 channels (16 bytes: the group's
// channels come in runs of 16, so x's strides are multiples of 8).
// Params: conv2d_params.wgsl (the convolution's own); one group.

@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> xb: array<vec4<u32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let u = flat_id(gid, nwg);
    let units = params.icg / 8u;
    let taps = params.filter_size.x * params.filter_size.y;
    if u >= params.pixels * taps * units {
        return;
    }
    let r = u / units;
    let t = r % taps;
    let p = r / taps;
    let n = p / params.ohw;
    let oy = (p / params.ow) % params.oh;
    let ox = p % params.ow;
    let ky = t / params.filter_size.y;
    let kx = t % params.filter_size.y;
    let iy = i32(oy * params.stride.x + ky * params.dilation.x) - i32(params.padding.x);
    let ix = i32(ox * params.stride.y + kx * params.dilation.y) - i32(params.padding.y);
    let inside = iy >= 0 && iy < i32(params.h) && ix >= 0 && ix < i32(params.w);
    let xs = params.x_strides;
    let at = n * xs.x + u32(max(iy, 0)) * xs.z + u32(max(ix, 0)) * xs.w + 8u * (u % units);
    xb[u] = select(vec4<u32>(0u), x[select(0u, at / 8u, inside)], inside);
}
