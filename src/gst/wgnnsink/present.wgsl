// Draws a frame into the current viewport: one triangle covering it, each
// fragment a bilinear sample of the frame. Appended to one of the video
// module's frame readers, which define frame_size() and frame_rgb(p) (0..255)
// over bind group 0, so every format the elements carry is read the one way.
// Letterboxing is the viewport's job (the pass clears the target to black).

struct VertexOut {
    @builtin(position) pos: vec4<f32>,
    // 0..1 across the viewport, y down like the frame's rows.
    @location(0) uv: vec2<f32>,
}

@vertex
fn vs(@builtin(vertex_index) i: u32) -> VertexOut {
    // (0,0), (2,0), (0,2): a triangle whose inside covers the unit square.
    let x = f32((i << 1u) & 2u);
    let y = f32(i & 2u);
    var out: VertexOut;
    out.pos = vec4<f32>(x * 2.0 - 1.0, 1.0 - y * 2.0, 0.0, 1.0);
    out.uv = vec2<f32>(x, y);
    return out;
}

@fragment
fn fs(in: VertexOut) -> @location(0) vec4<f32> {
    let size = frame_size();
    // Texel centres sit at integer coordinates here, so a target of the
    // frame's own size samples each texel exactly once, unblended.
    let p = in.uv * vec2<f32>(size) - 0.5;
    let base = floor(p);
    let f = p - base;
    let lo = clamp(vec2<i32>(base), vec2<i32>(0), size - 1);
    let hi = clamp(vec2<i32>(base) + 1, vec2<i32>(0), size - 1);
    let top = mix(frame_rgb(lo), frame_rgb(vec2<i32>(hi.x, lo.y)), f.x);
    let bottom = mix(frame_rgb(vec2<i32>(lo.x, hi.y)), frame_rgb(hi), f.x);
    return vec4<f32>(mix(top, bottom, f.y) / 255.0, 1.0);
}
