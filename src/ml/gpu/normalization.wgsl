// The normalization core, element-wise with numpy broadcasting:
// y = (x - mean) / sqrt(variance + epsilon), then the fused activations.

// Mirrored by `Params` in normalization.rs.
struct Params {
    n: u32,
    rank: u32,
    epsilon: f32,
    // Per axis (folded, see lower.rs `axes`): (output extent, x stride,
    // mean stride, variance stride); 0 repeats an operand along the axis.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> mean: array<TI>;
@group(0) @binding(3) var<storage, read> variance: array<TI>;
@group(0) @binding(4) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.n {
        return;
    }
    var rem = i;
    var ix = 0u;
    var im = 0u;
    var iv = 0u;
    for (var d = params.rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        let c = rem % axis.x;
        rem = rem / axis.x;
        ix += c * axis.y;
        im += c * axis.z;
        iv += c * axis.w;
    }
    let v = (f32(x[ix]) - f32(mean[im])) / sqrt(f32(variance[iv]) + params.epsilon);
    y[i] = T(act(v));
}
