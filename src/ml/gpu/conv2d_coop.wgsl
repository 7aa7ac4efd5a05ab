// conv2d as an implicit GEMM on cooperative matrices (tensor cores), for
// float16 inputs and filters: the mapping of conv2d_gemm.wgsl (rows are
// output pixels, columns a group's output channels, k = (ky * kw + kx) * icg
// + ci), a 128-pixel x 64-channel tile per 256-invocation workgroup. The
// eight 32-wide subgroups each own a 32 x 32 block: 2 x 2 16x16x16
// f16 x f16 -> f32 products per 16 of k. Sums stay f32 until the epilogue.
// The next slice is fetched into registers while the current one is
// multiplied. Used only where the adapter offers that shape with 32-wide
// subgroups (lid / 32 is then the subgroup, so every matrix operation is
// uniform in its subgroup). Params: conv2d_params.wgsl. WG must be 256.

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

const TM: u32 = 128u;
const TN: u32 = 64u;
const TK: u32 = 32u;

var<workgroup> tile_a: array<f16, 4096>; // [k][pixel], TK x TM: A column-major
var<workgroup> tile_b: array<f16, 2048>; // [k][channel], TK x TN: B row-major
// [pixel][channel], TM x TN, rows padded to TCS so that the epilogue's
// reads down a column (NCHW output) spread over the banks.
const TCS: u32 = 68u;
var<workgroup> tile_c: array<f32, 8704>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let kdim = params.kdim;
    let g = wid.z;
    let channel_tiles = params.channel_tiles;
    let p0 = (wid.x + (wid.y / channel_tiles) * nwg.x) * TM;
    let m0 = (wid.y % channel_tiles) * TN;

    // Loading role for A: pixel column `acol`, reduction rows arow0 .. +15.
    let acol = lid % TM;
    let arow0 = (lid / TM) * 16u;
    // Loading role for B: channel column `bcol`, reduction rows brow0 .. +7.
    let bcol = lid % TN;
    let brow0 = (lid / TN) * 8u;
    set_loaders(p0 + acol, g, m0 + bcol);

    // Matrix role: subgroup `sg` owns pixels 32 (sg % 4) .. + 31 and
    // channels 32 (sg / 4) .. + 31 of the tile.
    let sg = lid / 32u;
    let pm = 32u * (sg % 4u);
    let cn = 32u * (sg / 4u);
    for (var i = lid; i < TM * TCS; i += WG) {
        tile_c[i] = 0.0;
    }
    workgroupBarrier();
    var c00 = coopLoadT<coop_mat16x16<f32, C>>(&tile_c[pm * TCS + cn], TCS);
    var c01 = c00;
    var c10 = c00;
    var c11 = c00;

    var na0 = load_a4(arow0);
    var na1 = load_a4(arow0 + 4u);
    var na2 = load_a4(arow0 + 8u);
    var na3 = load_a4(arow0 + 12u);
    var nb0 = load_b4(brow0);
    var nb1 = load_b4(brow0 + 4u);
    for (var k0 = 0u; k0 < kdim; k0 += TK) {
        for (var q = 0u; q < 4u; q++) {
            tile_a[(arow0 + q) * TM + acol] = f16(na0[q]);
            tile_a[(arow0 + 4u + q) * TM + acol] = f16(na1[q]);
            tile_a[(arow0 + 8u + q) * TM + acol] = f16(na2[q]);
            tile_a[(arow0 + 12u + q) * TM + acol] = f16(na3[q]);
            tile_b[(brow0 + q) * TN + bcol] = f16(nb0[q]);
            tile_b[(brow0 + 4u + q) * TN + bcol] = f16(nb1[q]);
        }
        workgroupBarrier();
        if k0 + TK < kdim {
            let k = k0 + TK;
            na0 = load_a4(k + arow0);
            na1 = load_a4(k + arow0 + 4u);
            na2 = load_a4(k + arow0 + 8u);
            na3 = load_a4(k + arow0 + 12u);
            nb0 = load_b4(k + brow0);
            nb1 = load_b4(k + brow0 + 4u);
        }
        for (var ks = 0u; ks < TK; ks += 16u) {
            let a0 = coopLoad<coop_mat16x16<f16, A>>(&tile_a[ks * TM + pm], TM);
            let a1 = coopLoad<coop_mat16x16<f16, A>>(&tile_a[ks * TM + pm + 16u], TM);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[ks * TN + cn], TN);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[ks * TN + cn + 16u], TN);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
        }
        workgroupBarrier();
    }

    coopStoreT(c00, &tile_c[pm * TCS + cn], TCS);
    coopStoreT(c01, &tile_c[pm * TCS + cn + 16u], TCS);
    coopStoreT(c10, &tile_c[(pm + 16u) * TCS + cn], TCS);
    coopStoreT(c11, &tile_c[(pm + 16u) * TCS + cn + 16u], TCS);
    workgroupBarrier();

    // Epilogue: consecutive invocations write consecutive addresses, which
    // are channels of a pixel in NHWC and pixels of a channel in NCHW.
    let nhwc = params.nhwc != 0u;
    for (var i = lid; i < TM * TN; i += WG) {
        let pi = select(i % TM, i / TN, nhwc);
        let mi = select(i / TM, i % TN, nhwc);
        store_output(p0 + pi, m0 + mi, g, tile_c[pi * TCS + mi]);
    }
}
