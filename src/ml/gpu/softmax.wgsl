// softmax along one axis, numerically stable: y = exp(x - max) / sum.
// Each row (the `len` elements along the axis, `inner` apart) is reduced by
// `row_threads` consecutive invocations (a power of two dividing WG, from the
// row length), so short rows do not leave most of a workgroup idle and long
// rows are still spread over a workgroup. Reductions go through workgroup
// memory in a tree; every invocation reaches every barrier, including those
// past the last row.

// Mirrored by `Params` in softmax.rs.
struct Params {
    rows: u32,
    len: u32,
    // Distance between a row's elements.
    inner: u32,
    row_threads: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let rt = params.row_threads;
    let t = flat_id(gid, nwg);
    let row = t / rt;
    let lane = lid % rt;
    let first = lid - lane;
    let len = params.len;
    let inner = params.inner;
    let live = row < params.rows;
    let base = (row / inner) * len * inner + row % inner;

    var m = -3.40282347e38;
    if live {
        for (var k = lane; k < len; k += rt) {
            m = max(m, f32(x[base + k * inner]));
        }
    }
    partial[lid] = m;
    for (var s = rt / 2u; s > 0u; s /= 2u) {
        workgroupBarrier();
        if lane < s {
            partial[lid] = max(partial[lid], partial[lid + s]);
        }
    }
    workgroupBarrier();
    m = partial[first];
    workgroupBarrier();

    var sum = 0.0;
    if live {
        for (var k = lane; k < len; k += rt) {
            sum += exp(f32(x[base + k * inner]) - m);
        }
    }
    partial[lid] = sum;
    for (var s = rt / 2u; s > 0u; s /= 2u) {
        workgroupBarrier();
        if lane < s {
            partial[lid] += partial[lid + s];
        }
    }
    workgroupBarrier();
    sum = partial[first];

    if live {
        for (var k = lane; k < len; k += rt) {
            let j = base + k * inner;
            y[j] = T(exp(f32(x[j]) - m) / sum);
        }
    }
}
