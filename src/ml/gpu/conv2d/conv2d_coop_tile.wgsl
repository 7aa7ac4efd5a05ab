// conv2d on cooperative matrices (tensor cores) with the input staged
// through workgroup memory, for float16 NHWC convolutions of more than one
// tap at stride 1 (or 2, split: below) (any number of group channels: it pads them to runs of 16
// as it stages them, and the table's rows to match). The workgroup owns
// R output rows (one 32-wide subgroup each) of a run of TP pixels (64, or
// 32 where that pads a row less: blocks 2 and 3 are then not computed) and
// 16 BN output channels (BN = 4, 2 for up to 32 outputs, 1 for up to 16:
// the second 16 of a phase below are then zero sums, past ocg, not
// written). For each 16 input channels it stages the input
// patch those rows read, (R + kh - 1) x (TP + kw - 1) pixels with zeros
// past the image, once: every tap's A block is then a strided view of it
// (pixel ox + kx of patch row oy + ky), so each input value is read from
// memory once per workgroup and channel tile instead of once per tap, with
// 8-byte loads along the channels (one by one where channels do not come
// in runs of 4). conv2d_coop_direct.wgsl reads A blocks straight from
// memory, once per tap, with rows an NHWC pixel apart.
//
// The next 16 channels' patch is loaded into registers while the tensor
// cores work on this one, and stored once every subgroup is done with it
// (a second barrier per 16 channels), or into the other of two buffers
// (BUFFERS = 2, one barrier). Pixels in the patch are PS halves apart: 16,
// or 24 (48 bytes) so that the 8 rows of 16 bytes a matrix load reads at
// once fall in distinct banks. conv2d_coop_tile.rs passes 16, and one
// buffer up to 9 taps (the least workgroup memory measured faster than
// both ways of spending more), two for more.
//
// B comes from the filter rearranged at build into contiguous 16 x 16
// blocks (the `table`, as in conv2d_coop_direct.wgsl): block (t, ci / 16,
// m / 16) of group g starts at ((g * taps + t) * icp + ci) * OCP + 16 m,
// icp the group's input channels padded to 16.
// Every subgroup reads the same B blocks, from cache.
//
// Split (SK > 1, for maps too small to fill the GPU in R-row tiles: R
// is then 1): the workgroup's SK subgroups of a row each take every SK-th
// 16 channels of the reduction for the same outputs, on SK patches staged
// at once, and add up their sums through workgroup memory in the
// epilogue: SK times the subgroups with no second pass (the split GEMM's
// sums kernel). Each step (16 channels of every tap) costs a subgroup the
// same latency whatever the map, so a small map's convolution took the
// steps of its whole reduction one after another in few subgroups
// (choose.rs has the measurements). A stride ST of 2 reads each tap's A
// block from every other patch pixel: the patch spans (R - 1) ST + KH
// rows and (TP - 1) ST + KW columns.
//
// Cooperative operations need control flow naga can prove uniform: every
// branch here depends on params, the workgroup id or constants; the
// subgroup index (its row and split) only moves addresses.
// Params: conv2d_params.wgsl. Constants from conv2d_coop_tile.rs: WG =
// 32 R SK, R, SK, ST, KH, KW, TP, BN, PR, PC, PS, PATCH = PR * PC * PS,
// FILL (the 8-byte vectors of the SK patches each invocation loads), ICG
// (params' icg) and FIXED_CHANNELS.

// x and `load4` come from conv2d_coop_tile.rs.

const TAPS: u32 = KH * KW;
// The 8-byte vectors of one patch.
const VECTORS: u32 = PR * PC * 4u;
// One set of SK patches, filled after a barrier (BUFFERS = 1), or two, one
// read while the other is filled (BUFFERS = 2).
var<workgroup> staged: array<f16, BUFFERS * SK * PATCH>;
// Each subgroup's 16 pixels x 32 channels of sums for the epilogue, rows
// padded to TCS.
const TCS: u32 = 36u;
var<workgroup> tile_c: array<f32, R * SK * 16u * TCS>;

