// Type conversion. params: [n elements, n threads]. uint8 is packed four
// values to a u32 word, so a uint8 output is written one word per thread
// (`PER_THREAD` = 4) and never shared between threads. `load(j)` reads
// element j in its own representation and `convert` maps it to the output
// element; both are generated per type pair.

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if t >= params[1] {
        return;
    }
    store(t, params[0]);
}
