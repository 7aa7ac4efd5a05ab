// Reads NV12: full-size Y plane (R8Unorm) and half-size interleaved UV plane
// (Rg8Unorm). Chroma is taken from the sample covering the pixel (nearest),
// which is what a 4:2:0 frame's chroma means without a siting convention.
@group(0) @binding(0) var plane0: texture_2d<f32>;
@group(0) @binding(1) var plane1: texture_2d<f32>;

fn frame_size() -> vec2<i32> {
    return vec2<i32>(textureDimensions(plane0));
}

fn frame_rgb(p: vec2<i32>) -> vec3<f32> {
    let y = textureLoad(plane0, p, 0).r;
    let uv = textureLoad(plane1, p / 2, 0).rg;
    return yuv_to_rgb(vec3<f32>(y, uv.x, uv.y) * 255.0);
}
