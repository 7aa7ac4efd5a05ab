// Temporal smoothing of the person mask at mask resolution: an exponential
// moving average damps frame-to-frame flicker of a per-frame segmentation.

struct Params {
    // Weight of the previous frames (0 on the first frame: no history).
    alpha: f32,
    mask_len: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> mask: array<f32>;
@group(0) @binding(1) var<storage, read_write> state: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= params.mask_len {
        return;
    }
    let alpha = params.alpha;
    state[id.x] = alpha * state[id.x] + (1.0 - alpha) * mask[id.x];
}
