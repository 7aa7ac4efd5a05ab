// Reads an intermediate Rgba16Float texture holding colours in 0..1 (the
// first blur pass's output), so the second pass can share the blur shader.
@group(0) @binding(0) var plane0: texture_2d<f32>;

fn frame_size() -> vec2<i32> {
    return vec2<i32>(textureDimensions(plane0));
}

fn frame_rgb(p: vec2<i32>) -> vec3<f32> {
    return textureLoad(plane0, p, 0).rgb * 255.0;
}
