// Padding. Output element i at coordinates c reads input coordinate
// c - beginning on every axis; outside the input, mode 0 (constant) writes
// `fill()`, mode 1 (edge) clamps to the border and mode 2 (reflection)
// mirrors about the border element without repeating it. `fill` is generated
// per element type (the value is passed as f32 or i32 bits in params[3]).
// params: [n, rank, mode, value bits, out_shape[rank], in_shape[rank],
//          in_strides[rank], beginning[rank]]

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params[0] {
        return;
    }
    let rank = params[1];
    let mode = params[2];
    var rem = i;
    var j = 0u;
    for (var d = rank; d > 0u; d--) {
        let k = d - 1u;
        let extent = params[4u + k];
        let n = i32(params[4u + rank + k]);
        var c = i32(rem % extent) - i32(params[4u + 3u * rank + k]);
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
        j += u32(c) * params[4u + 2u * rank + k];
    }
    y[i] = x[j];
}
