// prelu: y = x where x >= 0, else x * slope, with the slope broadcast to the
// input's shape. params: [n, rank, shape[rank], slope_strides[rank]] (a
// stride of 0 repeats the slope along that axis).

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> slope: array<TI>;
@group(0) @binding(3) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params[0] {
        return;
    }
    let rank = params[1];
    var rem = i;
    var js = 0u;
    for (var d = rank; d > 0u; d--) {
        let k = d - 1u;
        js += (rem % params[2u + k]) * params[2u + rank + k];
        rem = rem / params[2u + k];
    }
    let v = f32(x[i]);
    y[i] = T(act(select(v * f32(slope[js]), v, v >= 0.0)));
}
