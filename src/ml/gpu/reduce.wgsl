// A reduction (mean or max, from `INIT`, `accumulate` and `finish`) over
// some axes, one workgroup per output element.
// params: [outputs, count, nk, kept sizes[nk], kept strides[nk],
//          nr, reduced sizes[nr], reduced strides[nr]]
// Sizes and strides are of merged axes (see reduce.rs); strides index
// the input. Output elements follow the kept axes in row-major order.

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

var<workgroup> partial: array<f32, WG>;

/// Input offset of flat index `i` over the axes whose sizes start at
/// params[at] (strides follow the `rank` sizes).
fn offset(i: u32, at: u32, rank: u32) -> u32 {
    var rem = i;
    var off = 0u;
    for (var d = rank; d > 0u; d--) {
        let k = d - 1u;
        let len = params[at + k];
        off += (rem % len) * params[at + rank + k];
        rem = rem / len;
    }
    return off;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let o = wid.x + wid.y * nwg.x;
    let count = params[1];
    let nk = params[2];
    let nr = params[3u + 2u * nk];
    let at = 4u + 2u * nk;
    // Every invocation reaches the barriers; only the sums of out-of-range
    // workgroups (from folding the grid) are thrown away.
    var s = INIT;
    if o < params[0] {
        let base = offset(o, 3u, nk);
        for (var r = lid; r < count; r += WG) {
            s = accumulate(s, f32(x[base + offset(r, at, nr)]));
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
    if lid == 0u && o < params[0] {
        y[o] = T(act(finish(partial[0], count)));
    }
}
