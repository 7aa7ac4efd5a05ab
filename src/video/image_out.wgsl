// Image tensor (f32 NHWC [1, H, W, 3], values nominally 0..255, e.g. a
// super-resolution model's output) -> RGBA8, clamped and opaque.
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var out: texture_storage_2d<rgba8unorm, write>;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let size = textureDimensions(out);
    if id.x >= size.x || id.y >= size.y {
        return;
    }
    let i = (id.y * size.x + id.x) * 3u;
    let rgb = vec3<f32>(src[i], src[i + 1u], src[i + 2u]) / 255.0;
    textureStore(out, id.xy, vec4<f32>(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0));
}
