// Reads I420: Y, U and V planes (R8Unorm), chroma at half size, nearest.
@group(0) @binding(0) var plane0: texture_2d<f32>;
@group(0) @binding(1) var plane1: texture_2d<f32>;
@group(0) @binding(2) var plane2: texture_2d<f32>;

fn frame_size() -> vec2<i32> {
    return vec2<i32>(textureDimensions(plane0));
}

fn frame_rgb(p: vec2<i32>) -> vec3<f32> {
    let c = p / 2;
    let y = textureLoad(plane0, p, 0).r;
    let u = textureLoad(plane1, c, 0).r;
    let v = textureLoad(plane2, c, 0).r;
    return yuv_to_rgb(vec3<f32>(y, u, v) * 255.0);
}
