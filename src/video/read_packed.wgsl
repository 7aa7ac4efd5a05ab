// Reads RGBA/BGRA/RGBx/BGRx frames. The texture's format (Rgba8Unorm or
// Bgra8Unorm) already puts channels in RGB order; the x byte is ignored.
@group(0) @binding(0) var plane0: texture_2d<f32>;

fn frame_size() -> vec2<i32> {
    return vec2<i32>(textureDimensions(plane0));
}

// Colour at pixel p in 0..255.
fn frame_rgb(p: vec2<i32>) -> vec3<f32> {
    return textureLoad(plane0, p, 0).rgb * 255.0;
}
