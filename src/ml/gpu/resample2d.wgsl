// resample2d, one output element per invocation: a scalar, or four
// adjacent channels where the last axis is not resampled (resample2d.rs's
// `lanes`: XV, YV and FV are then vec4s, and the shapes and strides count
// them). The tap tables hold, per
// output row and then per output column, (i0, i1, weight of i1 as f32
// bits); nearest has i0 == i1 and weight 0, so one formula serves both
// modes.

// Mirrored by `Params` in resample2d.rs.
struct Params {
    out_shape: vec4<u32>,
    // Input element strides.
    x_strides: vec4<u32>,
    // Output elements.
    total: u32,
    // The resampled axes (rows, columns).
    axis_y: u32,
    axis_x: u32,
}

@group(0) @binding(1) var<storage, read> x: array<XV>;
@group(0) @binding(2) var<storage, read_write> y: array<YV>;
// 3 * out_shape[axis_y] row entries, then 3 * out_shape[axis_x] column ones.
@group(0) @binding(3) var<storage, read> taps: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.total {
        return;
    }
    let ay = params.axis_y;
    let ax = params.axis_x;
    var rem = i;
    var base = 0u;
    var cy = 0u;
    var cx = 0u;
    for (var d = 4u; d > 0u; d--) {
        let k = d - 1u;
        let len = params.out_shape[k];
        let c = rem % len;
        rem = rem / len;
        if k == ay {
            cy = c;
        } else if k == ax {
            cx = c;
        } else {
            base += c * params.x_strides[k];
        }
    }
    let sy = params.x_strides[ay];
    let sx = params.x_strides[ax];
    let ty = 3u * cy;
    let tx = 3u * params.out_shape[ay] + 3u * cx;
    let y0 = base + taps[ty] * sy;
    let y1 = base + taps[ty + 1u] * sy;
    let x0 = taps[tx] * sx;
    let x1 = taps[tx + 1u] * sx;
    let fy = bitcast<f32>(taps[ty + 2u]);
    let fx = bitcast<f32>(taps[tx + 2u]);
    let top = FV(x[y0 + x0]) * (1.0 - fx) + FV(x[y0 + x1]) * fx;
    let bottom = FV(x[y1 + x0]) * (1.0 - fx) + FV(x[y1 + x1]) * fx;
    y[i] = put(top * (1.0 - fy) + bottom * fy);
}