// The patch of vector v: 0 unsplit, a constant, so that the unsplit
// kernel does no division for it (its 3x3s at batch 32 ran 4-7% slower on
// an H200 with one).
fn patch_of(v: u32) -> u32 {
    return select(v / VECTORS, 0u, SK == 1u);
}

// Vector v of the SK patches (patch v / VECTORS, the 16 channels from
// c + 16 that; in it pixel (v % VECTORS) / 4, group channels 4 (v % 4) ..
// + 3 of those) read from x: zero past the image, past the patches and
// past the group's channels (a group of fewer than 16, or not a multiple
// of 16, is padded here; the table's rows for those channels are zero
// too). Four halves, not eight: naga cannot bitcast a u32 to two halves.
fn load_vector(v: u32, n: u32, iy0: i32, ix0: i32, c0: u32, c: u32) -> vec4<f16> {
    let j = patch_of(v);
    let q = (v - j * VECTORS) / 4u;
    let iy = iy0 + i32(q / PC);
    let ix = ix0 + i32(q % PC);
    let cc = c + 16u * j + 4u * (v % 4u);
    let inside = v < SK * VECTORS && iy >= 0 && iy < i32(params.h) && ix >= 0
        && ix < i32(params.w);
    // No branch: the FILL loads of an invocation go out together (a load
    // behind a branch measured 35% slower on the whole kernel); what is
    // not to be read loads element 0 and is dropped.
    let xs = params.x_strides;
    let at = n * xs.x + u32(max(iy, 0)) * xs.z + u32(max(ix, 0)) * xs.w + c0 + cc;
    return load4(select(0u, at, inside), cc, inside);
}

fn store_vector(v: u32, at: u32, d: vec4<f16>) {
    if v < SK * VECTORS {
        let j = patch_of(v);
        let o = at + j * PATCH + ((v - j * VECTORS) / 4u) * PS + 4u * (v % 4u);
        staged[o] = d.x;
        staged[o + 1u] = d.y;
        staged[o + 2u] = d.z;
        staged[o + 3u] = d.w;
    }
}

// A phase of the epilogue: 16 pixels x 32 channels of a row's sums
// (pixels p0 .. + 15, `valid` of them; channels m0 .. + 31 of group g).
// Lane `lane` takes channels 2 (lane % 16) and + 1 of every other pixel,
// so each store instruction writes 64 contiguous bytes of each of two
// pixels; the row's SK subgroups take turns at those pairs of pixels
// (pair k of the 8 goes to split k % SK).
struct Phase {
    p0: u32,
    valid: u32,
    m0: u32,
}

// A fused residual for a phase. The compiler cannot move a load of r
// above a store to y (they may alias), so loads placed in the store loop
// would each wait for memory in turn (the residual 3x3 64->64 of
// ESRGAN-slim took twice the time of the plain one on an H100 that way).
fn load_residual(lane: u32, split: u32, ph: Phase, g: u32) -> array<vec2<T>, 8> {
    let m = ph.m0 + 2u * (lane % 16u);
    let ok0 = m < params.ocg;
    let ok1 = m + 1u < params.ocg;
    // Pixel e + 2 (k SK) of the phase for r[k], k < 8 / SK; written out,
    // with no branch, so that the loads go out together (a loop with a
    // branch per load measured as if each waited for the one before).
    let e = lane / 16u + 2u * split;
    let at = (ph.p0 + e) * params.oc + g * params.ocg + m;
    let step = 2u * SK * params.oc;
    let v = ph.valid;
    var r: array<vec2<T>, 8>;
    r[0] = residual_pair(at, ok0 & (e < v), ok1 & (e < v));
    r[1] = residual_pair(at + step, ok0 & (e + 2u * SK < v), ok1 & (e + 2u * SK < v));
    r[2] = residual_pair(at + 2u * step, ok0 & (e + 4u * SK < v), ok1 & (e + 4u * SK < v));
    r[3] = residual_pair(at + 3u * step, ok0 & (e + 6u * SK < v), ok1 & (e + 6u * SK < v));
    r[4] = residual_pair(at + 4u * step, ok0 & (e + 8u * SK < v), ok1 & (e + 8u * SK < v));
    r[5] = residual_pair(at + 5u * step, ok0 & (e + 10u * SK < v), ok1 & (e + 10u * SK < v));
    r[6] = residual_pair(at + 6u * step, ok0 & (e + 12u * SK < v), ok1 & (e + 12u * SK < v));
    r[7] = residual_pair(at + 7u * step, ok0 & (e + 14u * SK < v), ok1 & (e + 14u * SK < v));
    return r;
}

