// The first pass of the blocked tensor-core conv2d (conv2d_coop_blocked.wgsl):
// copies a float16 NHWC input into `xb`, the layout that kernel reads, with
// the convolution's zero padding written out:
//
//   xb[(((n * CB + cb) * HP + r) * WP + c) * 16 + j]
//     = x[n, r - pad top, c - pad left, channel 16 cb + j of its group]
//
// zero outside the image and past the group's input channels, for CB
// blocks of 16 channels (each group's icg padded to 16, groups in order),
// HP = oh + kh - 1 rows and WP = TP runs + kw - 1 columns (every run of TP
// output pixels of a stride-1 convolution reads inside them). A block of
// A, 16 pixels of a row by 16 channels, is then 512 contiguous bytes.
// Every element is written, zeros too: `xb` is a recycled scratch buffer.
// One invocation per UNIT channels of a pixel (one 16-byte store of 8
// where channels come in runs of 8, else 8 bytes of 4).
// Params: conv2d_params.wgsl; x, xb, UNIT, TP and `load_unit` from
// conv2d_coop_blocked.rs.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let u = flat_id(gid, nwg);
    let g_count = params.oc / params.ocg;
    let icb = (params.icg + 15u) / 16u;
    let cbs = g_count * icb;
    let hp = params.oh + params.filter_size.x - 1u;
    let wp = (params.ow + TP - 1u) / TP * TP + params.filter_size.y - 1u;
    let images = params.pixels / params.ohw;
    let units = 16u / UNIT;
    if u >= images * cbs * hp * wp * units {
        return;
    }
    let pix = u / units;
    let c = pix % wp;
    let r = (pix / wp) % hp;
    let ncb = pix / (wp * hp);
    let cb = ncb % cbs;
    let n = ncb / cbs;
    let g = cb / icb;
    let cl = (cb % icb) * 16u + UNIT * (u % units);
    let iy = i32(r) - i32(params.padding.x);
    let ix = i32(c) - i32(params.padding.y);
    let inside = iy >= 0 && iy < i32(params.h) && ix >= 0 && ix < i32(params.w);
    let xs = params.x_strides;
    let at = n * xs.x + u32(max(iy, 0)) * xs.z + u32(max(ix, 0)) * xs.w + g * params.icg + cl;
    xb[u] = load_unit(at, cl, inside);
}
