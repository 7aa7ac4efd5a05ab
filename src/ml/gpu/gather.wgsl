// gather: output element i, at (outer o, index k, inner j) of
// [input[..axis], indices, input[axis + 1..]], copies input element
// (o, indices[k], j). `store(t)` (generated, broadcast.rs `element_copy`)
// writes invocation t's element, or its word of four uint8 elements.

// Mirrored by `Params` in gather.rs.
struct Params {
    // Output elements.
    n: u32,
    // Invocations: n, or words of a uint8 output.
    threads: u32,
    // Elements after the gathered axis.
    inner: u32,
    // Number of indices.
    indices: u32,
    // Extent of the gathered axis.
    dim: u32,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> indices: array<i32>;
@group(0) @binding(3) var<storage, read_write> y: array<T>;

/// The input element output element `i` copies: a negative index counts
/// from the end, and the result is clamped into the axis.
fn source(i: u32) -> u32 {
    let j = i % params.inner;
    let rest = i / params.inner;
    let k = rest % params.indices;
    let o = rest / params.indices;
    let dim = i32(params.dim);
    var index = indices[k];
    if index < 0 {
        index += dim;
    }
    let c = u32(clamp(index, 0, dim - 1));
    return (o * params.dim + c) * params.inner + j;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = flat_id(gid, nwg);
    if t >= params.threads {
        return;
    }
    store(t);
}
