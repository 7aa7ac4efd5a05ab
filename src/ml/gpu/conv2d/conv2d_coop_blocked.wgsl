// conv2d on cooperative matrices (tensor cores) over an input blocked by
// conv2d_coop_block.wgsl, for float16 NHWC stride-1 convolutions of more
// than one tap: in `xb` every A block (16 pixels of an output row at one
// tap by 16 input channels) is 512 contiguous bytes, inside the padded
// copy, so it is one contiguous cooperative load with no edge cases. Read
// from NHWC directly (conv2d_coop_direct.wgsl) its 16 rows are a pixel
// apart, which `wgnn-bench tensor-cores` puts at half the load throughput;
// staged through workgroup memory they load slower still.
//
// One workgroup is one 32-wide subgroup. It owns a run of TP output pixels
// of one output row (64, or 32 where that pads the row less: blocks 2 and 3
// are then not computed) and 16 BN channels: 4 x BN products of 16x16x16 per
// tap and 16 input channels, sums in f32 until the epilogue
// (conv2d_coop_epilogue.wgsl). The next 16 channels' A and B blocks are
// loaded before the current products, so their loads are in flight while
// the tensor cores work, across taps too. B comes from the table in contiguous 16 x 16
// blocks (conv2d.rs's `blocked_filter`): block (t, ci / 16, m / 16) of
// group g at ((g * taps + t) * icp + ci) * OCP + 16 m, icp the group's
// input channels padded to 16.
// Params: conv2d_params.wgsl; xb and wt from conv2d.rs. WG must be 32.

// The filter's shape and 16-channel input blocks: constants (KH, KW, ICB
// from conv2d.rs) where FIXED_STEPS, so that the step loop has a known
// length, else from params (conv2d_coop_blocked.rs says where each pays).
fn f_kh() -> u32 { return select(params.filter_size.x, KH, FIXED_STEPS); }
fn f_kw() -> u32 { return select(params.filter_size.y, KW, FIXED_STEPS); }
fn f_icb() -> u32 { return select((params.icg + 15u) / 16u, ICB, FIXED_STEPS); }

// Where xb's A block of tap t, channel block cb of group g starts for
// output pixel (oy, ox0) of image n: pixel ox0 + kx of padded row oy + ky
// (conv2d_coop_block.wgsl's geometry); its 16-pixel neighbours follow 256
// elements apart.
fn a_at(n: u32, g: u32, t: u32, cb: u32, oy: u32, ox0: u32) -> u32 {
    let kh = f_kh();
    let kw = f_kw();
    let icb = f_icb();
    let hp = params.oh + kh - 1u;
    let wp = (params.ow + TP - 1u) / TP * TP + kw - 1u;
    let cbs = (params.oc / params.ocg) * icb;
    return (((n * cbs + g * icb + cb) * hp + oy + t / kw) * wp + ox0 + t % kw) * 16u;
}

