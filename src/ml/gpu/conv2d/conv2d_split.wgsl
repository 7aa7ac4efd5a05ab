// conv2d with few output channels (one group, up to 16) over a long
// reduction, NHWC with input channels in runs of 4 (conv2d_split.rs says
// when it is chosen): the reduction is split over L lanes.
//
// conv2d_narrow.wgsl gives each invocation one output pixel and walks its
// channels: neighbouring invocations read 16 bytes each from pixels 256
// bytes apart (64 channels), so a subgroup's vec4 load touches 32 cache
// lines, and it reloads the filter for every input vec4 (5 loads per 16
// multiply-adds). Here:
// - L lanes share a group of P output pixels: lane l reads channel runs l,
//   l + L, ... of each pixel, so the L lanes' loads of one pixel are one
//   contiguous run (16 lanes x 16 bytes: a 64-channel float32 pixel in two
//   whole cache lines).
// - For each tap a lane loads its filter slice once (4 rows of OCG4 vec4:
//   its 4 channels x the outputs) and applies it to its P pixels, so loads
//   per multiply-add drop from 5 per 16 to (P + 4 OCG4) per 16 P OCG4.
// - The lanes' partial sums meet in workgroup memory (rows of L + 1 vec4s,
//   so that neither the lanes' stores nor the summing reads share banks);
//   one invocation per output vec4 sums them and writes its channels, so
//   the output is written in adjacent runs. Subgroup operations would
//   avoid the round trip, but their width differs between adapters
//   (lavapipe's is not NVIDIA's 32) and the sums are a small part of the
//   work (L OCG4 vec4 per pixel against icg kh kw OCG multiply-adds).
//
// The input is bound as vec4s: every offset is a multiple of 4 elements
// (icg % 4 == 0, NHWC). The filter comes as the table `wt`
// (conv2d_split.rs's `split_filter`): for tap t, channel-in-run r (0..3),
// output vec4 j and channel run c4, the vec4 at ((t * 4 + r) * OCG4 + j) *
// icg4 + c4 holds output channels 4 j .. 4 j + 3 of input channel
// 4 c4 + r, so that the L lanes' loads of it are contiguous too.
//
// Set by the lowering: OCG (output channels), OCG4 (in vec4s), P (pixels a
// lane group computes), L (lanes sharing a pixel, a power of 2 dividing WG),
// RED (the workgroup's partial sums, WG / L * P * OCG4 * (L + 1) vec4s),
// ROW (a group's pixels share their input rows: see main), KW (the
// filter's width, with ROW) and RUN (P + KW - 1).
// Params: conv2d_params.wgsl.

@group(0) @binding(1) var<storage, read> x: array<vec4<TI>>;

// Lane groups of a workgroup, and partial-sum vec4s of a group.
const G: u32 = WG / L;
const PO: u32 = P * OCG4;
var<workgroup> red: array<vec4<f32>, RED>;

