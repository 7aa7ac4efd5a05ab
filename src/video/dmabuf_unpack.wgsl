// Unpacks one plane of a frame from imported linear memory (a storage
// buffer of its bytes) into the plane's texture: a full-screen triangle, one
// fragment per texel, bit-exact (a byte b is written as b / 255 into a unorm8
// target, which stores round(b / 255 * 255) = b, or as b into R8Uint).
//
// The plane's offset (from the start of the binding) and row stride come in
// as the draw's first instance and first vertex / 3, not from a uniform
// buffer: a uniform would be an upload for every new plane, and an imported
// frame is to move no bytes at all. Specialised per target: TEXEL_BYTES
// (bytes per texel, 1, 2 or 4), SWAP_RB (BGRA bytes into a Bgra8Unorm
// target, whose red is the third byte).

@group(0) @binding(0) var<storage, read> src: array<u32>;

struct Varyings {
    @builtin(position) pos: vec4<f32>,
    // x: the plane's first byte, y: its row stride.
    @location(0) @interpolate(flat) plane: vec2<u32>,
}

@vertex
fn vs(@builtin(vertex_index) v: u32, @builtin(instance_index) offset: u32) -> Varyings {
    let corner = v % 3u;
    // (0,0), (2,0), (0,2): one triangle over the whole target.
    let uv = vec2<f32>(f32((corner << 1u) & 2u), f32(corner & 2u));
    var out: Varyings;
    out.pos = vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
    out.plane = vec2<u32>(offset, v / 3u);
    return out;
}

fn byte_at(i: u32) -> u32 {
    return (src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn texel(pos: vec4<f32>, plane: vec2<u32>) -> vec4<u32> {
    let p = vec2<u32>(pos.xy);
    let base = plane.x + p.y * plane.y + p.x * TEXEL_BYTES;
    var t = vec4<u32>(0u);
    for (var i = 0u; i < TEXEL_BYTES; i++) {
        t[i] = byte_at(base + i);
    }
    if SWAP_RB {
        t = t.zyxw;
    }
    return t;
}

@fragment
fn fs_unorm(in: Varyings) -> @location(0) vec4<f32> {
    return vec4<f32>(texel(in.pos, in.plane)) / 255.0;
}

@fragment
fn fs_uint(in: Varyings) -> @location(0) vec4<u32> {
    return texel(in.pos, in.plane);
}
