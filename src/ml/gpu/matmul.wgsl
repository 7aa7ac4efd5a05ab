// Tiled matrix product for matmul and gemm:
//   y[z][i][j] = act(alpha * sum_p A(z, i, p) * B(z, p, j) + bias(i, j))
// Element (i, p) of A is a[a_off(z) + i * a_rs + p * a_cs] and (p, j) of B
// is b[b_off(z) + p * b_rs + j * b_cs], so transposed gemm operands are read
// in place. z is the batch index (workgroup z); its offsets come from the
// broadcast batch strides. Each 16x16 workgroup computes a 32x32 output
// tile, 2x2 values per invocation, staging 32x16 of A and 16x32 of B in
// workgroup memory per step along K. The output binding `y` and `bias` (0,
// or beta * c broadcast) are generated per op. Params: matmul_params.wgsl.
// Products of up to 4 rows take matvec.wgsl.

@group(0) @binding(1) var<storage, read> a: array<TI>;
@group(0) @binding(2) var<storage, read> b: array<TI>;

const TM: u32 = 32u;
const TN: u32 = 32u;
const TK: u32 = 16u;

var<workgroup> tile_a: array<f32, 512>; // [TM][TK]
var<workgroup> tile_b: array<f32, 512>; // [TK][TN]

fn store(z: u32, i: u32, j: u32, acc: f32) {
    let m = params.m;
    let n = params.n;
    if i < m && j < n {
        y[(z * m + i) * n + j] = T(act(params.alpha * acc + bias(i, j)));
    }
}

@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let a_rs = params.a_strides.x;
    let a_cs = params.a_strides.y;
    let b_rs = params.b_strides.x;
    let b_cs = params.b_strides.y;
    let z = wid.z;
    let off = batch_offsets(z);
    let a_off = off.x;
    let b_off = off.y;
    let row0 = wid.y * TM;
    let col0 = wid.x * TN;
    var acc00 = 0.0;
    var acc01 = 0.0;
    var acc10 = 0.0;
    var acc11 = 0.0;
    for (var k0 = 0u; k0 < k; k0 += TK) {
        for (var e = li; e < TM * TK; e += 256u) {
            let gi = row0 + e / TK;
            let gp = k0 + e % TK;
            var v = 0.0;
            if gi < m && gp < k {
                v = f32(a[a_off + gi * a_rs + gp * a_cs]);
            }
            tile_a[e] = v;
        }
        for (var e = li; e < TK * TN; e += 256u) {
            let gp = k0 + e / TN;
            let gj = col0 + e % TN;
            var v = 0.0;
            if gp < k && gj < n {
                v = f32(b[b_off + gp * b_rs + gj * b_cs]);
            }
            tile_b[e] = v;
        }
        workgroupBarrier();
        for (var p = 0u; p < TK; p++) {
            let a0 = tile_a[lid.y * TK + p];
            let a1 = tile_a[(lid.y + 16u) * TK + p];
            let b0 = tile_b[p * TN + lid.x];
            let b1 = tile_b[p * TN + lid.x + 16u];
            acc00 += a0 * b0;
            acc01 += a0 * b1;
            acc10 += a1 * b0;
            acc11 += a1 * b1;
        }
        workgroupBarrier();
    }
    store(z, row0 + lid.y, col0 + lid.x, acc00);
    store(z, row0 + lid.y, col0 + lid.x + 16u, acc01);
    store(z, row0 + lid.y + 16u, col0 + lid.x, acc10);
    store(z, row0 + lid.y + 16u, col0 + lid.x + 16u, acc11);
}
