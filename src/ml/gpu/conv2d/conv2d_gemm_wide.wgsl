// conv2d as an implicit GEMM for large problems: the same mapping as
// conv2d_gemm.wgsl (rows are output pixels, columns a group's output
// channels, k = (ky * kw + kx) * icg + ci), with a 128-pixel x 64-channel
// tile per 256-invocation workgroup and an 8 x 4 block per invocation. The
// staged slices are rows of vec4, so each step of the reduction is three
// 16-byte workgroup loads for 32 multiply-adds; the 64 x 64 kernel needs
// eight 4-byte loads for 16 and is bound by them on an H100. Each loader
// walks its run of k by carrying ci -> kx -> ky instead of dividing per load,
// and the next slice is fetched into registers before the current one is
// multiplied, so that global-memory latency hides behind the arithmetic.
// Where an input's channels are adjacent in memory (NHWC), the loaders of x
// run along k instead (`ALONG_K`, set by the lowering): invocation lid takes
// reduction row lid % 16 of pixels lid / 16 + 16 j, j = 0..7, so that
// neighbouring invocations read neighbouring channels of one pixel. Walking
// pixels instead, a subgroup's load touched 32 pixels' scattered words, and
// NHWC ran 1.8x slower than NCHW on an H100.
// Params: conv2d_params.wgsl. WG must be 256.

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

const TM: u32 = 128u;
const TN: u32 = 64u;
const TK: u32 = 16u;

// [k][pixel / 4], TK x TM, rows padded to RS vec4s so that the along-k
// loaders' stores (16 rows, 2 pixels) spread over the banks.
const RS: u32 = 33u;
var<workgroup> tile_a: array<vec4<f32>, 528>;
var<workgroup> tile_b: array<vec4<f32>, 256>; // [k][channel / 4], TK x TN

// The along-k loaders' pixels: j = 0..3 in `lo`, 4..7 in `hi`.
var<private> oy_lo: vec4<i32>;
var<private> oy_hi: vec4<i32>;
var<private> ox_lo: vec4<i32>;
var<private> ox_hi: vec4<i32>;
var<private> ob_lo: vec4<u32>;
var<private> ob_hi: vec4<u32>;

fn tap_value(iy: i32, ix: i32, base: u32, ci: u32) -> f32 {
    if base == 0xffffffffu || iy < 0 || iy >= i32(params.h) || ix < 0 || ix >= i32(params.w) {
        return 0.0;
    }
    return f32(x[base + u32(iy) * params.x_strides.z + u32(ix) * params.x_strides.w
        + ci * params.x_strides.y]);
}

