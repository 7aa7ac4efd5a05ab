// Copies a concat's operands (PARTS of them, bound as x0, x1, ... by the
// generated `copy`) into their slabs of the output in one dispatch. The
// parts' elements are numbered one after another; part k, seen as
// [outer, chunk_in] (chunk_in = its extent along the axis times the inner
// size), has its row o land at o * chunk_out + offset in the output.

// Mirrored by `Params` in concat.rs.
struct Params {
    // Elements of all the parts together.
    n: u32,
    chunk_out: u32,
    // Per part: its first element among the n, its chunk_in, its offset.
    parts: array<vec4<u32>, 8>,
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat_id(gid, nwg);
    if e >= params.n {
        return;
    }
    var k = 0u;
    while k + 1u < PARTS && e >= params.parts[k + 1u].x {
        k++;
    }
    let p = params.parts[k];
    let i = e - p.x;
    copy(k, i, (i / p.y) * params.chunk_out + p.z + i % p.y);
}
