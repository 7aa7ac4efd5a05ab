// conv2d 3x3, stride 1, dilation 1, with a constant filter, as
// Winograd F(2x2, 3x3) (Lavin and Gray, 2016): each 2x2 block of outputs
// ("tile") is A^T [sum over input channels of U (.) V] A, with V = B^T d B
// the tile's 4x4 input patch d transformed here and U = G g G^T the 3x3
// filter g transformed at build (conv2d_winograd.rs). 16 products per
// tile, input and output channel where the direct convolution has 36:
// 2.25x fewer multiply-adds, for a transform of each patch (adds only)
// and of each output tile (adds only).
//
// A workgroup: TR x 8 tiles (2 TR x 16 output pixels) x 64 output
// channels of one group, all 16 Winograd components ("xi" = 4 i + j).
// - The reduction goes in chunks of CK input channels. Per chunk each
//   invocation transforms one (tile, channel) patch into vs, [xi][channel]
//   [tile], then every invocation multiplies: invocation (xi, tg, og)
//   holds 8 tiles (row tg of the block) x 8 output channels of component
//   xi, 64 sums, two vec4 of vs and two of U a channel, as in
//   conv2d_gemm_vec.wgsl's 8 x 8.
// - U is read from memory (read-only, shared by every workgroup, so it
//   stays in L2), two channels ahead of its use; the next chunk's patch is
//   read into registers while this one is multiplied.
// - The epilogue puts the sums back through vs, 16 output channels at a
//   time, and one invocation per (tile, channel) transforms its 16
//   components into the tile's 4 outputs: in NHWC 16 adjacent lanes take
//   a tile's 16 adjacent channels ([xi][tile][channel] in vs), in NCHW
//   adjacent lanes adjacent tiles of one channel ([xi][channel][tile]), so
//   that a subgroup's stores are runs of adjacent addresses either way.
//   Input layouts come as strides (conv2d_params.wgsl).
//
// vs rows are TILES tiles; a row's vec4 columns are swizzled (`col`) so that a
// fill's stores, 8 channels x 4 tiles a subgroup, fall in 32 distinct
// banks, without padding (CK x 16 x TILES floats: 32 KiB at TR 4, the least
// maxComputeSharedMemorySize of the adapters we run on).
//
// Set by the lowering: TR (block rows, 4), WG = 128 TR, NCHW (input and
// output layout); the bindings after x
// (bias, input scale, residual, y as T, the table wt as vec4<f32>).
// Params: conv2d_params.wgsl (ocp: the table's row length, output
// channels per group padded to 64; channel_tiles: ocp / 64).

@group(0) @binding(1) var<storage, read> x: array<TI>;

// Tiles of a block.
const TILES: u32 = TR * 8u;
const CK: u32 = 16u;
// vec4 columns of a vs row.
const Q: u32 = TILES / 4u;
var<workgroup> vs: array<vec4<f32>, 16u * CK * Q>;

// The column holding tiles 4 q .. 4 q + 3 in row (xi, ic). Stores of 8
// consecutive channels at one column then spread over 8 columns' banks
// (TILES 32: a row is 32 banks; 16: two rows are, and ic / 2 varies).
fn col(ic: u32, q: u32) -> u32 {
    return q ^ ((ic * TILES / 32u) % Q);
}

// The fill's patch: its tile's first input row and column (may be
// negative: padding), the image's offset in x, its channel in the chunk
// and its tile in the block.
var<private> fy0: i32;
var<private> fx0: i32;
var<private> fimage: u32;
var<private> fic: u32;
var<private> ft: u32;

fn tap(base: u32, row_ok: bool, k: u32) -> f32 {
    let ix = fx0 + i32(k);
    if row_ok && u32(ix) < params.w {
        return f32(x[base + u32(ix) * params.x_strides.w]);
    }
    return 0.0;
}

// Row r of the patch at input channel c (zero outside the input and past
// the group's channels), times s.
fn patch_row(r: u32, c: u32, c_ok: bool, s: f32) -> vec4<f32> {
    let iy = fy0 + i32(r);
    let ok = c_ok && u32(iy) < params.h;
    let base = fimage + c * params.x_strides.y + u32(iy) * params.x_strides.z;
    let v = vec4<f32>(tap(base, ok, 0u), tap(base, ok, 1u), tap(base, ok, 2u), tap(base, ok, 3u));
    return v * s;
}

