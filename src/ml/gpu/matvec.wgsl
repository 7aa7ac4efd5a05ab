// A matrix product of few rows (up to 4 a workgroup), for matmul and gemm:
//   y[z][i][j] = act(alpha * sum_p A(z, i, p) * B(z, p, j) + bias(i, j))
// read as in matmul.wgsl. There, a classifier's single row (gemm 1x2048 ->
// 1x1000) made 32 workgroups, each walking all of K for 32 columns with 31
// of its 32 rows idle: 0.154 ms on an H100 to read 8 MB. Here a workgroup
// of 256 takes rows 4 wid.y .. + 3 of JB columns and splits K over its
// invocations, which add their sums up through workgroup memory:
// - ALONG_K (B's columns contiguous along K: gemm's transposed B, a linear
//   layer's [N][K] weight): 4 columns, 64 invocations each, adjacent
//   invocations reading adjacent elements of a column;
// - otherwise (B's rows contiguous): 64 columns, 4 invocations each,
//   adjacent invocations reading adjacent columns.
// A's few values are read by every column, from cache. Params:
// matmul_params.wgsl.

@group(0) @binding(1) var<storage, read> a: array<TI>;
@group(0) @binding(2) var<storage, read> b: array<TI>;

const JB: u32 = select(64u, 4u, ALONG_K);
// Invocations a column.
const KL: u32 = 256u / JB;
// [row][invocation]
var<workgroup> sums: array<f32, 1024>;

// The invocation of column jl and K lane kl.
fn lane(jl: u32, kl: u32) -> u32 {
    if ALONG_K {
        return jl * KL + kl;
    }
    return kl * JB + jl;
}

// A(i, p), 0 for a row past m (its load unconditional, at element 0).
fn a_at(a_off: u32, i: u32, p: u32) -> f32 {
    let ok = i < params.m;
    return select(0.0, f32(a[select(0u, a_off + i * params.a_strides.x + p * params.a_strides.y, ok)]), ok);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let n = params.n;
    let k = params.k;
    let z = wid.z;
    let off = batch_offsets(z);
    var jl = li % JB;
    var kl = li / JB;
    if ALONG_K {
        jl = li / KL;
        kl = li % KL;
    }
    let j = wid.x * JB + jl;
    let i0 = wid.y * 4u;
    var acc = vec4<f32>(0.0);
    if j < n {
        let bj = off.y + j * params.b_strides.y;
        for (var p = kl; p < k; p += KL) {
            let bv = f32(b[bj + p * params.b_strides.x]);
            acc += bv * vec4<f32>(a_at(off.x, i0, p), a_at(off.x, i0 + 1u, p),
                a_at(off.x, i0 + 2u, p), a_at(off.x, i0 + 3u, p));
        }
    }
    for (var r = 0u; r < 4u; r++) {
        sums[r * 256u + li] = acc[r];
    }
    workgroupBarrier();
    for (var s = KL / 2u; s > 0u; s /= 2u) {
        if kl < s {
            for (var r = 0u; r < 4u; r++) {
                sums[r * 256u + li] += sums[r * 256u + lane(jl, kl + s)];
            }
        }
        workgroupBarrier();
    }
    if kl == 0u && j < n {
        for (var r = 0u; r < 4u; r++) {
            let i = i0 + r;
            if i < params.m {
                y[(z * params.m + i) * n + j] = T(act(params.alpha * sums[r * 256u + li] + bias(i, j)));
            }
        }
    }
}
