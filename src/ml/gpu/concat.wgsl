// Copies one concat input into its slab of the output. Seen as
// [outer, chunk_in] (chunk_in = its extent along the axis times the inner
// size), row o of the input lands at o * chunk_out + offset in the output.

// Mirrored by `Params` in concat.rs.
struct Params {
    // Input elements.
    n: u32,
    chunk_in: u32,
    chunk_out: u32,
    offset: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat_id(gid, nwg);
    if e >= params.n {
        return;
    }
    let chunk_in = params.chunk_in;
    y[(e / chunk_in) * params.chunk_out + params.offset + e % chunk_in] = x[e];
}