struct A8 {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

// x at reduction row k of this invocation's eight along-k pixels.
fn load_a8_along_k(k: u32) -> A8 {
    var r = A8(vec4<f32>(0.0), vec4<f32>(0.0));
    if k >= params.kdim {
        return r;
    }
    let t = tap_of(k, params.icg, params.filter_size.y);
    let s = in_scale(c0 + t.ci);
    let dy = i32(t.ky * params.dilation.x);
    let dx = i32(t.kx * params.dilation.y);
    for (var j = 0u; j < 4u; j++) {
        r.lo[j] = tap_value(oy_lo[j] + dy, ox_lo[j] + dx, ob_lo[j], t.ci) * s;
        r.hi[j] = tap_value(oy_hi[j] + dy, ox_hi[j] + dx, ob_hi[j], t.ci) * s;
    }
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let kdim = params.kdim;
    let g = wid.z;
    let channel_tiles = params.channel_tiles;
    let p0 = (wid.x + (wid.y / channel_tiles) * nwg.x) * TM;
    let m0 = (wid.y % channel_tiles) * TN;

    // Loading role for A, walking pixels: pixel column `acol`, reduction
    // rows arow0 .. +7. Along k: row `krow` of pixels kcol + 16 j.
    let acol = lid % TM;
    let arow0 = (lid / TM) * 8u;
    let krow = lid % 16u;
    let kcol = lid / 16u;
    // Loading role for B: channel column `bcol`, reduction rows brow0 .. +3.
    let bcol = lid % TN;
    let brow0 = (lid / TN) * 4u;
    set_loaders(p0 + acol, g, m0 + bcol);
    if ALONG_K {
        for (var j = 0u; j < 4u; j++) {
            let lo = origin(p0 + kcol + 16u * j);
            let hi = origin(p0 + kcol + 16u * (j + 4u));
            oy_lo[j] = lo.iy;
            ox_lo[j] = lo.ix;
            ob_lo[j] = lo.base;
            oy_hi[j] = hi.iy;
            ox_hi[j] = hi.ix;
            ob_hi[j] = hi.base;
        }
    }
    // Computing role: pixels 4 tx .. 4 tx + 3 and 64 + 4 tx .. + 3,
    // channels 4 ty .. 4 ty + 3; one vec4 (four channels) per pixel.
    let tx = lid % 16u;
    let ty = lid / 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    var acc4 = vec4<f32>(0.0);
    var acc5 = vec4<f32>(0.0);
    var acc6 = vec4<f32>(0.0);
    var acc7 = vec4<f32>(0.0);

    var na0: vec4<f32>;
    var na1: vec4<f32>;
    if ALONG_K {
        let a = load_a8_along_k(krow);
        na0 = a.lo;
        na1 = a.hi;
    } else {
        na0 = load_a4(arow0);
        na1 = load_a4(arow0 + 4u);
    }
    var nb = load_b4(brow0);
    for (var k0 = 0u; k0 < kdim; k0 += TK) {
        for (var q = 0u; q < 4u; q++) {
            if ALONG_K {
                let pa = kcol + 16u * q;
                let pb = kcol + 16u * (q + 4u);
                tile_a[krow * RS + pa / 4u][pa % 4u] = na0[q];
                tile_a[krow * RS + pb / 4u][pb % 4u] = na1[q];
            } else {
                tile_a[(arow0 + q) * RS + acol / 4u][acol % 4u] = na0[q];
                tile_a[(arow0 + 4u + q) * RS + acol / 4u][acol % 4u] = na1[q];
            }
            tile_b[(brow0 + q) * 16u + bcol / 4u][bcol % 4u] = nb[q];
        }
        workgroupBarrier();
        if k0 + TK < kdim {
            if ALONG_K {
                let a = load_a8_along_k(k0 + TK + krow);
                na0 = a.lo;
                na1 = a.hi;
            } else {
                na0 = load_a4(k0 + TK + arow0);
                na1 = load_a4(k0 + TK + arow0 + 4u);
            }
            nb = load_b4(k0 + TK + brow0);
        }
        for (var kl = 0u; kl < TK; kl++) {
            let a0 = tile_a[kl * RS + tx];
            let a1 = tile_a[kl * RS + 16u + tx];
            let bv = tile_b[kl * 16u + ty];
            acc0 += a0.x * bv;
            acc1 += a0.y * bv;
            acc2 += a0.z * bv;
            acc3 += a0.w * bv;
            acc4 += a1.x * bv;
            acc5 += a1.y * bv;
            acc6 += a1.z * bv;
            acc7 += a1.w * bv;
        }
        workgroupBarrier();
    }

    let pa = p0 + 4u * tx;
    let pb = p0 + 64u + 4u * tx;
    let m = m0 + 4u * ty;
    store4(pa, m, 1u, g, acc0);
    store4(pa + 1u, m, 1u, g, acc1);
    store4(pa + 2u, m, 1u, g, acc2);
    store4(pa + 3u, m, 1u, g, acc3);
    store4(pb, m, 1u, g, acc4);
    store4(pb + 1u, m, 1u, g, acc5);
    store4(pb + 2u, m, 1u, g, acc6);
    store4(pb + 3u, m, 1u, g, acc7);
}
