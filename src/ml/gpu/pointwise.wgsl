// A pointwise group's kernel (pointwise.rs): `evaluate(i)`, generated per
// group, computes every member at element i from the group's reads and
// stores the results read outside the group (`fn place`).

// Mirrored by `PointwiseParams` in pointwise.rs.
struct Params {
    n: u32,
    rank: u32,
    // Folded axes' extents, 4 a vector.
    extents: array<vec4<u32>, 2>,
    // Read r's stride along folded axis d: strides[2 r + d / 4][d % 4].
    strides: array<vec4<u32>, 12>,
    // Read r's first element: bases[r / 4][r % 4].
    bases: array<vec4<u32>, 2>,
    // Store s's (chunk_in, chunk_out, offset, 0), as concat_writes.rs places.
    places: array<vec4<u32>, 4>,
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.n {
        return;
    }
    evaluate(i);
}
