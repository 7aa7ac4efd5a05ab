// softmax along one axis, numerically stable: y = exp(x - max) / sum.
// Each row (the `len` elements along the axis, `inner` apart) is reduced by
// RT consecutive invocations (a power of two dividing WG, generated from the
// row length), so short rows do not leave most of a workgroup idle and long
// rows are still spread over a workgroup. Reductions go through workgroup
// memory in a tree; every invocation reaches every barrier, including those
// past the last row.
// params: [rows, len, inner]

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = flat_id(gid, nwg);
    let row = t / RT;
    let lane = lid % RT;
    let first = lid - lane;
    let len = params[1];
    let inner = params[2];
    let live = row < params[0];
    let base = (row / inner) * len * inner + row % inner;

    var m = -3.40282347e38;
    if live {
        for (var k = lane; k < len; k += RT) {
            m = max(m, f32(x[base + k * inner]));
        }
    }
    partial[lid] = m;
    for (var s = RT / 2u; s > 0u; s /= 2u) {
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
        for (var k = lane; k < len; k += RT) {
            sum += exp(f32(x[base + k * inner]) - m);
        }
    }
    partial[lid] = sum;
    for (var s = RT / 2u; s > 0u; s /= 2u) {
        workgroupBarrier();
        if lane < s {
            partial[lid] += partial[lid + s];
        }
    }
    workgroupBarrier();
    sum = partial[first];

    if live {
        for (var k = lane; k < len; k += RT) {
            let j = base + k * inner;
            y[j] = T(exp(f32(x[j]) - m) / sum);
        }
    }
}
