// A float binary op with numpy broadcasting and a fused residual: an `add`
// of its result and a tensor of the output's shape, before the activations
// (`ml::fuse`: a squeeze-and-excitation gate times a skip connection, plus
// another). `binop` is generated per op. Params: binary_residual.rs.

struct Params {
    n: u32,
    rank: u32,
    // Per axis (folded, see lower.rs `axes`): (output extent, a stride,
    // b stride, 0); a stride of 0 repeats the operand along that axis.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> a: array<TI>;
@group(0) @binding(2) var<storage, read> b: array<TI>;
// The residual has the output's shape: element i is the output's.
@group(0) @binding(3) var<storage, read> r: array<T>;
@group(0) @binding(4) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.n {
        return;
    }
    var rem = i;
    var ia = 0u;
    var ib = 0u;
    for (var d = params.rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        let c = rem % axis.x;
        rem = rem / axis.x;
        ia += c * axis.y;
        ib += c * axis.z;
    }
    y[i] = T(act(binop(f32(a[ia]), f32(b[ib])) + f32(r[i])));
}
