// Matrix product on cooperative matrices (tensor cores), for matmul and
// gemm on float16 operands:
//   y[z][i][j] = act(alpha * sum_p A(z, i, p) * B(z, p, j) + bias(i, j))
// read as in matmul.wgsl (any row and column strides, so a transposed gemm
// operand or an attention's K^T is read in place; broadcast batch offsets).
//
// One workgroup is one 32-wide subgroup (the tensor-core adapters run
// 32-wide subgroups, so every branch that depends on the workgroup is
// uniform in the subgroup, as cooperative operations require), owning a
// 64 x 64 tile of the output: 4 x 4 products of 16x16x16 per step of 16
// along K, sums in f32 until the epilogue. Each step stages the step's A
// (64 x 16) and B (16 x 64) through workgroup memory, zero past the
// matrices' edges, so every shape and stride takes this kernel: the
// cooperative loads then read aligned, contiguous blocks, whatever the
// operands' layout. Each staged block is used by 4 products.
//
// naga takes loop counters as non-uniform, so each step's K offset comes
// through `workgroupUniformLoad`, as the tensor-core conv2d kernels' taps do.
// Params: matmul_params.wgsl (also `store`). WG must be 32.

@group(0) @binding(1) var<storage, read> a: array<TI>;
@group(0) @binding(2) var<storage, read> b: array<TI>;

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 16u;
// Every workgroup variable's size is a multiple of 16 bytes: a cooperative
// load or store needs a 16-byte aligned address (conv2d_coop_direct.wgsl).
var<workgroup> tile_a: array<f16, 1024>; // [TM][TK]
var<workgroup> tile_b: array<f16, 1024>; // [TK][TN]
// One row of 4 blocks' sums for the epilogue: [16 rows][TCS], rows padded
// so that a column's reads spread over the banks.
const TCS: u32 = 68u;
var<workgroup> tile_c: array<f32, 1088>;
// The step, read back uniform.
var<workgroup> step_shared: vec4<u32>;

// Stages step k0's A and B tiles of the output tile at (row0, col0).
fn stage(lid: u32, z_off: vec2<u32>, row0: u32, col0: u32, k0: u32) {
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let a_rs = params.a_strides.x;
    let a_cs = params.a_strides.y;
    let b_rs = params.b_strides.x;
    let b_cs = params.b_strides.y;
    // Adjacent lanes read adjacent K of a row of A, adjacent columns of a
    // row of B.
    for (var e = lid; e < TM * TK; e += WG) {
        let gi = row0 + e / TK;
        let gp = k0 + e % TK;
        var v = f16(0.0);
        if gi < m && gp < k {
            v = f16(a[z_off.x + gi * a_rs + gp * a_cs]);
        }
        tile_a[e] = v;
    }
    for (var e = lid; e < TK * TN; e += WG) {
        let gp = k0 + e / TN;
        let gj = col0 + e % TN;
        var v = f16(0.0);
        if gp < k && gj < n {
            v = f16(b[z_off.y + gp * b_rs + gj * b_cs]);
        }
        tile_b[e] = v;
    }
}

// Writes the 16 rows from r0 staged in tile_c (columns col0 .. + 63):
// adjacent lanes write adjacent columns.
fn write_rows(lid: u32, z: u32, r0: u32, col0: u32) {
    for (var e = lid; e < 16u * TN; e += WG) {
        let r = e / TN;
        let c = e % TN;
        store(z, r0 + r, col0 + c, tile_c[r * TCS + c]);
    }
}

// One row of blocks' sums into tile_c, for `write_rows`.
fn stage_sums(c0: coop_mat16x16<f32, C>, c1: coop_mat16x16<f32, C>,
              c2: coop_mat16x16<f32, C>, c3: coop_mat16x16<f32, C>) {
    coopStoreT(c0, &tile_c[0], TCS);
    coopStoreT(c1, &tile_c[16], TCS);
    coopStoreT(c2, &tile_c[32], TCS);
    coopStoreT(c3, &tile_c[48], TCS);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let z = wid.z;
    let z_off = batch_offsets(z);
    let row0 = wid.y * TM;
    let col0 = wid.x * TN;

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

    let steps = (params.k + TK - 1u) / TK;
    for (var s = 0u; s < steps; s++) {
        if lid == 0u {
            step_shared = vec4<u32>(s);
        }
        // Also the barrier after the last step's products.
        let k0 = workgroupUniformLoad(&step_shared).x * TK;
        stage(lid, z_off, row0, col0, k0);
        workgroupBarrier();
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[0], TK);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[256], TK);
        let a2 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[512], TK);
        let a3 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[768], TK);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[0], TN);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[16], TN);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[32], TN);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[48], TN);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
        c20 = coopMultiplyAdd(a2, b0, c20);
        c21 = coopMultiplyAdd(a2, b1, c21);
        c22 = coopMultiplyAdd(a2, b2, c22);
        c23 = coopMultiplyAdd(a2, b3, c23);
        c30 = coopMultiplyAdd(a3, b0, c30);
        c31 = coopMultiplyAdd(a3, b1, c31);
        c32 = coopMultiplyAdd(a3, b2, c32);
        c33 = coopMultiplyAdd(a3, b3, c33);
    }

    workgroupBarrier();
    stage_sums(c00, c01, c02, c03);
    workgroupBarrier();
    write_rows(lid, z, row0, col0);
    workgroupBarrier();
    stage_sums(c10, c11, c12, c13);
    workgroupBarrier();
    write_rows(lid, z, row0 + 16u, col0);
    workgroupBarrier();
    stage_sums(c20, c21, c22, c23);
    workgroupBarrier();
    write_rows(lid, z, row0 + 32u, col0);
    workgroupBarrier();
    stage_sums(c30, c31, c32, c33);
    workgroupBarrier();
    write_rows(lid, z, row0 + 48u, col0);
}
