// A reduction over some axes, `row_threads` consecutive invocations per
// output element (a power of two dividing WG). `A`, `load`, `init`,
// `element`, `combine` and `finish` are generated per kind and type (see
// reduce.rs). Sizes and strides are of merged axes; strides index the
// input. Output elements follow the kept axes in row-major order.

// Mirrored by `Params` in reduce.rs.
struct Params {
    outputs: u32,
    // Elements reduced into each output.
    count: u32,
    kept_rank: u32,
    reduced_rank: u32,
    // Invocations per output.
    row_threads: u32,
    // Per axis: (kept size, kept stride, reduced size, reduced stride); the
    // kept axes fill the first kept_rank entries' x and y, the reduced ones
    // the first reduced_rank entries' z and w.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

var<workgroup> partial: array<A, WG>;

/// Input offset of output element `o` (its kept axes' part).
fn kept_offset(o: u32) -> u32 {
    var rem = o;
    var off = 0u;
    for (var d = params.kept_rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        off += (rem % axis.x) * axis.y;
        rem = rem / axis.x;
    }
    return off;
}

/// Input offset of the `r`-th reduced element of an output.
fn reduced_offset(r: u32) -> u32 {
    var rem = r;
    var off = 0u;
    for (var d = params.reduced_rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        off += (rem % axis.z) * axis.w;
        rem = rem / axis.z;
    }
    return off;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let rt = params.row_threads;
    let o = flat_id(gid, nwg) / rt;
    let lane = lid % rt;
    let count = params.count;
    let live = o < params.outputs;
    // Every invocation reaches the barriers; lanes past the last output
    // (from folding the grid) start from element 0 and are thrown away.
    let base = select(0u, kept_offset(o), live);
    var s = init(base);
    if live {
        // Four loads issued before their combines: a GPU runs a subgroup's
        // instructions in order, so one load per iteration waited out the
        // memory latency for every element (a global pool of 128 x 128 x 16
        // took 30 us on an H100 with only 16 workgroups in flight). The
        // combine order is unchanged.
        var r = lane;
        for (; r + 3u * rt < count; r += 4u * rt) {
            let v0 = load(base + reduced_offset(r));
            let v1 = load(base + reduced_offset(r + rt));
            let v2 = load(base + reduced_offset(r + 2u * rt));
            let v3 = load(base + reduced_offset(r + 3u * rt));
            s = combine(s, element(v0));
            s = combine(s, element(v1));
            s = combine(s, element(v2));
            s = combine(s, element(v3));
        }
        for (; r < count; r += rt) {
            s = combine(s, element(load(base + reduced_offset(r))));
        }
    }
    partial[lid] = s;
    for (var k = rt / 2u; k > 0u; k /= 2u) {
        workgroupBarrier();
        if lane < k {
            partial[lid] = combine(partial[lid], partial[lid + k]);
        }
    }
    // Lane 0 wrote the last combination itself: no barrier needed.
    if lane == 0u && live {
        y[o] = finish(partial[lid], count);
    }
}
