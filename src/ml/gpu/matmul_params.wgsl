// The parameters of matmul.wgsl and matvec.wgsl (matmul and gemm).
// Mirrored by `Params` in matmul.rs.
struct Params {
    m: u32,
    n: u32,
    k: u32,
    batch_rank: u32,
    // Element strides (row, column) of A and B, and of the c that gemm adds.
    a_strides: vec2<u32>,
    b_strides: vec2<u32>,
    c_strides: vec2<u32>,
    alpha: f32,
    beta: f32,
    // Per batch axis (folded, see lower.rs `axes`): (extent, a stride,
    // b stride, 0), strides in elements, 0 where broadcast.
    batch: array<vec4<u32>, MAX_RANK>,
}

// The offsets of batch z's A and B, from the broadcast batch strides.
fn batch_offsets(z: u32) -> vec2<u32> {
    var rem = z;
    var off = vec2<u32>(0u);
    for (var d = params.batch_rank; d > 0u; d--) {
        let axis = params.batch[d - 1u];
        let c = rem % axis.x;
        rem = rem / axis.x;
        off += c * axis.yz;
    }
    return off;
}
