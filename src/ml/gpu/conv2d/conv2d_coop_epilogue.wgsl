// The epilogue of the tensor-core conv2d kernels of one output tile a
// workgroup (conv2d_coop_direct.wgsl, conv2d_coop_blocked.wgsl): a run of
// 64 output pixels x 16 BN channels leaves the accumulators one 16-pixel
// block at a time through tile_c, with bias, a fused residual and
// activations. Each kernel's main zeroes its sums from tile_c too. Where
// SK subgroups split the tile's reduction (the direct kernel's subgroup
// split), each stores its block's sums in its own part of tile_c, and
// subgroup s adds up the SK parts for the block's pixels s, s + SK, ...

// One 16-pixel block's sums for the epilogue, a subgroup's part:
// [pixel][channel], rows padded to TCS so that its column reads spread
// over the banks.
const TCS: u32 = 68u;
const TILE: u32 = 16u * TCS;
var<workgroup> tile_c: array<f32, SK * TILE>;

// The subgroup of invocation lid, 0 unsplit (a constant, so that the
// one-subgroup kernels compute nothing for it).
fn subgroup_of(lid: u32) -> u32 {
    return select(lid / 32u, 0u, SK == 1u);
}
// A fused residual for one 16-pixel block (pixels p0 .. + 15, `valid` of
// them), lane lid's channels 2 lid and 2 lid + 1, read before the block
// before is stored: the compiler cannot move a load of r above a store to
// y (they may alias), so read in the store loop each store waited for its
// own load, 32 memory latencies in a row per block (ESRGAN-slim's GFF_2,
// 3x3 64->64 with a residual: 0.99 ms against 0.62 without, on an H100),
// and read per block, a latency per block.
// r[k] is pixel k SK + s of the block for subgroup s, k < 16 / SK.
fn load_residual(lid: u32, p0: u32, valid: u32, m0: u32, g: u32) -> array<vec2<T>, 16> {
    let lane = lid % 32u;
    let s = subgroup_of(lid);
    let m = m0 + 2u * lane;
    let in_tile = 2u * lane < 16u * BN;
    let ok0 = in_tile & (m < params.ocg);
    let ok1 = in_tile & (m + 1u < params.ocg);
    let at = (p0 + s) * params.oc + g * params.ocg + m;
    let step = SK * params.oc;
    // Pixels of the subgroup that exist: v of them.
    let v = (max(valid, s) - s + SK - 1u) / SK;
    // Written out, with no branch, so that the 16 loads go out together.
    var r: array<vec2<T>, 16>;
    r[0] = residual_pair(at, ok0 & (0u < v), ok1 & (0u < v));
    r[1] = residual_pair(at + 1u * step, ok0 & (1u < v), ok1 & (1u < v));
    r[2] = residual_pair(at + 2u * step, ok0 & (2u < v), ok1 & (2u < v));
    r[3] = residual_pair(at + 3u * step, ok0 & (3u < v), ok1 & (3u < v));
    r[4] = residual_pair(at + 4u * step, ok0 & (4u < v), ok1 & (4u < v));
    r[5] = residual_pair(at + 5u * step, ok0 & (5u < v), ok1 & (5u < v));
    r[6] = residual_pair(at + 6u * step, ok0 & (6u < v), ok1 & (6u < v));
    r[7] = residual_pair(at + 7u * step, ok0 & (7u < v), ok1 & (7u < v));
    r[8] = residual_pair(at + 8u * step, ok0 & (8u < v), ok1 & (8u < v));
    r[9] = residual_pair(at + 9u * step, ok0 & (9u < v), ok1 & (9u < v));
    r[10] = residual_pair(at + 10u * step, ok0 & (10u < v), ok1 & (10u < v));
    r[11] = residual_pair(at + 11u * step, ok0 & (11u < v), ok1 & (11u < v));
    r[12] = residual_pair(at + 12u * step, ok0 & (12u < v), ok1 & (12u < v));
    r[13] = residual_pair(at + 13u * step, ok0 & (13u < v), ok1 & (13u < v));
    r[14] = residual_pair(at + 14u * step, ok0 & (14u < v), ok1 & (14u < v));
    r[15] = residual_pair(at + 15u * step, ok0 & (15u < v), ok1 & (15u < v));
    return r;
}

