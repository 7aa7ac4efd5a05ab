// A strided view of the input, copied out: output element i, at coordinates
// c in the output shape, is x[base + sum_k c[k] * mult[k]]. Slice, split and
// transpose are all such views (they differ only in base and mult), and the
// copy is in the element type itself so int32 never round-trips through f32.

// Mirrored by `Params` in slice.rs.
struct Params {
    n: u32,
    rank: u32,
    base: u32,
    // Where element i is stored (`fn place`, concat_writes.rs).
    chunk_in: u32,
    chunk_out: u32,
    offset: u32,
    // Per axis (folded, see lower.rs `axes`): (output extent, mult, 0, 0).
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.n {
        return;
    }
    let rank = params.rank;
    var rem = i;
    var j = params.base;
    for (var d = rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        j += (rem % axis.x) * axis.y;
        rem = rem / axis.x;
    }
    y[place(i)] = x[j];
}
