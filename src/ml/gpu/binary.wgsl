// Element-wise binary op with numpy broadcasting. The helper functions
// `binop` (in the computation type C) and `finish` (C -> T, adding the fused
// residual and applying the fused activations for floats) are generated per
// op and type, with the residual's and output's bindings.

// Mirrored by `BinaryParams` in elementwise.rs.
struct Params {
    n: u32,
    rank: u32,
    // Where element i is stored (`fn place`, concat_writes.rs).
    chunk_in: u32,
    chunk_out: u32,
    offset: u32,
    // Where each operand starts (a slice read through, slice_reads.rs).
    a_base: u32,
    b_base: u32,
    // Per axis (folded, see lower.rs `axes`): (output extent, a stride,
    // b stride, 0); a stride of 0 repeats the operand along that axis.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> a: array<TI>;
@group(0) @binding(2) var<storage, read> b: array<TI>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.n {
        return;
    }
    let rank = params.rank;
    var rem = i;
    var ia = params.a_base;
    var ib = params.b_base;
    for (var d = rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        let c = rem % axis.x;
        rem = rem / axis.x;
        ia += c * axis.y;
        ib += c * axis.z;
    }
    y[place(i)] = finish(binop(C(a[ia]), C(b[ib])), i);
}
