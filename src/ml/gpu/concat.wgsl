// Copies one concat input into its slab of the output. Seen as
// [outer, chunk_in] (chunk_in = its extent along the axis times the inner
// size), row o of the input lands at o * chunk_out + offset in the output.
// params: [n (input elements), chunk_in, chunk_out, offset]

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat_id(gid, nwg);
    if e >= params[0] {
        return;
    }
    let chunk_in = params[1];
    y[(e / chunk_in) * params[2] + params[3] + e % chunk_in] = x[e];
}