const NONE: u32 = 0xffffffffu;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lane = lid % L;
    let grp = lid / L;
    // The workgroup's first output pixel (the grid folds past 65535).
    let w0 = (wid.x + wid.y * nwg.x) * (G * P);
    let p0 = w0 + grp * P;
    let xs = params.x_strides / 4u;
    // Each pixel's window origin and image offset (vec4s; NONE past the
    // last pixel).
    var iy0: array<i32, P>;
    var ix0: array<i32, P>;
    var base: array<u32, P>;
    for (var i = 0u; i < P; i++) {
        let p = p0 + i;
        let r = p % params.ohw;
        iy0[i] = i32((r / params.ow) * params.stride.x) - i32(params.padding.x);
        ix0[i] = i32((r % params.ow) * params.stride.y) - i32(params.padding.y);
        base[i] = select(NONE, (p / params.ohw) * xs.x, p < params.pixels);
    }
    let icg4 = params.icg / 4u;
    let kh = params.filter_size.x;
    let kw = params.filter_size.y;
    var acc: array<vec4<f32>, PO>;
    for (var c4 = lane; c4 < icg4; c4 += L) {
        let c = 4u * c4;
        let s = vec4<f32>(in_scale(c), in_scale(c + 1u), in_scale(c + 2u), in_scale(c + 3u));
        if ROW {
            // The group's P pixels are adjacent in one output row (stride
            // and dilation 1 along x, ow a multiple of P), so the window
            // row of tap kx for pixel i is the row of tap 0 for pixel
            // i + kx: P + KW - 1 loads serve the KW taps of a filter row
            // (3x3: 10 instead of 24 for P = 8).
            for (var ky = 0u; ky < kh; ky++) {
                let iy = iy0[0] + i32(ky * params.dilation.x);
                let row_in = base[0] != NONE && u32(iy) < params.h;
                var u: array<vec4<f32>, RUN>;
                for (var q = 0u; q < RUN; q++) {
                    let ix = ix0[0] + i32(q);
                    u[q] = vec4<f32>(0.0);
                    if row_in && u32(ix) < params.w {
                        u[q] = vec4<f32>(x[base[0] + u32(iy) * xs.z + u32(ix) * xs.w + c4]) * s;
                    }
                }
                for (var kx = 0u; kx < KW; kx++) {
                    let t = (ky * KW + kx) * 4u * OCG4;
                    for (var j = 0u; j < OCG4; j++) {
                        let w0 = wt[(t + j) * icg4 + c4];
                        let w1 = wt[(t + OCG4 + j) * icg4 + c4];
                        let w2 = wt[(t + 2u * OCG4 + j) * icg4 + c4];
                        let w3 = wt[(t + 3u * OCG4 + j) * icg4 + c4];
                        for (var i = 0u; i < P; i++) {
                            let v = u[i + kx];
                            acc[i * OCG4 + j] += v.x * w0 + v.y * w1 + v.z * w2 + v.w * w3;
                        }
                    }
                }
            }
            continue;
        }
        for (var ky = 0u; ky < kh; ky++) {
            let dy = i32(ky * params.dilation.x);
            for (var kx = 0u; kx < kw; kx++) {
                let dx = i32(kx * params.dilation.y);
                var v: array<vec4<f32>, P>;
                for (var i = 0u; i < P; i++) {
                    let iy = iy0[i] + dy;
                    let ix = ix0[i] + dx;
                    v[i] = vec4<f32>(0.0);
                    if base[i] != NONE && u32(iy) < params.h && u32(ix) < params.w {
                        v[i] = vec4<f32>(x[base[i] + u32(iy) * xs.z + u32(ix) * xs.w + c4]) * s;
                    }
                }
                let t = (ky * kw + kx) * 4u * OCG4;
                for (var j = 0u; j < OCG4; j++) {
                    let w0 = wt[(t + j) * icg4 + c4];
                    let w1 = wt[(t + OCG4 + j) * icg4 + c4];
                    let w2 = wt[(t + 2u * OCG4 + j) * icg4 + c4];
                    let w3 = wt[(t + 3u * OCG4 + j) * icg4 + c4];
                    for (var i = 0u; i < P; i++) {
                        acc[i * OCG4 + j] += v[i].x * w0 + v[i].y * w1 + v[i].z * w2
                            + v[i].w * w3;
                    }
                }
            }
        }
    }
    for (var k = 0u; k < PO; k++) {
        red[(grp * PO + k) * (L + 1u) + lane] = acc[k];
    }
    workgroupBarrier();
    // Output vec4 o of the workgroup: pixel w0 + o / OCG4, channels
    // 4 (o % OCG4) ..; lanes past OCG (zero in the table) are not written.
    for (var o = lid; o < G * PO; o += WG) {
        let p = w0 + o / OCG4;
        if p >= params.pixels {
            continue;
        }
        var sum = vec4<f32>(0.0);
        for (var l = 0u; l < L; l++) {
            sum += red[o * (L + 1u) + l];
        }
        let m0 = 4u * (o % OCG4);
        for (var q = 0u; q < 4u; q++) {
            let m = m0 + q;
            if m < OCG {
                let at = p * params.oc + m;
                y[at] = T(finish(sum[q] + bias(m), residual(at)));
            }
        }
    }
}
