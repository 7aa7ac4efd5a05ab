// Reads packed 24-bit RGB stored as bytes in an R8Uint texture 3x as wide.
@group(0) @binding(0) var plane0: texture_2d<u32>;

fn frame_size() -> vec2<i32> {
    let d = textureDimensions(plane0);
    return vec2<i32>(i32(d.x / 3u), i32(d.y));
}

fn frame_rgb(p: vec2<i32>) -> vec3<f32> {
    let x = p.x * 3;
    return vec3<f32>(
        f32(textureLoad(plane0, vec2<i32>(x, p.y), 0).r),
        f32(textureLoad(plane0, vec2<i32>(x + 1, p.y), 0).r),
        f32(textureLoad(plane0, vec2<i32>(x + 2, p.y), 0).r),
    );
}
