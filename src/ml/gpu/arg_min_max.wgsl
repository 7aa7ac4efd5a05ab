// argMin / argMax along one axis, one invocation per output element: the
// scan starts from the axis's first element and moves on only when `better`
// (generated: strict, or not, per select_last_index) says so. `load` reads
// an element as V (f32, i32, or a uint8 unpacked from its word).

// Mirrored by `Params` in arg_min_max.rs.
struct Params {
    outputs: u32,
    // Extent of the axis.
    len: u32,
    // Distance between its elements.
    inner: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<i32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params.outputs {
        return;
    }
    let inner = params.inner;
    let base = (i / inner) * params.len * inner + i % inner;
    var best = load(base);
    var index = 0u;
    for (var k = 1u; k < params.len; k++) {
        let v = load(base + k * inner);
        if better(v, best) {
            best = v;
            index = k;
        }
    }
    y[i] = i32(index);
}
