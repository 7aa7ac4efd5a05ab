// conv2d on cooperative matrices (tensor cores) read straight from memory,
// for float16 NHWC inputs whose group channels come in runs of 16. In NHWC,
// the 16 x 16 block of the implicit GEMM's A that holds 16 output pixels of
// one row at one filter tap and 16 input channels is itself a strided matrix
// in x: row i (pixel ox + i) starts stride.x * C elements after row i - 1.
// So A is loaded with coopLoadT from x directly, no im2col and no staging;
// only blocks that cross the image's edge are staged through workgroup
// memory with zeros. B comes from the filter rearranged at build (the
// `table`, conv2d.rs's `blocked_filter`): each 16 x 16 block of B (16 input
// channels of a tap by 16 output channels, zero past ocg) is 256 contiguous
// halves, so B loads are contiguous too; block (t, ci / 16, m / 16) of group
// g starts at ((g * taps + t) * icg + ci) * OCP + 16 m, OCP the outputs
// padded to the tile. An earlier kernel (conv2d_coop.wgsl) that staged
// im2col operands through workgroup memory spent its time on those loads.
//
// One workgroup is one 32-wide subgroup (the tensor-core adapters run
// 32-wide subgroups), so every branch that depends on the workgroup is
// uniform in the subgroup, as cooperative operations require. It owns a run
// of TP output pixels of one output row (64, or 32 where that pads the row
// less: blocks 2 and 3 are then not computed) and 16 BN channels (BN = 4, or 2
// for groups of at most 32 outputs): 4 x BN products of 16x16x16 per tap
// and 16 input channels, sums in f32 until the epilogue; each filter block
// loaded is used by 4 products. The products and loads of blocks 2 and 3
// sit behind `BN == 4u`, a constant, so the 32-channel kernel has neither
// (nor their registers).
// A reduction over a small map is split over the workgroup's SK subgroups
// (subgroup s walks the channels s KC .. + KC - 1 of the workgroup's, and
// the epilogue adds up their sums through workgroup memory,
// conv2d_coop_epilogue.wgsl), and a long one over SPLITS workgroups (wid.z
// folds the group and the split): each walks KC = ICG / SPLITS of the input
// channels at every tap and writes its partial sums (`out_pair`, params.rs),
// which conv2d_gemm_sum.wgsl adds up, with the bias, residual and
// activations. The split comes from the workgroup id, so the channel loops
// stay uniform with a constant length.
// Params: conv2d_params.wgsl; TP, ICG, KH, KW (params' icg and
// filter_size), SPLITS, SK and KC = ICG / (SPLITS SK) from coop_direct.rs.
// WG must be 32 SK.

@group(0) @binding(1) var<storage, read> x: array<f16>;

// Every workgroup variable's size is a multiple of 16 bytes: a cooperative
// load or store needs a 16-byte aligned address, a driver lays workgroup
// variables out one after another at their own alignment, and on the H100
// a 4-byte variable placed first moved every cooperative access 4 bytes.
// An A block that crosses an edge: [pixel][channel], 16 x 16.
// One for each subgroup.
var<workgroup> stage: array<f16, 256u * SK>;
// The loop's tap, read back uniform.
var<workgroup> tap_shared: vec4<u32>;
// This workgroup's run of the split reduction (0 unsplit).
var<private> split: u32;

// How an A block (16 pixels of one output row at one tap) reads x: wholly
// inside the input (direct), wholly outside it (zero: no product), or
// across its edge (staged). Cooperative operations (and the staging's
// barriers) need control flow naga can prove uniform, and naga takes
// function arguments, function-local variables and so loop counters as
// non-uniform: so the tap comes through `workgroupUniformLoad`, and the
// kinds are worked out in `main` with `let`s and the non-short-circuit `&`
// and `|` (naga lowers `&&` and `||` through a local variable).
const DIRECT: u32 = 0u;
const ZERO: u32 = 1u;
const EDGE: u32 = 2u;