// Where the table's B block of tap t, channel block cb and output
// channels m0 .. + 15 of group g starts.
fn b_at(g: u32, t: u32, cb: u32, m0: u32) -> u32 {
    let taps = f_kh() * f_kw();
    let icp = f_icb() * 16u;
    return ((g * taps + t) * icp + 16u * cb) * params.ocp + 16u * m0;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.z;
    let channel_tiles = params.channel_tiles;
    let m0 = (wid.y % channel_tiles) * (16u * BN);
    // Runs of TP pixels per output row; the run index folds over x and y.
    let runs_per_row = (params.ow + TP - 1u) / TP;
    let run = wid.x + (wid.y / channel_tiles) * nwg.x;
    let row = run / runs_per_row;
    let n = row / params.oh;
    let oy = row % params.oh;
    let ox0 = (run % runs_per_row) * TP;
    if row >= (params.pixels / params.ohw) * params.oh {
        return;
    }
    // Pixels of each block that exist (the last run of a row may be short).
    let left = min(params.ow - ox0, TP);
    let valid0 = min(left, 16u);
    let valid1 = min(select(0u, left - 16u, left > 16u), 16u);
    let valid2 = min(select(0u, left - 32u, left > 32u), 16u);
    let valid3 = min(select(0u, left - 48u, left > 48u), 16u);

    let kh = f_kh();
    let kw = f_kw();
    let icb = f_icb();

    // Zero sums, loaded from zeroed workgroup memory.
    for (var i = lid; i < 16u * TCS; i += WG) {
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

    // Steps of one tap and 16 input channels, taps outer. Step 0's
    // blocks, then each step loads the next one's before its products.
    var a0 = coopLoadT<coop_mat16x16<f16, A>>(&xb[a_at(n, g, 0u, 0u, oy, ox0)], 16u);
    var a1 = coopLoadT<coop_mat16x16<f16, A>>(&xb[a_at(n, g, 0u, 0u, oy, ox0) + 256u], 16u);
    var a2 = a0;
    var a3 = a1;
    if TP == 64u {
        a2 = coopLoadT<coop_mat16x16<f16, A>>(&xb[a_at(n, g, 0u, 0u, oy, ox0) + 512u], 16u);
        a3 = coopLoadT<coop_mat16x16<f16, A>>(&xb[a_at(n, g, 0u, 0u, oy, ox0) + 768u], 16u);
    }
    var w0 = coopLoadT<coop_mat16x16<f16, B>>(&wt[b_at(g, 0u, 0u, m0)], 16u);
    var w1 = coopLoadT<coop_mat16x16<f16, B>>(&wt[b_at(g, 0u, 0u, m0) + 256u], 16u);
    var w2 = w0;
    var w3 = w1;
    if BN == 4u {
        w2 = coopLoadT<coop_mat16x16<f16, B>>(&wt[b_at(g, 0u, 0u, m0) + 512u], 16u);
        w3 = coopLoadT<coop_mat16x16<f16, B>>(&wt[b_at(g, 0u, 0u, m0) + 768u], 16u);
    }
    let steps = kh * kw * icb;
    for (var k = 1u; k < steps; k++) {
        let t = k / icb;
        let cb = k % icb;
        let an = a_at(n, g, t, cb, oy, ox0);
        let wn = b_at(g, t, cb, m0);
        let na0 = coopLoadT<coop_mat16x16<f16, A>>(&xb[an], 16u);
        let na1 = coopLoadT<coop_mat16x16<f16, A>>(&xb[an + 256u], 16u);
        var na2 = na0;
        var na3 = na1;
        if TP == 64u {
            na2 = coopLoadT<coop_mat16x16<f16, A>>(&xb[an + 512u], 16u);
            na3 = coopLoadT<coop_mat16x16<f16, A>>(&xb[an + 768u], 16u);
        }
        let nw0 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wn], 16u);
        let nw1 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wn + 256u], 16u);
        var nw2 = nw0;
        var nw3 = nw1;
        if BN == 4u {
            nw2 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wn + 512u], 16u);
            nw3 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wn + 768u], 16u);
        }
        c00 = coopMultiplyAdd(a0, w0, c00);
        c01 = coopMultiplyAdd(a0, w1, c01);
        c10 = coopMultiplyAdd(a1, w0, c10);
        c11 = coopMultiplyAdd(a1, w1, c11);
        if TP == 64u {
            c20 = coopMultiplyAdd(a2, w0, c20);
            c21 = coopMultiplyAdd(a2, w1, c21);
            c30 = coopMultiplyAdd(a3, w0, c30);
            c31 = coopMultiplyAdd(a3, w1, c31);
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
        a0 = na0;
        a1 = na1;
        a2 = na2;
        a3 = na3;
        w0 = nw0;
        w1 = nw1;
        w2 = nw2;
        w3 = nw3;
    }
    c00 = coopMultiplyAdd(a0, w0, c00);
    c01 = coopMultiplyAdd(a0, w1, c01);
    c10 = coopMultiplyAdd(a1, w0, c10);
    c11 = coopMultiplyAdd(a1, w1, c11);
    if TP == 64u {
        c20 = coopMultiplyAdd(a2, w0, c20);
        c21 = coopMultiplyAdd(a2, w1, c21);
        c30 = coopMultiplyAdd(a3, w0, c30);
        c31 = coopMultiplyAdd(a3, w1, c31);
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

    // Epilogue (conv2d_coop_epilogue.wgsl).
    let p0 = (n * params.oh + oy) * params.ow + ox0;
    write_sums(lid, p0, vec4<u32>(valid0, valid1, valid2, valid3), m0, g,
        c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33);
}