// Writes one 16-pixel block's sums (pixels p0 .. + 15, `valid` of them)
// with bias, residual `r` and activations (or, in a split reduction's first
// pass, its partial sums: `out_pair`, params.rs): lane lid writes the
// tile's channels 2 lid and 2 lid + 1 of each pixel, through `store_pair`
// (conv2d.rs: one vec2 store where the group's outputs come in pairs, so a
// subgroup stores one 128-byte line of a 64-channel pixel at once; two
// scalar stores otherwise). The output is NHWC, so the address steps by oc
// per pixel: no division per element, and the bias is read once per lane.
fn write_block(lid: u32, p0: u32, valid: u32, m0: u32, g: u32, r: array<vec2<T>, 16>) {
    let lane = lid % 32u;
    let s = subgroup_of(lid);
    let m = m0 + 2u * lane;
    let mo = g * params.ocg + m;
    // Lanes past a 32-channel tile, and channels past the group's
    // (padding of the tile), write nothing.
    let in_tile = 2u * lane < 16u * BN;
    let ok0 = in_tile & (m < params.ocg);
    let ok1 = in_tile & (m + 1u < params.ocg);
    var b = vec2<f32>(0.0);
    if ok0 {
        b.x = bias(mo);
    }
    if ok1 {
        b.y = bias(mo + 1u);
    }
    var at = (p0 + s) * params.oc + mo;
    for (var k = 0u; k < 16u / SK; k++) {
        let i = k * SK + s;
        if i < valid {
            var v = b;
            for (var j = 0u; j < SK; j++) {
                let c = j * TILE + i * TCS + 2u * lane;
                v += vec2<f32>(tile_c[c], tile_c[c + 1u]);
            }
            out_pair(at, p0 + i, mo, v, vec2<f32>(r[k]), ok0, ok1);
        }
        at += SK * params.oc;
    }
}


// One 16-pixel block's sums (channels 16 j .. + 15 in cj; c2 and c3 only
// where BN = 4) into the part of tile_c from `own`, for `write_block`.
fn stage_sums(own: u32, c0: coop_mat16x16<f32, C>, c1: coop_mat16x16<f32, C>,
              c2: coop_mat16x16<f32, C>, c3: coop_mat16x16<f32, C>) {
    coopStoreT(c0, &tile_c[own], TCS);
    coopStoreT(c1, &tile_c[own + 16u], TCS);
    if BN == 4u {
        coopStoreT(c2, &tile_c[own + 32u], TCS);
        coopStoreT(c3, &tile_c[own + 48u], TCS);
    }
}

// The epilogue of a run of TP pixels from p0 (`valid` of each 16-pixel
// block exist; blocks 2 and 3 only in runs of 64): block i's sums are
// ci0 .. ci3, stored one block at a time through tile_c, each block's
// residual read before the block before is stored (see `load_residual`).
fn write_sums(lid: u32, p0: u32, valid: vec4<u32>, m0: u32, g: u32,
              c00: coop_mat16x16<f32, C>, c01: coop_mat16x16<f32, C>,
              c02: coop_mat16x16<f32, C>, c03: coop_mat16x16<f32, C>,
              c10: coop_mat16x16<f32, C>, c11: coop_mat16x16<f32, C>,
              c12: coop_mat16x16<f32, C>, c13: coop_mat16x16<f32, C>,
              c20: coop_mat16x16<f32, C>, c21: coop_mat16x16<f32, C>,
              c22: coop_mat16x16<f32, C>, c23: coop_mat16x16<f32, C>,
              c30: coop_mat16x16<f32, C>, c31: coop_mat16x16<f32, C>,
              c32: coop_mat16x16<f32, C>, c33: coop_mat16x16<f32, C>) {
    let own = subgroup_of(lid) * TILE;
    var r = load_residual(lid, p0, valid.x, m0, g);
    workgroupBarrier();
    stage_sums(own, c00, c01, c02, c03);
    workgroupBarrier();
    var rn = load_residual(lid, p0 + 16u, valid.y, m0, g);
    write_block(lid, p0, valid.x, m0, g, r);
    workgroupBarrier();
    stage_sums(own, c10, c11, c12, c13);
    workgroupBarrier();
    if TP == 64u {
        r = load_residual(lid, p0 + 32u, valid.z, m0, g);
    }
    write_block(lid, p0 + 16u, valid.y, m0, g, rn);
    if TP == 64u {
        workgroupBarrier();
        stage_sums(own, c20, c21, c22, c23);
        workgroupBarrier();
        rn = load_residual(lid, p0 + 48u, valid.w, m0, g);
        write_block(lid, p0 + 32u, valid.z, m0, g, r);
        workgroupBarrier();
        stage_sums(own, c30, c31, c32, c33);
        workgroupBarrier();
        write_block(lid, p0 + 48u, valid.w, m0, g, rn);
    }
}
