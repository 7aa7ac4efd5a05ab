// expand and tile: output element i, at coordinates c, copies the input at
// coordinates c[k] % input extent[k] (the input aligned to the output's
// rank). `store(t)` (generated, broadcast.rs `element_copy`) writes
// invocation t's element, or its word of four uint8 elements.

// Mirrored by `Params` in broadcast.rs.
struct Params {
    // Output elements.
    n: u32,
    // Invocations: n, or words of a uint8 output.
    threads: u32,
    rank: u32,
    // Per axis (folded): (output extent, input extent, input stride, 0).
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

/// The input element output element `i` copies.
fn source(i: u32) -> u32 {
    var rem = i;
    var j = 0u;
    for (var d = params.rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        j += (rem % axis.x) % axis.y * axis.z;
        rem = rem / axis.x;
    }
    return j;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if t >= params.threads {
        return;
    }
    store(t);
}
