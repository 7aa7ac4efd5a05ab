// logicalNot on uint8, packed four values to a u32 word: each thread turns
// one input word into one output word (bytes past the end stay 0).

// Mirrored by `LogicalNotParams` in compare.rs.
struct Params {
    // Elements.
    n: u32,
    // Words: ceil(n / 4).
    words: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if t >= params.words {
        return;
    }
    let w = x[t];
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        if 4u * t + k < params.n && ((w >> (8u * k)) & 255u) == 0u {
            word |= 1u << (8u * k);
        }
    }
    y[t] = word;
}
