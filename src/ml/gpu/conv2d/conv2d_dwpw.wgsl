// A depthwise conv2d and the 1x1 conv2d that alone reads it, as one implicit
// GEMM (the mapping of conv2d_gemm.wgsl): rows are output pixels, columns
// the pointwise output channels, and the reduction runs over the depthwise
// channels, whose values the A loader computes as it stages them (with the
// depthwise bias, input scale and activations), so the depthwise result is
// never written. A workgroup of 256 computes a 64 x 64 tile, each
// invocation a 4 x 4 block; each depthwise value is computed once per
// channel tile, and the pointwise layers this fuses have few output
// channels (one tile). Params: conv2d_dwpw.rs. WG must be 256.
//
// With SPLITS > 1 (a small map: 14x14 makes 8 tiles, each walking all the
// depthwise channels) the reduction is cut into SPLITS runs of whole
// slices, one workgroup each (grid z), and `store` writes partial sums
// for conv2d_gemm_sum.wgsl (conv2d_gemm_split.rs); otherwise it is the
// epilogue. The lowering sets SPLITS and store.

struct Params {
    // Element strides of the input in (n, c, h, w) order and of the
    // depthwise filter in (o, i, h, w) order, whatever the layouts.
    x_strides: vec4<u32>,
    f_strides: vec4<u32>,
    // The depthwise conv's (y, x) pairs; padding is (top, left).
    stride: vec2<u32>,
    dilation: vec2<u32>,
    padding: vec2<u32>,
    filter_size: vec2<u32>,
    // Output pixels, n * oh * ow (the GEMM rows).
    pixels: u32,
    // Pointwise output channels (the columns).
    oc: u32,
    // Depthwise output channels (the reduction), and how many of them each
    // input channel feeds.
    c: u32,
    mult: u32,
    ow: u32,
    ohw: u32,
    // 1 where input and output are NHWC.
    nhwc: u32,
    h: u32,
    w: u32,
    // The pointwise filter's element strides of an output and an input channel.
    pw_so: u32,
    pw_si: u32,
    // Channel tiles (the grid's y is pixel tiles past 65535 times these).
    channel_tiles: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> dwf: array<TI>;

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 16u;

var<workgroup> tile_a: array<f32, 1024>; // [k][pixel], TK x TM
var<workgroup> tile_b: array<f32, 1024>; // [k][channel], TK x TN

// Depthwise channel m at the pixel whose window starts at (iy0, ix0) of the
// image at xb.
fn depthwise(xb: u32, iy0: i32, ix0: i32, m: u32) -> f32 {
    let ci = m / params.mult;
    let xs = params.x_strides;
    let fs = params.f_strides;
    let at = xb + ci * xs.y;
    let fb = m * fs.x;
    let h = i32(params.h);
    let w = i32(params.w);
    let dh = i32(params.dilation.x);
    let dw = i32(params.dilation.y);
    var acc = 0.0;
    for (var ky = 0u; ky < params.filter_size.x; ky++) {
        let iy = iy0 + i32(ky) * dh;
        if iy < 0 || iy >= h {
            continue;
        }
        for (var kx = 0u; kx < params.filter_size.y; kx++) {
            let ix = ix0 + i32(kx) * dw;
            if ix < 0 || ix >= w {
                continue;
            }
            acc += f32(x[at + u32(iy) * xs.z + u32(ix) * xs.w]) * f32(dwf[fb + ky * fs.z + kx * fs.w]);
        }
    }
    // A scale of the input channel scales the whole sum.
    return act_dw(acc * in_scale(ci) + dw_bias(m));
}

// This workgroup's run of the reduction (0 without splits).
var<private> split: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let channel_tiles = params.channel_tiles;
    let p0 = (wid.x + (wid.y / channel_tiles) * nwg.x) * TM;
    let m0 = (wid.y % channel_tiles) * TN;
    let c = params.c;
    split = wid.z;
    // Whole slices a run; the last may be shorter.
    let run = ((c + TK - 1u) / TK + SPLITS - 1u) / SPLITS * TK;
    let k_begin = split * run;
    let k_end = min(c, k_begin + run);

    // Loading role: column `col` of both tiles, rows row0 .. row0 + 3.
    let col = lid % TM;
    let row0 = (lid / TM) * 4u;
    let p = p0 + col;
    let p_ok = p < params.pixels;
    let r = p % params.ohw;
    let iy0 = i32((r / params.ow) * params.stride.x) - i32(params.padding.x);
    let ix0 = i32((r % params.ow) * params.stride.y) - i32(params.padding.y);
    let xb = (p / params.ohw) * params.x_strides.x;
    let mm = m0 + col;
    let m_ok = mm < params.oc;

    // Computing role: pixels tx + 16 i, channels ty + 16 j, in vec4
    // registers (never an indexed array: see conv2d_gemm.wgsl).
    let tx = lid % 16u;
    let ty = lid / 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);

    for (var k0 = k_begin; k0 < k_end; k0 += TK) {
        for (var q = 0u; q < 4u; q++) {
            let row = row0 + q;
            let k = k0 + row;
            var a = 0.0;
            var b = 0.0;
            if k < k_end {
                if p_ok {
                    a = depthwise(xb, iy0, ix0, k);
                }
                if m_ok {
                    b = pw_weight(mm * params.pw_so + k * params.pw_si);
                }
            }
            tile_a[row * TM + col] = a;
            tile_b[row * TN + col] = b;
        }
        workgroupBarrier();
        for (var kl = 0u; kl < TK; kl++) {
            let ra = kl * TM + tx;
            let rb = kl * TN + ty;
            let av = vec4<f32>(tile_a[ra], tile_a[ra + 16u], tile_a[ra + 32u], tile_a[ra + 48u]);
            let bv = vec4<f32>(tile_b[rb], tile_b[rb + 16u], tile_b[rb + 32u], tile_b[rb + 48u]);
            acc0 += av.x * bv;
            acc1 += av.y * bv;
            acc2 += av.z * bv;
            acc3 += av.w * bv;
        }
        workgroupBarrier();
    }

    for (var j = 0u; j < 4u; j++) {
        let mj = m0 + ty + 16u * j;
        store(p0 + tx, mj, acc0[j]);
        store(p0 + tx + 16u, mj, acc1[j]);
        store(p0 + tx + 32u, mj, acc2[j]);
        store(p0 + tx + 48u, mj, acc3[j]);
    }
}
