// Padding. Output element i at coordinates c reads input coordinate
// c - beginning on every axis; outside the input, mode 0 (constant) writes
// `fill()`, mode 1 (edge) clamps to the border and mode 2 (reflection)
// mirrors about the border element without repeating it. `fill` is generated
// per element type (`value` as f32, `value_int` for int32).

// Mirrored by `Params` in pad.rs.
struct Params {
    n: u32,
    rank: u32,
    mode: u32,
    value: f32,
    value_int: i32,
    // Per axis (output axes of extent 1 left out): (output extent, input
    // extent, input stride, beginning).
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
    let mode = params.mode;
    var rem = i;
    var j = 0u;
    for (var d = rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        let extent = axis.x;
        let n = i32(axis.y);
        var c = i32(rem % extent) - i32(axis.w);
        rem = rem / extent;
        if c < 0 || c >= n {
            if mode == 0u {
                y[i] = fill();
                return;
            } else if mode == 1u {
                c = clamp(c, 0, n - 1);
            } else {
                c = select(2 * (n - 1) - c, -c, c < 0);
            }
        }
        j += u32(c) * axis.z;
    }
    y[i] = x[j];
}
