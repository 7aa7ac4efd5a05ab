// One direction of a separable Gaussian blur. The same shader runs twice:
// horizontally reading the frame (through the format's reader), then
// vertically reading the first pass's Rgba32Float output. Float
// intermediates keep the result within rounding of an exact 2-D Gaussian.
override horizontal: bool;
override sigma: f32;
override radius: i32;

@group(1) @binding(0) var dst: texture_storage_2d<rgba32float, write>;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let size = frame_size();
    let p = vec2<i32>(id.xy);
    if any(p >= size) {
        return;
    }
    let step = select(vec2<i32>(0, 1), vec2<i32>(1, 0), horizontal);
    var sum = vec3<f32>(0.0);
    var total = 0.0;
    for (var i = -radius; i <= radius; i++) {
        let w = exp(-0.5 * f32(i * i) / (sigma * sigma));
        // Clamp to edge: border pixels are repeated rather than darkened.
        let q = clamp(p + step * i, vec2<i32>(0), size - 1);
        sum += w * frame_rgb(q);
        total += w;
    }
    textureStore(dst, p, vec4<f32>(sum / (total * 255.0), 1.0));
}
