// prelu: y = x where x >= 0, else x * slope, with the slope broadcast to the
// input's shape.

// Mirrored by `Params` in prelu.rs.
struct Params {
    n: u32,
    rank: u32,
    // Per axis (folded, see lower.rs `axes`): (extent, slope stride, 0, 0);
    // a stride of 0 repeats the slope along that axis.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> slope: array<TI>;
@group(0) @binding(3) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.n {
        return;
    }
    let rank = params.rank;
    var rem = i;
    var js = 0u;
    for (var d = rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        js += (rem % axis.x) * axis.y;
        rem = rem / axis.x;
    }
    let v = f32(x[i]);
    y[i] = T(act(select(v * f32(slope[js]), v, v >= 0.0)));
}
