// Type conversion. uint8 is packed four values to a u32 word, so a uint8
// output is written one word per thread and never shared between threads.
// `load(j)` reads element j in its own representation and `store(t, n)`
// converts and writes thread t's share; both are generated per type pair.

// Mirrored by `CastParams` in elementwise.rs.
struct Params {
    // Elements.
    n: u32,
    // Threads: n, or words of a uint8 output.
    threads: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if t >= params.threads {
        return;
    }
    store(t, params.n);
}
