// A strided view of the input, copied out: output element i, at coordinates
// c in the output shape, is x[base + sum_k c[k] * mult[k]]. Slice, split and
// transpose are all such views (they differ only in base and mult), and the
// copy is in the element type itself so int32 never round-trips through f32.
// params: [n, rank, base, out_shape[rank], mult[rank]]

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params[0] {
        return;
    }
    let rank = params[1];
    var rem = i;
    var j = params[2];
    for (var d = rank; d > 0u; d--) {
        let k = d - 1u;
        let extent = params[3u + k];
        j += (rem % extent) * params[3u + rank + k];
        rem = rem / extent;
    }
    y[i] = x[j];
}