// Stages the edge block of pixels ox0 .. ox0 + 15 (`valid` of them exist) at
// input row iy and tap column kx, group channels c .. c + 15, zero outside
// the input.
fn fill(lid: u32, n: u32, iy: u32, ox0: u32, valid: u32, kx: u32, c: u32) {
    let xs = params.x_strides;
    // Lane l fills pixel l / 2, channels 8 (l % 2) .. + 7, of its
    // subgroup's block.
    let l = lid % 32u;
    let own = subgroup_of(lid) * 256u;
    let i = l / 2u;
    let ix = i32((ox0 + i) * params.stride.y + kx * params.dilation.y) - i32(params.padding.y);
    let ok = i < valid && ix >= 0 && ix < i32(params.w);
    let base = n * xs.x + iy * xs.z + u32(max(ix, 0)) * xs.w + c + 8u * (l % 2u);
    for (var j = 0u; j < 8u; j++) {
        var v = f16(0.0);
        if ok {
            v = x[base + j];
        }
        stage[own + i * 16u + 8u * (l % 2u) + j] = v;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.z / SPLITS;
    split = wid.z % SPLITS;
    // The first input channel of the split's run, from the workgroup id (a
    // private variable reads as non-uniform, and cooperative operations
    // depend on it).
    let c_lo = (wid.z % SPLITS) * SK * KC;
    // This subgroup's first channel from there: it moves addresses only
    // (branches stay uniform), and so do `own` and `stage_at`.
    let sub = subgroup_of(lid) * KC;
    let stage_at = subgroup_of(lid) * 256u;
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
    let valid0 = min(select(0u, left - 0u, left > 0u), 16u);
    let valid1 = min(select(0u, left - 16u, left > 16u), 16u);
    let valid2 = min(select(0u, left - 32u, left > 32u), 16u);
    let valid3 = min(select(0u, left - 48u, left > 48u), 16u);

    // The group's channels and the filter's shape as constants (ICG, KH,
    // KW), so that the channel and tap loops have a known length: the 1x1
    // 64 -> 64 convolutions of ESRGAN-slim at 960x540 on an H100 took
    // 0.098-0.126 ms against 0.108-0.133 with them read from params.
    let icg = ICG;
    let c0 = g * icg;
    let kh = KH;
    let kw = KW;
    // Consecutive pixels of a block are this many elements apart in x.
    let a_stride = params.stride.y * params.x_strides.w;
    // Input columns from each block's first pixel to its last that exists.
    let span0 = i32((max(valid0, 1u) - 1u) * params.stride.y);
    let span1 = i32((max(valid1, 1u) - 1u) * params.stride.y);
    let span2 = i32((max(valid2, 1u) - 1u) * params.stride.y);
    let span3 = i32((max(valid3, 1u) - 1u) * params.stride.y);
    // The last element a block's 16 rows may reach: a short block (the end
    // of a row) is read directly too where its rows past the row's end
    // stay inside x (they read the next row: sums never stored).
    let x_len = arrayLength(&x);
    let w = i32(params.w);
    let xs = params.x_strides;

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

    for (var tl = 0u; tl < kh * kw; tl++) {
        if lid == 0u {
            tap_shared = vec4<u32>(tl);
        }
        let t = workgroupUniformLoad(&tap_shared).x;
        let ky = t / kw;
        let kx = t % kw;
        // The tap's input row, and each block's first input column (a
        // block's pixels are `stride.y` columns apart).
        let iy = i32(oy * params.stride.x + ky * params.dilation.x) - i32(params.padding.x);
        let row_in = (iy >= 0) & (iy < i32(params.h));
        let ix = i32(ox0 * params.stride.y + kx * params.dilation.y) - i32(params.padding.y);
        let at_row = n * xs.x + u32(max(iy, 0)) * xs.z + c0 + c_lo;
        let ix0 = ix + i32(0u * params.stride.y);
        // Pixel 0's first group channel in x (direct blocks only).
        let at0 = at_row + u32(max(ix0, 0)) * xs.w;
        let fits0 = (valid0 == 16u) | (at0 + 15u * a_stride + SK * KC <= x_len);
        let kind0 = select(
            select(EDGE, DIRECT, fits0 & (ix0 >= 0) & (ix0 + span0 < w)),
            ZERO,
            !row_in | (valid0 == 0u),
        );
        let ix1 = ix + i32(16u * params.stride.y);
        // Pixel 0's first group channel in x (direct blocks only).
        let at1 = at_row + u32(max(ix1, 0)) * xs.w;
        let fits1 = (valid1 == 16u) | (at1 + 15u * a_stride + SK * KC <= x_len);
        let kind1 = select(
            select(EDGE, DIRECT, fits1 & (ix1 >= 0) & (ix1 + span1 < w)),
            ZERO,
            !row_in | (valid1 == 0u),
        );
        let ix2 = ix + i32(32u * params.stride.y);
        // Pixel 0's first group channel in x (direct blocks only).
        let at2 = at_row + u32(max(ix2, 0)) * xs.w;
        let fits2 = (valid2 == 16u) | (at2 + 15u * a_stride + SK * KC <= x_len);
        let kind2 = select(
            select(EDGE, DIRECT, fits2 & (ix2 >= 0) & (ix2 + span2 < w)),
            ZERO,
            !row_in | (valid2 == 0u),
        );
        let ix3 = ix + i32(48u * params.stride.y);
        // Pixel 0's first group channel in x (direct blocks only).
        let at3 = at_row + u32(max(ix3, 0)) * xs.w;
        let fits3 = (valid3 == 16u) | (at3 + 15u * a_stride + SK * KC <= x_len);
        let kind3 = select(
            select(EDGE, DIRECT, fits3 & (ix3 >= 0) & (ix3 + span3 < w)),
            ZERO,
            !row_in | (valid3 == 0u),
        );
        if (kind0 == ZERO) & (kind1 == ZERO) & (kind2 == ZERO) & (kind3 == ZERO) {
            continue;
        }
        // Inside the input (most taps of most runs) no block needs staging:
        // the next 16 channels' blocks are loaded before this step's
        // products, so that their loads are in flight while the tensor
        // cores work.
        // Blocks past the row's end (none of their pixels exist) ride along,
        // read from block 0's address into sums never stored.
        let inside = ((kind0 == DIRECT) | (valid0 == 0u)) & ((kind1 == DIRECT) | (valid1 == 0u))
            & ((kind2 == DIRECT) | (valid2 == 0u)) & ((kind3 == DIRECT) | (valid3 == 0u));
        if inside {
            let wrow0 = ((g * kh * kw + t) * icg + c_lo + sub) * params.ocp + 16u * m0;
            let la1 = select(at0, at1, valid1 > 0u);
            let la2 = select(at0, at2, valid2 > 0u);
            let la3 = select(at0, at3, valid3 > 0u);
            var a0 = coopLoadT<coop_mat16x16<f16, A>>(&x[at0 + sub], a_stride);
            var a1 = coopLoadT<coop_mat16x16<f16, A>>(&x[la1 + sub], a_stride);
            var a2 = a0;
            var a3 = a1;
            if TP == 64u {
                a2 = coopLoadT<coop_mat16x16<f16, A>>(&x[la2 + sub], a_stride);
                a3 = coopLoadT<coop_mat16x16<f16, A>>(&x[la3 + sub], a_stride);
            }
            var w0 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow0], 16u);
            var w1 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow0 + 256u], 16u);
            var w2 = w0;
            var w3 = w1;
            if BN == 4u {
                w2 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow0 + 512u], 16u);
                w3 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow0 + 768u], 16u);
            }
            for (var ci = 16u; ci < KC; ci += 16u) {
                let wrow = wrow0 + ci * params.ocp;
                let na0 = coopLoadT<coop_mat16x16<f16, A>>(&x[at0 + sub + ci], a_stride);
                let na1 = coopLoadT<coop_mat16x16<f16, A>>(&x[la1 + sub + ci], a_stride);
                var na2 = na0;
                var na3 = na1;
                if TP == 64u {
                    na2 = coopLoadT<coop_mat16x16<f16, A>>(&x[la2 + sub + ci], a_stride);
                    na3 = coopLoadT<coop_mat16x16<f16, A>>(&x[la3 + sub + ci], a_stride);
                }
                let nw0 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow], 16u);
                let nw1 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 256u], 16u);
                var nw2 = nw0;
                var nw3 = nw1;
                if BN == 4u {
                    nw2 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 512u], 16u);
                    nw3 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 768u], 16u);
                }
                c00 = coopMultiplyAdd(a0, w0, c00);
                c01 = coopMultiplyAdd(a0, w1, c01);
                if BN == 4u {
                    c02 = coopMultiplyAdd(a0, w2, c02);
                    c03 = coopMultiplyAdd(a0, w3, c03);
                }
                c10 = coopMultiplyAdd(a1, w0, c10);
                c11 = coopMultiplyAdd(a1, w1, c11);
                if BN == 4u {
                    c12 = coopMultiplyAdd(a1, w2, c12);
                    c13 = coopMultiplyAdd(a1, w3, c13);
                }
                if TP == 64u {
                    c20 = coopMultiplyAdd(a2, w0, c20);
                    c21 = coopMultiplyAdd(a2, w1, c21);
                    if BN == 4u {
                        c22 = coopMultiplyAdd(a2, w2, c22);
                        c23 = coopMultiplyAdd(a2, w3, c23);
                    }
                    c30 = coopMultiplyAdd(a3, w0, c30);
                    c31 = coopMultiplyAdd(a3, w1, c31);
                    if BN == 4u {
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
            if BN == 4u {
                c02 = coopMultiplyAdd(a0, w2, c02);
                c03 = coopMultiplyAdd(a0, w3, c03);
            }
            c10 = coopMultiplyAdd(a1, w0, c10);
            c11 = coopMultiplyAdd(a1, w1, c11);
            if BN == 4u {
                c12 = coopMultiplyAdd(a1, w2, c12);
                c13 = coopMultiplyAdd(a1, w3, c13);
            }
            if TP == 64u {
                c20 = coopMultiplyAdd(a2, w0, c20);
                c21 = coopMultiplyAdd(a2, w1, c21);
                if BN == 4u {
                    c22 = coopMultiplyAdd(a2, w2, c22);
                    c23 = coopMultiplyAdd(a2, w3, c23);
                }
                c30 = coopMultiplyAdd(a3, w0, c30);
                c31 = coopMultiplyAdd(a3, w1, c31);
                if BN == 4u {
                    c32 = coopMultiplyAdd(a3, w2, c32);
                    c33 = coopMultiplyAdd(a3, w3, c33);
                }
            }
            continue;
        }
        for (var ci = 0u; ci < KC; ci += 16u) {
            let wrow = ((g * kh * kw + t) * icg + c_lo + sub + ci) * params.ocp + 16u * m0;
            let w0 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow], 16u);
            let w1 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 256u], 16u);
            var w2 = w0;
            var w3 = w1;
            if BN == 4u {
                w2 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 512u], 16u);
                w3 = coopLoadT<coop_mat16x16<f16, B>>(&wt[wrow + 768u], 16u);
            }
            // Each A block, read directly or staged; its four products are
            // written out in each branch, as a cooperative matrix is not kept
            // in a variable that branches set.
            if kind0 == DIRECT {
                let a = coopLoadT<coop_mat16x16<f16, A>>(&x[at0 + sub + ci], a_stride);
                c00 = coopMultiplyAdd(a, w0, c00);
                c01 = coopMultiplyAdd(a, w1, c01);
                if BN == 4u {
                    c02 = coopMultiplyAdd(a, w2, c02);
                    c03 = coopMultiplyAdd(a, w3, c03);
                }
            } else if kind0 == EDGE {
                workgroupBarrier();
                fill(lid, n, u32(iy), ox0 + 0u, valid0, kx, c0 + c_lo + sub + ci);
                workgroupBarrier();
                let a = coopLoadT<coop_mat16x16<f16, A>>(&stage[stage_at], 16u);
                c00 = coopMultiplyAdd(a, w0, c00);
                c01 = coopMultiplyAdd(a, w1, c01);
                if BN == 4u {
                    c02 = coopMultiplyAdd(a, w2, c02);
                    c03 = coopMultiplyAdd(a, w3, c03);
                }
            }
            if kind1 == DIRECT {
                let a = coopLoadT<coop_mat16x16<f16, A>>(&x[at1 + sub + ci], a_stride);
                c10 = coopMultiplyAdd(a, w0, c10);
                c11 = coopMultiplyAdd(a, w1, c11);
                if BN == 4u {
                    c12 = coopMultiplyAdd(a, w2, c12);
                    c13 = coopMultiplyAdd(a, w3, c13);
                }
            } else if kind1 == EDGE {
                workgroupBarrier();
                fill(lid, n, u32(iy), ox0 + 16u, valid1, kx, c0 + c_lo + sub + ci);
                workgroupBarrier();
                let a = coopLoadT<coop_mat16x16<f16, A>>(&stage[stage_at], 16u);
                c10 = coopMultiplyAdd(a, w0, c10);
                c11 = coopMultiplyAdd(a, w1, c11);
                if BN == 4u {
                    c12 = coopMultiplyAdd(a, w2, c12);
                    c13 = coopMultiplyAdd(a, w3, c13);
                }
            }
            if kind2 == DIRECT {
                let a = coopLoadT<coop_mat16x16<f16, A>>(&x[at2 + sub + ci], a_stride);
                c20 = coopMultiplyAdd(a, w0, c20);
                c21 = coopMultiplyAdd(a, w1, c21);
                if BN == 4u {
                    c22 = coopMultiplyAdd(a, w2, c22);
                    c23 = coopMultiplyAdd(a, w3, c23);
                }
            } else if kind2 == EDGE {
                workgroupBarrier();
                fill(lid, n, u32(iy), ox0 + 32u, valid2, kx, c0 + c_lo + sub + ci);
                workgroupBarrier();
                let a = coopLoadT<coop_mat16x16<f16, A>>(&stage[stage_at], 16u);
                c20 = coopMultiplyAdd(a, w0, c20);
                c21 = coopMultiplyAdd(a, w1, c21);
                if BN == 4u {
                    c22 = coopMultiplyAdd(a, w2, c22);
                    c23 = coopMultiplyAdd(a, w3, c23);
                }
            }
            if kind3 == DIRECT {
                let a = coopLoadT<coop_mat16x16<f16, A>>(&x[at3 + sub + ci], a_stride);
                c30 = coopMultiplyAdd(a, w0, c30);
                c31 = coopMultiplyAdd(a, w1, c31);
                if BN == 4u {
                    c32 = coopMultiplyAdd(a, w2, c32);
                    c33 = coopMultiplyAdd(a, w3, c33);
                }
            } else if kind3 == EDGE {
                workgroupBarrier();
                fill(lid, n, u32(iy), ox0 + 48u, valid3, kx, c0 + c_lo + sub + ci);
                workgroupBarrier();
                let a = coopLoadT<coop_mat16x16<f16, A>>(&stage[stage_at], 16u);
                c30 = coopMultiplyAdd(a, w0, c30);
                c31 = coopMultiplyAdd(a, w1, c31);
                if BN == 4u {
                    c32 = coopMultiplyAdd(a, w2, c32);
                    c33 = coopMultiplyAdd(a, w3, c33);
                }
            }
        }
    }

    // Epilogue (conv2d_coop_epilogue.wgsl).
    let p0 = (n * params.oh + oy) * params.ow + ox0;
    write_sums(lid, p0, vec4<u32>(valid0, valid1, valid2, valid3), m0, g,
        c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33);
}
