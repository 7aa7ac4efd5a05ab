// Element-wise binary op with numpy broadcasting.
// params: [n, rank, out_shape[rank], a_strides[rank], b_strides[rank]]
// (a stride of 0 repeats the operand along that axis). The helper functions
// `binop` (in the computation type C) and `finish` (C -> T, applying the fused
// activations for floats) are generated per op and type.

@group(0) @binding(1) var<storage, read> a: array<TI>;
@group(0) @binding(2) var<storage, read> b: array<TI>;
@group(0) @binding(3) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if i >= params[0] {
        return;
    }
    let rank = params[1];
    var rem = i;
    var ia = 0u;
    var ib = 0u;
    for (var d = rank; d > 0u; d--) {
        let k = d - 1u;
        let c = rem % params[2u + k];
        rem = rem / params[2u + k];
        ia += c * params[2u + rank + k];
        ib += c * params[2u + 2u * rank + k];
    }
    y[i] = finish(binop(C(a[ia]), C(b[ib])));
}