struct Patch {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    r3: vec4<f32>,
}

// This invocation's patch at channel fic of chunk `chunk` of group g,
// input-scaled.
fn load_patch(chunk: u32, g: u32) -> Patch {
    let cl = chunk * CK + fic;
    let ok = cl < params.icg;
    // Past the group's channels, the group's first (its rows are zero).
    let c = g * params.icg + select(0u, cl, ok);
    let s = in_scale(c);
    return Patch(patch_row(0u, c, ok, s), patch_row(1u, c, ok, s), patch_row(2u, c, ok, s),
        patch_row(3u, c, ok, s));
}

fn put_v(xi: u32, v: f32) {
    vs[(xi * CK + fic) * Q + col(fic, ft / 4u)][ft % 4u] = v;
}

// Components 4 i .. 4 i + 3 from row i of B^T d: (row) B.
fn put_row(i: u32, t: vec4<f32>) {
    put_v(4u * i, t.x - t.z);
    put_v(4u * i + 1u, t.y + t.z);
    put_v(4u * i + 2u, t.z - t.y);
    put_v(4u * i + 3u, t.y - t.w);
}

// V = B^T d B into vs, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
fn put_patch(d: Patch) {
    put_row(0u, d.r0 - d.r2);
    put_row(1u, d.r1 + d.r2);
    put_row(2u, d.r2 - d.r1);
    put_row(3u, d.r1 - d.r3);
}

// The epilogue's exchange in NHWC: sums of component xi, block tile t,
// channels 8 half .. + 7 of the current 16, at [xi][t][c16].
fn put_sums(xi: u32, t: u32, half: u32, a: vec4<f32>, b: vec4<f32>) {
    let at = (xi * TILES + t) * 4u + half * 2u;
    vs[at] = a;
    vs[at + 1u] = b;
}

// In NCHW: channel c16 of the current 16 at tiles 8 tg .. + 7, at
// [xi][c16][t].
fn put_tiles(xi: u32, c16: u32, tg: u32, a: vec4<f32>, b: vec4<f32>) {
    let at = (xi * 16u + c16) * Q + 2u * tg;
    vs[at] = a;
    vs[at + 1u] = b;
}

fn sum_at(xi: u32, t: u32, c16: u32) -> f32 {
    var f = (xi * TILES + t) * 16u + c16;
    if NCHW {
        f = (xi * 16u + c16) * TILES + t;
    }
    return vs[f / 4u][f % 4u];
}

fn sum_row(i: u32, t: u32, c16: u32) -> vec4<f32> {
    return vec4<f32>(sum_at(4u * i, t, c16), sum_at(4u * i + 1u, t, c16),
        sum_at(4u * i + 2u, t, c16), sum_at(4u * i + 3u, t, c16));
}

// Where output pixel (oy, ox) of image n has channel m of group g, and
// whether it exists.
fn out_at(n: u32, oy: u32, ox: u32, m: u32, g: u32) -> u32 {
    let mo = g * params.ocg + m;
    if NCHW {
        return ((n * params.oc + mo) * params.oh + oy) * params.ow + ox;
    }
    return ((n * params.oh + oy) * params.ow + ox) * params.oc + mo;
}

fn out_ok(oy: u32, ox: u32, m: u32) -> bool {
    return oy < params.oh && ox < params.ow && m < params.ocg;
}

// The residual at an output, 0 where it does not exist (its load
// unconditional, so that a tile's four issue back to back).
fn residual_or_0(n: u32, oy: u32, ox: u32, m: u32, g: u32) -> f32 {
    return residual(select(0u, out_at(n, oy, ox, m, g), out_ok(oy, ox, m)));
}

