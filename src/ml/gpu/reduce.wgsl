// A reduction (mean or max, from `INIT`, `accumulate` and `finish`) over
// some axes, one workgroup per output element. Sizes and strides are of
// merged axes (see reduce.rs); strides index the input. Output elements
// follow the kept axes in row-major order.

// Mirrored by `Params` in reduce.rs.
struct Params {
    outputs: u32,
    // Elements reduced into each output.
    count: u32,
    kept_rank: u32,
    reduced_rank: u32,
    // Per axis: (kept size, kept stride, reduced size, reduced stride); the
    // kept axes fill the first kept_rank entries' x and y, the reduced ones
    // the first reduced_rank entries' z and w.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

var<workgroup> partial: array<f32, WG>;

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
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = wid.x + wid.y * nwg.x;
    let count = params.count;
    // Every invocation reaches the barriers; only the sums of out-of-range
    // workgroups (from folding the grid) are thrown away.
    var s = INIT;
    if o < params.outputs {
        let base = kept_offset(o);
        for (var r = lid; r < count; r += WG) {
            s = accumulate(s, f32(x[base + reduced_offset(r)]));
        }
    }
    partial[lid] = s;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        if lid < stride {
            partial[lid] = accumulate(partial[lid], partial[lid + stride]);
        }
        workgroupBarrier();
    }
    if lid == 0u && o < params.outputs {
        y[o] = T(act(finish(partial[0], count)));
    }
}
