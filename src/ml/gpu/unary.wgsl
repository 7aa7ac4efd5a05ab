// Element-wise unary function: y = apply(x), generated per type (the
// activation chain for floats, abs or neg for int32).

// Mirrored by `UnaryParams` in elementwise.rs.
struct Params {
    n: u32,
    // Where element i is stored (`fn place`, concat_writes.rs).
    chunk_in: u32,
    chunk_out: u32,
    offset: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.n {
        return;
    }
    y[place(i)] = apply(x[i]);
}
