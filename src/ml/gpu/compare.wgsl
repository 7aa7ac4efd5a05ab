// Comparison with numpy broadcasting, uint8 0/1 out. uint8 is packed four
// values to a u32 word, so each thread writes one whole output word (no two
// threads share one). `holds` (in the computation type C) is generated per op.

// Mirrored by `CompareParams` in compare.rs.
struct Params {
    // Output elements.
    n: u32,
    // Output words: ceil(n / 4).
    words: u32,
    rank: u32,
    // Per axis (folded, see lower.rs `axes`): (output extent, a stride,
    // b stride, 0); a stride of 0 repeats the operand along that axis.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> a: array<TI>;
@group(0) @binding(2) var<storage, read> b: array<TI>;
@group(0) @binding(3) var<storage, read_write> y: array<T>;

// Where output element j reads a and b.
fn operands(j: u32) -> vec2<u32> {
    var rem = j;
    var at = vec2<u32>(0u, 0u);
    for (var d = params.rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        let c = rem % axis.x;
        rem = rem / axis.x;
        at += c * axis.yz;
    }
    return at;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if t >= params.words {
        return;
    }
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let j = 4u * t + k;
        if j < params.n {
            let at = operands(j);
            if holds(C(a[at.x]), C(b[at.y])) {
                word |= 1u << (8u * k);
            }
        }
    }
    y[t] = word;
}
