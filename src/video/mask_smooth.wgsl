// Temporal smoothing of the person mask at mask resolution: an exponential
// moving average damps frame-to-frame flicker of a per-frame segmentation.
override alpha: f32;
override mask_len: u32;

@group(0) @binding(0) var<storage, read> mask: array<f32>;
@group(0) @binding(1) var<storage, read_write> state: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= mask_len {
        return;
    }
    state[id.x] = alpha * state[id.x] + (1.0 - alpha) * mask[id.x];
}