// Writes the split's pixels of a phase's sums, those of the row's SK
// subgroups in tile_c added up, with bias, residual `r` and activations.
fn write_half(lane: u32, row: u32, split: u32, ph: Phase, g: u32, r: array<vec2<T>, 8>) {
    let m = ph.m0 + 2u * (lane % 16u);
    let mo = g * params.ocg + m;
    let ok0 = m < params.ocg;
    let ok1 = m + 1u < params.ocg;
    var b = vec2<f32>(0.0);
    if ok0 {
        b.x = bias(mo);
    }
    if ok1 {
        b.y = bias(mo + 1u);
    }
    let base = row * 16u * TCS + 2u * (lane % 16u);
    for (var k = 0u; k < 8u / SK; k++) {
        let i = 2u * (k * SK + split) + lane / 16u;
        if i < ph.valid {
            var v = b;
            for (var j = 0u; j < SK; j++) {
                let c = base + (j * R * 16u + i) * TCS;
                v += vec2<f32>(tile_c[c], tile_c[c + 1u]);
            }
            let rk = vec2<f32>(r[k]);
            store_pair((ph.p0 + i) * params.oc + mo, vec2<f32>(finish(v.x, rk.x), finish(v.y, rk.y)), ok0, ok1);
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let sg = lid / 32u;
    let lane = lid % 32u;
    // The subgroup's output row in the tile, and its part of the
    // reduction (subgroup j R + row takes the channels 16 j .. + 15 of
    // each 16 SK).
    let row = select(sg % R, sg, SK == 1u);
    let split = select(sg / R, 0u, SK == 1u);
    let g = wid.z;
    let channel_tiles = params.channel_tiles;
    let m0 = (wid.y % channel_tiles) * (16u * BN);
    // Tiles of R rows x TP pixels; the tile index folds over x and y.
    let runs_per_row = (params.ow + TP - 1u) / TP;
    let row_tiles = (params.oh + R - 1u) / R;
    let tile = wid.x + (wid.y / channel_tiles) * nwg.x;
    let n = tile / (row_tiles * runs_per_row);
    if n >= params.pixels / params.ohw {
        return;
    }
    let oy0 = (tile / runs_per_row) % row_tiles * R;
    let ox0 = (tile % runs_per_row) * TP;
    // This subgroup's output row, and the pixels of each of its 16-pixel
    // blocks that exist (none past the last row; the last run of a row may
    // be short).
    let oy = oy0 + row;
    let left = select(0u, min(params.ow - ox0, TP), oy < params.oh);
    let valid0 = min(left, 16u);
    let valid1 = min(select(0u, left - 16u, left > 16u), 16u);
    let valid2 = min(select(0u, left - 32u, left > 32u), 16u);
    let valid3 = min(select(0u, left - 48u, left > 48u), 16u);

    let icg = params.icg;
    // The channel loop's length, as a constant where FIXED_CHANNELS
    // (conv2d_coop_tile.rs says where it pays).
    let icg_c = select(icg, ICG, FIXED_CHANNELS);
    // The table's rows per tap: icg padded to 16.
    let icp = (icg_c + 15u) / 16u * 16u;
    let c0 = g * icg;
    let iy0 = i32(oy0 * ST) - i32(params.padding.x);
    let ix0 = i32(ox0 * ST) - i32(params.padding.y);

    // The first 16 SK channels' patches.
    var pre: array<vec4<f16>, FILL>;
    for (var k = 0u; k < FILL; k++) {
        pre[k] = load_vector(lid + k * WG, n, iy0, ix0, c0, 0u);
    }
    for (var k = 0u; k < FILL; k++) {
        store_vector(lid + k * WG, 0u, pre[k]);
    }

    // Zero sums, loaded from zeroed workgroup memory.
    for (var i = lid; i < R * SK * 16u * TCS; i += WG) {
        tile_c[i] = 0.0;
    }
    workgroupBarrier();
    var c00 = coopLoadT<coop_mat16x16<f32, C>>(&tile_c[0], TCS);
    var c01 = c00;
    var c02 = c00;
    var c03 = c00;
    var c10 = c00;
    var c11 = c00;
    var c12 = c00;
    var c13 = c00;
    var c20 = c00;
    var c21 = c00;
    var c22 = c00;
    var c23 = c00;
    var c30 = c00;
    var c31 = c00;
    var c32 = c00;
    var c33 = c00;

    for (var ci = 0u; ci < icg_c; ci += 16u * SK) {
        let cur = (ci / (16u * SK)) % BUFFERS * SK * PATCH;
        let more = ci + 16u * SK < icg_c;
        // The next 16 SK channels' patches, in flight during the products.
        if more {
            for (var k = 0u; k < FILL; k++) {
                pre[k] = load_vector(lid + k * WG, n, iy0, ix0, c0, ci + 16u * SK);
            }
        }
        let wrow0 = (g * TAPS * icp + ci + 16u * split) * params.ocp + 16u * m0;
        // A loop of known length over the taps: 3x3 64 -> 64 at 512x512
        // on an H100 0.221 -> 0.213 ms, ESRGAN-slim's 5x5 0.90 -> 0.76,
        // against a loop to params.filter_size.
        for (var t = 0u; t < TAPS; t++) {
            let ky = t / KW;
            let kx = t % KW;
            // Pixel kx of patch row row ST + ky of the split's patch: this
            // tap's input for the subgroup's first output pixel; a block's
            // pixels are ST apart, blocks 16 ST.
            let at = cur + split * PATCH + ((row * ST + ky) * PC + kx) * PS;
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&staged[at], ST * PS);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&staged[at + 16u * ST * PS], ST * PS);
            var a2 = a0;
            var a3 = a1;
            if TP == 64u {
                a2 = coopLoadT<coop_mat16x16<f16, A>>(&staged[at + 32u * ST * PS], ST * PS);
                a3 = coopLoadT<coop_mat16x16<f16, A>>(&staged[at + 48u * ST * PS], ST * PS);
            }
            let wrow = wrow0 + t * icp * params.ocp;
            let w0 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow], 16u);
            var w1 = w0;
            if BN >= 2u {
                w1 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 256u], 16u);
            }
            var w2 = w0;
            var w3 = w1;
            if BN == 4u {
                w2 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 512u], 16u);
                w3 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 768u], 16u);
            }
            c00 = coopMultiplyAdd(a0, w0, c00);
            c10 = coopMultiplyAdd(a1, w0, c10);
            if TP == 64u {
                c20 = coopMultiplyAdd(a2, w0, c20);
                c30 = coopMultiplyAdd(a3, w0, c30);
            }
            if BN >= 2u {
                c01 = coopMultiplyAdd(a0, w1, c01);
                c11 = coopMultiplyAdd(a1, w1, c11);
                if TP == 64u {
                    c21 = coopMultiplyAdd(a2, w1, c21);
                    c31 = coopMultiplyAdd(a3, w1, c31);
                }
            }
            if BN == 4u {
                c02 = coopMultiplyAdd(a0, w2, c02);
                c03 = coopMultiplyAdd(a0, w3, c03);
                c12 = coopMultiplyAdd(a1, w2, c12);
                c13 = coopMultiplyAdd(a1, w3, c13);
                if TP == 64u {
                    c22 = coopMultiplyAdd(a2, w2, c22);
                    c23 = coopMultiplyAdd(a2, w3, c23);
                    c32 = coopMultiplyAdd(a3, w2, c32);
                    c33 = coopMultiplyAdd(a3, w3, c33);
                }
            }
        }
        // Into the other buffer, which every subgroup finished reading
        // before the last barrier; or into this one once every subgroup
        // is done with it.
        if more {
            if BUFFERS == 1u {
                workgroupBarrier();
            }
            for (var k = 0u; k < FILL; k++) {
                store_vector(lid + k * WG, (BUFFERS - 1u) * (SK * PATCH - cur), pre[k]);
            }
        }
        workgroupBarrier();
    }

    // Epilogue: each 16-pixel block's sums in 32-channel halves through
    // the subgroup's part of tile_c. A fused residual is read for all
    // phases first (64 registers in float16 pairs), so that the loads wait
    // for memory once, not once per phase.
    let p0 = (n * params.oh + oy) * params.ow + ox0;
    let own = sg * 16u * TCS;
    let ph0 = Phase(p0, valid0, m0);
    let ph1 = Phase(p0 + 16u, valid1, m0);
    let ph2 = Phase(p0 + 32u, valid2, m0);
    let ph3 = Phase(p0 + 48u, valid3, m0);
    let ph4 = Phase(p0, valid0, m0 + 32u);
    let ph5 = Phase(p0 + 16u, valid1, m0 + 32u);
    let ph6 = Phase(p0 + 32u, valid2, m0 + 32u);
    let ph7 = Phase(p0 + 48u, valid3, m0 + 32u);
    let r0 = load_residual(lane, split, ph0, g);
    let r1 = load_residual(lane, split, ph1, g);
    let r2 = load_residual(lane, split, ph2, g);
    let r3 = load_residual(lane, split, ph3, g);
    var r4 = r0;
    var r5 = r0;
    var r6 = r0;
    var r7 = r0;
    if BN == 4u {
        r4 = load_residual(lane, split, ph4, g);
        r5 = load_residual(lane, split, ph5, g);
        r6 = load_residual(lane, split, ph6, g);
        r7 = load_residual(lane, split, ph7, g);
    }
    coopStoreT(c00, &tile_c[own], TCS);
    coopStoreT(c01, &tile_c[own + 16u], TCS);
    workgroupBarrier();
    write_half(lane, row, split, ph0, g, r0);
    workgroupBarrier();
    coopStoreT(c10, &tile_c[own], TCS);
    coopStoreT(c11, &tile_c[own + 16u], TCS);
    workgroupBarrier();
    write_half(lane, row, split, ph1, g, r1);
    if TP == 64u {
        workgroupBarrier();
        coopStoreT(c20, &tile_c[own], TCS);
        coopStoreT(c21, &tile_c[own + 16u], TCS);
        workgroupBarrier();
        write_half(lane, row, split, ph2, g, r2);
        workgroupBarrier();
        coopStoreT(c30, &tile_c[own], TCS);
        coopStoreT(c31, &tile_c[own + 16u], TCS);
        workgroupBarrier();
        write_half(lane, row, split, ph3, g, r3);
    }
    if BN == 4u {
        workgroupBarrier();
        coopStoreT(c02, &tile_c[own], TCS);
        coopStoreT(c03, &tile_c[own + 16u], TCS);
        workgroupBarrier();
        write_half(lane, row, split, ph4, g, r4);
        workgroupBarrier();
        coopStoreT(c12, &tile_c[own], TCS);
        coopStoreT(c13, &tile_c[own + 16u], TCS);
        workgroupBarrier();
        write_half(lane, row, split, ph5, g, r5);
        if TP == 64u {
            workgroupBarrier();
            coopStoreT(c22, &tile_c[own], TCS);
            coopStoreT(c23, &tile_c[own + 16u], TCS);
            workgroupBarrier();
            write_half(lane, row, split, ph6, g, r6);
            workgroupBarrier();
            coopStoreT(c32, &tile_c[own], TCS);
            coopStoreT(c33, &tile_c[own + 16u], TCS);
            workgroupBarrier();
            write_half(lane, row, split, ph7, g, r7);
        }
    }
}