fn store(n: u32, oy: u32, ox: u32, m: u32, g: u32, v: f32, r: f32) {
    if out_ok(oy, ox, m) {
        y[out_at(n, oy, ox, m, g)] = T(finish(v + bias(g * params.ocg + m), r));
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.z;
    let block = wid.x + (wid.y / params.channel_tiles) * nwg.x;
    let m0 = (wid.y % params.channel_tiles) * 64u;
    // Blocks of TR x 8 tiles over each image's ceil(oh / 2) x ceil(ow / 2).
    let bx = ((params.ow + 1u) / 2u + 7u) / 8u;
    let by = ((params.oh + 1u) / 2u + TR - 1u) / TR;
    let images = params.pixels / params.ohw;
    if block >= images * by * bx {
        return;
    }
    let n = block / (by * bx);
    let ty0 = ((block / bx) % by) * TR;
    let tx0 = (block % bx) * 8u;

    // Fill role: channel fic (8 consecutive a subgroup) of tile ft.
    let lane = lid % 32u;
    let warp = lid / 32u;
    fic = lane % 8u + 8u * (warp % 2u);
    ft = lane / 8u + 4u * (warp / 2u);
    fy0 = 2 * i32(ty0 + ft / 8u) - i32(params.padding.x);
    fx0 = 2 * i32(tx0 + ft % 8u) - i32(params.padding.y);
    fimage = n * params.x_strides.x;

    // Multiplying role: component xi, tiles 8 tg .. 8 tg + 7 (block row
    // tg), output channels m0 + 8 og .. + 7.
    let xi = lid / (8u * TR);
    let tg = (lid / 8u) % TR;
    let og = lid % 8u;
    let icp = (params.icg + CK - 1u) / CK * CK;
    let ocp4 = params.ocp / 4u;
    // Row (g, xi, k) of the table, icp + 2 rows a component (two zero rows
    // past the reduction, read by the last loads ahead).
    let ubase = (g * 16u + xi) * (icp + 2u) * ocp4 + m0 / 4u + 2u * og;

    var c00 = vec4<f32>(0.0);
    var c01 = vec4<f32>(0.0);
    var c10 = vec4<f32>(0.0);
    var c11 = vec4<f32>(0.0);
    var c20 = vec4<f32>(0.0);
    var c21 = vec4<f32>(0.0);
    var c30 = vec4<f32>(0.0);
    var c31 = vec4<f32>(0.0);
    var c40 = vec4<f32>(0.0);
    var c41 = vec4<f32>(0.0);
    var c50 = vec4<f32>(0.0);
    var c51 = vec4<f32>(0.0);
    var c60 = vec4<f32>(0.0);
    var c61 = vec4<f32>(0.0);
    var c70 = vec4<f32>(0.0);
    var c71 = vec4<f32>(0.0);

    put_patch(load_patch(0u, g));
    workgroupBarrier();
    var ua0 = wt[ubase];
    var ua1 = wt[ubase + 1u];
    var ub0 = wt[ubase + ocp4];
    var ub1 = wt[ubase + ocp4 + 1u];
    let chunks = icp / CK;
    for (var chunk = 0u; chunk < chunks; chunk++) {
        let more = chunk + 1u < chunks;
        var next: Patch;
        if more {
            next = load_patch(chunk + 1u, g);
        }
        let rows = xi * CK * Q;
        for (var ic = 0u; ic < CK; ic++) {
            let u0 = ua0;
            let u1 = ua1;
            ua0 = ub0;
            ua1 = ub1;
            let at = ubase + (chunk * CK + ic + 2u) * ocp4;
            ub0 = wt[at];
            ub1 = wt[at + 1u];
            let row = rows + ic * Q;
            let v0 = vs[row + col(ic, 2u * tg)];
            let v1 = vs[row + col(ic, 2u * tg + 1u)];
            c00 += v0.x * u0;
            c01 += v0.x * u1;
            c10 += v0.y * u0;
            c11 += v0.y * u1;
            c20 += v0.z * u0;
            c21 += v0.z * u1;
            c30 += v0.w * u0;
            c31 += v0.w * u1;
            c40 += v1.x * u0;
            c41 += v1.x * u1;
            c50 += v1.y * u0;
            c51 += v1.y * u1;
            c60 += v1.z * u0;
            c61 += v1.z * u1;
            c70 += v1.w * u0;
            c71 += v1.w * u1;
        }
        workgroupBarrier();
        if more {
            put_patch(next);
            workgroupBarrier();
        }
    }

    // Epilogue: 16 output channels (og pair 2 p, 2 p + 1) at a time. The
    // residuals of all four passes are read first: read pass by pass,
    // each behind its barrier and before its stores, their latency added
    // up (ESRGAN-slim's 960x540 body with a residual took 1.18 ms on an
    // H100, 0.96 without).
    var rt = lid / 16u;
    var c16 = lid % 16u;
    if NCHW {
        rt = lid % TILES;
        c16 = lid / TILES;
    }
    let oy = 2u * (ty0 + rt / 8u);
    let ox = 2u * (tx0 + rt % 8u);
    var res: array<vec4<f32>, 4>;
    for (var p = 0u; p < 4u; p++) {
        let m = m0 + 16u * p + c16;
        res[p] = vec4<f32>(residual_or_0(n, oy, ox, m, g), residual_or_0(n, oy, ox + 1u, m, g),
            residual_or_0(n, oy + 1u, ox, m, g), residual_or_0(n, oy + 1u, ox + 1u, m, g));
    }
    let t0 = 8u * tg;
    for (var p = 0u; p < 4u; p++) {
        if NCHW && og / 2u == p {
            // The 8 x 8 block transposed: a vec4 of 4 tiles a channel.
            let h = 8u * (og % 2u);
            put_tiles(xi, h, tg, vec4<f32>(c00.x, c10.x, c20.x, c30.x),
                vec4<f32>(c40.x, c50.x, c60.x, c70.x));
            put_tiles(xi, h + 1u, tg, vec4<f32>(c00.y, c10.y, c20.y, c30.y),
                vec4<f32>(c40.y, c50.y, c60.y, c70.y));
            put_tiles(xi, h + 2u, tg, vec4<f32>(c00.z, c10.z, c20.z, c30.z),
                vec4<f32>(c40.z, c50.z, c60.z, c70.z));
            put_tiles(xi, h + 3u, tg, vec4<f32>(c00.w, c10.w, c20.w, c30.w),
                vec4<f32>(c40.w, c50.w, c60.w, c70.w));
            put_tiles(xi, h + 4u, tg, vec4<f32>(c01.x, c11.x, c21.x, c31.x),
                vec4<f32>(c41.x, c51.x, c61.x, c71.x));
            put_tiles(xi, h + 5u, tg, vec4<f32>(c01.y, c11.y, c21.y, c31.y),
                vec4<f32>(c41.y, c51.y, c61.y, c71.y));
            put_tiles(xi, h + 6u, tg, vec4<f32>(c01.z, c11.z, c21.z, c31.z),
                vec4<f32>(c41.z, c51.z, c61.z, c71.z));
            put_tiles(xi, h + 7u, tg, vec4<f32>(c01.w, c11.w, c21.w, c31.w),
                vec4<f32>(c41.w, c51.w, c61.w, c71.w));
        }
        if !NCHW && og / 2u == p {
            let half = og % 2u;
            put_sums(xi, t0, half, c00, c01);
            put_sums(xi, t0 + 1u, half, c10, c11);
            put_sums(xi, t0 + 2u, half, c20, c21);
            put_sums(xi, t0 + 3u, half, c30, c31);
            put_sums(xi, t0 + 4u, half, c40, c41);
            put_sums(xi, t0 + 5u, half, c50, c51);
            put_sums(xi, t0 + 6u, half, c60, c61);
            put_sums(xi, t0 + 7u, half, c70, c71);
        }
        workgroupBarrier();
        // Y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1].
        let m0r = sum_row(0u, rt, c16);
        let m1r = sum_row(1u, rt, c16);
        let m2r = sum_row(2u, rt, c16);
        let m3r = sum_row(3u, rt, c16);
        let s0 = m0r + m1r + m2r;
        let s1 = m1r - m2r - m3r;
        let m = m0 + 16u * p + c16;
        let r = res[p];
        store(n, oy, ox, m, g, s0.x + s0.y + s0.z, r.x);
        store(n, oy, ox + 1u, m, g, s0.y - s0.z - s0.w, r.y);
        store(n, oy + 1u, ox, m, g, s1.x + s1.y + s1.z, r.z);
        store(n, oy + 1u, ox + 1u, m, g, s1.y - s1.z - s1.w, r.w);
        workgroupBarrier();
    }
}
