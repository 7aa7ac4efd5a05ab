// The epilogue of the one-subgroup tensor-core conv2d kernels
// (conv2d_coop_direct.wgsl, conv2d_coop_blocked.wgsl): a run of 64 output
// pixels x 16 BN channels leaves the accumulators one 16-pixel block at a
// time through tile_c, with bias, a fused residual and activations. Each
// kernel's main zeroes its sums from tile_c too.

// One 16-pixel block's sums for the epilogue: [pixel][channel], rows padded
// to TCS so that its column reads spread over the banks.
const TCS: u32 = 68u;
var<workgroup> tile_c: array<f32, 1088>; // 16 x TCS
// A fused residual for one 16-pixel block (pixels p0 .. + 15, `valid` of
// them), lane lid's channels 2 lid and 2 lid + 1, read before the block
// before is stored: the compiler cannot move a load of r above a store to
// y (they may alias), so read in the store loop each store waited for its
// own load, 32 memory latencies in a row per block (ESRGAN-slim's GFF_2,
// 3x3 64->64 with a residual: 0.99 ms against 0.62 without, on an H100),
// and read per block, a latency per block.
fn load_residual(lid: u32, p0: u32, valid: u32, m0: u32, g: u32) -> array<vec2<T>, 16> {
    let m = m0 + 2u * lid;
    let in_tile = 2u * lid < 16u * BN;
    let ok0 = in_tile & (m < params.ocg);
    let ok1 = in_tile & (m + 1u < params.ocg);
    let at = p0 * params.oc + g * params.ocg + m;
    // Written out, with no branch, so that the 16 loads go out together.
    var r: array<vec2<T>, 16>;
    r[0] = residual_pair(at, ok0 & (0u < valid), ok1 & (0u < valid));
    r[1] = residual_pair(at + 1u * params.oc, ok0 & (1u < valid), ok1 & (1u < valid));
    r[2] = residual_pair(at + 2u * params.oc, ok0 & (2u < valid), ok1 & (2u < valid));
    r[3] = residual_pair(at + 3u * params.oc, ok0 & (3u < valid), ok1 & (3u < valid));
    r[4] = residual_pair(at + 4u * params.oc, ok0 & (4u < valid), ok1 & (4u < valid));
    r[5] = residual_pair(at + 5u * params.oc, ok0 & (5u < valid), ok1 & (5u < valid));
    r[6] = residual_pair(at + 6u * params.oc, ok0 & (6u < valid), ok1 & (6u < valid));
    r[7] = residual_pair(at + 7u * params.oc, ok0 & (7u < valid), ok1 & (7u < valid));
    r[8] = residual_pair(at + 8u * params.oc, ok0 & (8u < valid), ok1 & (8u < valid));
    r[9] = residual_pair(at + 9u * params.oc, ok0 & (9u < valid), ok1 & (9u < valid));
    r[10] = residual_pair(at + 10u * params.oc, ok0 & (10u < valid), ok1 & (10u < valid));
    r[11] = residual_pair(at + 11u * params.oc, ok0 & (11u < valid), ok1 & (11u < valid));
    r[12] = residual_pair(at + 12u * params.oc, ok0 & (12u < valid), ok1 & (12u < valid));
    r[13] = residual_pair(at + 13u * params.oc, ok0 & (13u < valid), ok1 & (13u < valid));
    r[14] = residual_pair(at + 14u * params.oc, ok0 & (14u < valid), ok1 & (14u < valid));
    r[15] = residual_pair(at + 15u * params.oc, ok0 & (15u < valid), ok1 & (15u < valid));
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
    let m = m0 + 2u * lid;
    let mo = g * params.ocg + m;
    // Lanes past a 32-channel tile, and channels past the group's
    // (padding of the tile), write nothing.
    let in_tile = 2u * lid < 16u * BN;
    let ok0 = in_tile & (m < params.ocg);
    let ok1 = in_tile & (m + 1u < params.ocg);
    var b = vec2<f32>(0.0);
    if ok0 {
        b.x = bias(mo);
    }
    if ok1 {
        b.y = bias(mo + 1u);
    }
    var at = p0 * params.oc + mo;
    for (var i = 0u; i < 16u; i++) {
        if i < valid {
            let c = i * TCS + 2u * lid;
            let v = vec2<f32>(tile_c[c], tile_c[c + 1u]) + b;
            out_pair(at, p0 + i, mo, v, vec2<f32>(r[i]), ok0, ok1);
        }
        at += params.oc;
    }
}


// One 16-pixel block's sums (channels 16 j .. + 15 in cj; c2 and c3 only
// where BN = 4) into tile_c, for `write_block`.
fn stage_sums(c0: coop_mat16x16<f32, C>, c1: coop_mat16x16<f32, C>,
              c2: coop_mat16x16<f32, C>, c3: coop_mat16x16<f32, C>) {
    coopStoreT(c0, &tile_c[0], TCS);
    coopStoreT(c1, &tile_c[16], TCS);
    if BN == 4u {
        coopStoreT(c2, &tile_c[32], TCS);
        coopStoreT(c3, &tile_c[48], TCS);
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
    var r = load_residual(lid, p0, valid.x, m0, g);
    workgroupBarrier();
    stage_sums(c00, c01, c02, c03);
    workgroupBarrier();
    var rn = load_residual(lid, p0 + 16u, valid.y, m0, g);
    write_block(lid, p0, valid.x, m0, g, r);
    workgroupBarrier();
    stage_sums(c10, c11, c12, c13);
    workgroupBarrier();
    if TP == 64u {
        r = load_residual(lid, p0 + 32u, valid.z, m0, g);
    }
    write_block(lid, p0 + 16u, valid.y, m0, g, rn);
    if TP == 64u {
        workgroupBarrier();
        stage_sums(c20, c21, c22, c23);
        workgroupBarrier();
        rn = load_residual(lid, p0 + 48u, valid.w, m0, g);
        write_block(lid, p0 + 32u, valid.z, m0, g, r);
        workgroupBarrier();
        stage_sums(c30, c31, c32, c33);
        workgroupBarrier();
        write_block(lid, p0 + 48u, valid.w, m0, g, rn);
    }
}
