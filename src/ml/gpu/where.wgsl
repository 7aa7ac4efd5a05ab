// where(condition, a, b) with numpy broadcasting three ways. The condition
// is uint8, packed four to a u32 word; so are a, b and the output when the
// values are uint8, and then each thread writes one whole output word.
// `store(t, n)` (thread t's share: one element, or one word of four) is
// generated per value type.

// Mirrored by `WhereParams` in compare.rs.
struct Params {
    // Output elements.
    n: u32,
    // Threads: n, or output words for uint8 values.
    threads: u32,
    rank: u32,
    // Per axis (folded, see lower.rs `axes`): (output extent, condition
    // stride, a stride, b stride); a stride of 0 repeats the operand.
    axes: array<vec4<u32>, MAX_RANK>,
}

@group(0) @binding(1) var<storage, read> cond: array<TI>;
@group(0) @binding(2) var<storage, read> a: array<T>;
@group(0) @binding(3) var<storage, read> b: array<T>;
@group(0) @binding(4) var<storage, read_write> y: array<T>;

// Where output element j reads the condition, a and b.
fn operands(j: u32) -> vec3<u32> {
    var rem = j;
    var at = vec3<u32>(0u, 0u, 0u);
    for (var d = params.rank; d > 0u; d--) {
        let axis = params.axes[d - 1u];
        let c = rem % axis.x;
        rem = rem / axis.x;
        at += c * axis.yzw;
    }
    return at;
}

// Byte j of a packed uint8 tensor whose word holding it is `word`.
fn byte_of(word: u32, j: u32) -> u32 {
    return (word >> (8u * (j % 4u))) & 255u;
}

fn chosen(at: vec3<u32>) -> bool {
    return byte_of(cond[at.x / 4u], at.x) != 0u;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if t >= params.threads {
        return;
    }
    store(t, params.n);
}
