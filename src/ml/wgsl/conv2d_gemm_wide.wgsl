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
// params: as conv2d_gemm.wgsl. WG must be 256.

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

const TM: u32 = 128u;
const TN: u32 = 64u;
const TK: u32 = 16u;

var<workgroup> tile_a: array<vec4<f32>, 512>; // [k][pixel / 4], TK x TM
var<workgroup> tile_b: array<vec4<f32>, 256>; // [k][channel / 4], TK x TN

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let npix = params[0];
    let ohw = params[2];
    let ow = params[3];
    let icg = params[7];
    let pt = i32(params[14]);
    let pl = i32(params[15]);
    let ocg = params[16];
    let xs = vec4<u32>(params[17], params[18], params[19], params[20]);
    let fs = vec4<u32>(params[21], params[22], params[23], params[24]);
    let kdim = params[25];
    let g = wid.z;
    let channel_tiles = params[26];
    let p0 = (wid.x + (wid.y / channel_tiles) * nwg.x) * TM;
    let m0 = (wid.y % channel_tiles) * TN;

    // Loading role for A: pixel column `acol`, reduction rows arow0 .. +7.
    let acol = lid % TM;
    let arow0 = (lid / TM) * 8u;
    let p = p0 + acol;
    p_ok = p < npix;
    let r = p % ohw;
    iy0 = i32((r / ow) * params[10]) - pt;
    ix0 = i32((r % ow) * params[11]) - pl;
    c0 = g * icg;
    xbase = (p / ohw) * xs.x + c0 * xs.y;
    // Loading role for B: channel column `bcol`, reduction rows brow0 .. +3.
    let bcol = lid % TN;
    let brow0 = (lid / TN) * 4u;
    let mm = m0 + bcol;
    m_ok = mm < ocg;
    fbase = (g * ocg + mm) * fs.x;

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

    var na0 = load_a4(arow0);
    var na1 = load_a4(arow0 + 4u);
    var nb = load_b4(brow0);
    for (var k0 = 0u; k0 < kdim; k0 += TK) {
        for (var q = 0u; q < 4u; q++) {
            tile_a[(arow0 + q) * 32u + acol / 4u][acol % 4u] = na0[q];
            tile_a[(arow0 + 4u + q) * 32u + acol / 4u][acol % 4u] = na1[q];
            tile_b[(brow0 + q) * 16u + bcol / 4u][bcol % 4u] = nb[q];
        }
        workgroupBarrier();
        if k0 + TK < kdim {
            na0 = load_a4(k0 + TK + arow0);
            na1 = load_a4(k0 + TK + arow0 + 4u);
            nb = load_b4(k0 + TK + brow0);
        }
        for (var kl = 0u; kl < TK; kl++) {
            let a0 = tile_a[kl * 32u + tx];
            let a1 = tile_a[kl * 32u + 16u + tx];
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
    store(pa, m, g, acc0);
    store(pa + 1u, m, g, acc1);
    store(pa + 2u, m, g, acc2);
    store(pa + 3u, m, g, acc3);
    store(pb, m, g, acc4);
    store(pb + 1u, m, g, acc5);
    store(pb + 2u, m, g, acc6);
    store(pb + 3u, m, g, acc7);
}

// Writes output pixel `pp`, channels m .. m + 3 of group g.
fn store(pp: u32, m: u32, g: u32, v: vec4<f32>) {
    let npix = params[0];
    let oc = params[1];
    let ohw = params[2];
    let ocg = params[16];
    if pp >= npix {
        return;
    }
    let nhwc = params[4] != 0u;
    let n = pp / ohw;
    let rr = pp % ohw;
    for (var j = 0u; j < 4u; j++) {
        let mj = m + j;
        if mj < ocg {
            let mo = g * ocg + mj;
            let at = select((n * oc + mo) * ohw + rr, pp * oc + mo, nhwc);
            y[at] = T(act(v[j] + bias(mo) + residual(at)));
        }
    }
}
