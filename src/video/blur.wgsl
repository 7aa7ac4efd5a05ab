// One direction of a separable Gaussian blur, kept at every STEP-th
// position along it. The same shader runs twice: horizontally reading the
// frame (through the format's reader), then vertically reading the first
// pass's Rgba16Float output. Output o is the Gaussian centred on input
// STEP * o, so the two passes give the exact blur at pixels (k X, k Y) for
// STEP = k, which the composite interpolates between (`blur_step` in
// composite.rs says why that stays within 2 levels of 255 of the blur);
// STEP = 1 is the blur of every pixel. The passes sum in f32 and store
// Rgba16Float (colours in 0..1 to within 2^-12, a twentieth of a level of
// 255): the result stays within rounding of an exact 2-D Gaussian, and the
// intermediates move half the bytes of f32 ones (at 1080p, sigma 12, 11 MB
// rather than 22 a frame, which would push the model's weights out of the
// GPU's cache). The output's size (`dst`) says
// how many positions to make; reads past the input's edge are clamped.
//
// A workgroup blurs `LINES` neighbouring lines (rows across, columns down),
// 4 * PER_LINE outputs of each. It first copies every input those outputs
// reach (radius either side) into workgroup memory, so the frame reader (a
// YUV conversion for NV12/I420) runs about once per pixel rather than once
// per tap, and computes the weights once rather than an exp() per tap. Each
// invocation then makes 4 neighbouring outputs from a window of 4 inputs
// kept in registers: a tap reads one new input for 4 outputs' multiply-adds.
// With one output per invocation every tap would read its own input, and
// those workgroup-memory reads, not the arithmetic, would set the pace.
//
// Outputs STEP apart share the window too, one phase at a time: output o's
// tap t reads input STEP * o - radius + t, so the taps t = p + STEP * i of
// phase p (0..STEP) read, for outputs o, o + 1, ..., the inputs of phase p
// (those at p + STEP * q past the tile's start) at q = o + i: the window
// sliding along the phase, with the phase's weights. The tile holds one
// phase at a time, so workgroup memory and the workgroup's shape do not
// grow with STEP; each phase loads its inputs and weights, and outputs add
// their taps phase by phase (in tap order when STEP = 1).
//
// `BlurTile` in composite.rs picks the shape and prepends it as constants
// (they size the workgroup arrays and the workgroup, so they are compiled
// in): HORIZONTAL, STEP, LINES and PER_LINE; TAP_GROUPS, a phase's taps,
// (2 * radius + 1) / STEP rounded up, in groups of 4 rounded up: one read
// fetches the 4 weights a window step needs (taps past 2 * radius weigh 0);
// SLOTS = PER_LINE + TAP_GROUPS, a line's inputs of a phase in each of the
// 4 classes of `slot`; TILE_LEN = LINES * 4 * SLOTS. Sigma and radius are
// values in `params`, read once per workgroup: every strength with the
// same STEP and TAP_GROUPS shares one pipeline.
//
// Compiled without runtime bounds checks (`Checks::Trusted`), so every index
// stays in range by construction: the fill writes s < TILE_LEN and weight
// groups g < TAP_GROUPS; the window reads up to slot(line, 4 * m) + 3 * SLOTS
// + TAP_GROUPS = (4 * line + 4) * SLOTS - 1 < TILE_LEN, only for outputs in
// the texture; frame reads are clamped into the input, and stores skip
// positions past the output.

struct Params {
    sigma: f32,
    // ceil(3 * sigma), at most 2 * STEP * TAP_GROUPS - 1 (TAP_GROUPS is set
    // from it).
    radius: i32,
    _pad0: u32,
    _pad1: u32,
}

@group(1) @binding(0) var dst: texture_storage_2d<rgba16float, write>;
@group(1) @binding(1) var<uniform> params: Params;

// One array per channel: a vec3 array would pad each input to 16 bytes, a
// quarter more workgroup-memory traffic per read.
var<workgroup> tile_r: array<f32, TILE_LEN>;
var<workgroup> tile_g: array<f32, TILE_LEN>;
var<workgroup> tile_b: array<f32, TILE_LEN>;
var<workgroup> weights: array<vec4<f32>, TAP_GROUPS>;

// Where input q of the phase (0 = radius before the tile's first output's
// centre, plus the phase) of a line lives. Invocation m reads input
// 4 * m + j at the same time as its neighbours read theirs; grouping inputs
// by q % 4 puts those reads in consecutive words, one per memory bank,
// where q -> q would put 4 invocations on each bank.
fn slot(line: u32, q: u32) -> u32 {
    return (line * 4u + q % 4u) * SLOTS + q / 4u;
}

// Tap t (0..=2 * radius) of the kernel, before normalisation.
fn weight(t: i32, radius: i32, sigma: f32) -> f32 {
    let i = t - radius;
    if i > radius {
        return 0.0;
    }
    return exp(-0.5 * f32(i * i) / (sigma * sigma));
}

fn input(i: u32) -> vec3<f32> {
    return vec3<f32>(tile_r[i], tile_g[i], tile_b[i]);
}

@compute @workgroup_size(LINES * PER_LINE)
fn main(
    @builtin(local_invocation_index) index: u32,
    @builtin(workgroup_id) group: vec3<u32>,
) {
    let size = frame_size();
    let out_size = vec2<i32>(textureDimensions(dst));
    let along_len = select(size.y, size.x, HORIZONTAL);
    let out_len = select(out_size.y, out_size.x, HORIZONTAL);
    // The input's and the output's: a pass keeps the other axis as it is.
    let across_len = select(size.x, size.y, HORIZONTAL);
    let first = i32(select(group.y, group.x, HORIZONTAL) * 4u * PER_LINE);
    let first_line = i32(select(group.x, group.y, HORIZONTAL) * LINES);
    let invocations = LINES * PER_LINE;
    let radius = params.radius;
    let sigma = params.sigma;
    let stride = i32(STEP);

    let line = index / PER_LINE;
    let m = index % PER_LINE;
    let out = first + 4 * i32(m);
    let across = first_line + i32(line);
    // Invocations past the output still load and wait with the others.
    let live = out < out_len && across < across_len;
    let base = slot(line, 4u * m);
    var a0 = vec3<f32>(0.0);
    var a1 = vec3<f32>(0.0);
    var a2 = vec3<f32>(0.0);
    var a3 = vec3<f32>(0.0);
    var total = 0.0;
    // Loop bounds are the same for every invocation, which keeps the
    // barriers in uniform control flow.
    for (var p = 0u; p < STEP; p++) {
        if p > 0u {
            // Every invocation is done with the previous phase's tile.
            workgroupBarrier();
        }
        for (var k = 0u; k < (TAP_GROUPS + invocations - 1u) / invocations; k++) {
            let g = index + k * invocations;
            if g < TAP_GROUPS {
                let t = i32(p + 4u * STEP * g);
                weights[g] = vec4(
                    weight(t, radius, sigma),
                    weight(t + stride, radius, sigma),
                    weight(t + 2 * stride, radius, sigma),
                    weight(t + 3 * stride, radius, sigma),
                );
            }
        }
        // Walking the tile in storage order keeps writes to workgroup
        // memory consecutive; the frame reads this gives are 4 * STEP texels
        // apart, and the next 3 storage classes (and the next phases) read
        // the texels in between from the cache.
        for (var k = 0u; k < (TILE_LEN + invocations - 1u) / invocations; k++) {
            let s = index + k * invocations;
            if s < TILE_LEN {
                let tile_line = s / (4u * SLOTS);
                let r = s % (4u * SLOTS);
                let q = 4u * (r % SLOTS) + r / SLOTS;
                // Clamp to edge: border pixels are repeated rather than
                // darkened. Lines past the frame read its last line and are
                // not stored.
                let along = clamp(stride * first - radius + i32(p + STEP * q), 0, along_len - 1);
                let line_at = min(first_line + i32(tile_line), across_len - 1);
                let c = frame_rgb(select(vec2(line_at, along), vec2(along, line_at), HORIZONTAL));
                tile_r[s] = c.r;
                tile_g[s] = c.g;
                tile_b[s] = c.b;
            }
        }
        workgroupBarrier();
        if live {
            // Output out + j adds tap p + STEP * i times input 4 * m + j + i
            // of the phase, for i up to 4 * TAP_GROUPS - 1. xj holds input
            // 4 * m + i + ((j - i) mod 4): after a tap the window's oldest
            // input is replaced by the next one, so the roles rotate through
            // the 4 steps of a weight group and are back in place after it.
            // Taps and the weight total add up in the same order as a plain
            // loop over the phase's taps.
            var x0 = input(base);
            var x1 = input(base + SLOTS);
            var x2 = input(base + 2u * SLOTS);
            var x3 = input(base + 3u * SLOTS);
            for (var g = 0u; g < TAP_GROUPS; g++) {
                let w = weights[g];
                let next = base + g + 1u;
                total += w.x;
                a0 += w.x * x0;
                a1 += w.x * x1;
                a2 += w.x * x2;
                a3 += w.x * x3;
                x0 = input(next);
                total += w.y;
                a0 += w.y * x1;
                a1 += w.y * x2;
                a2 += w.y * x3;
                a3 += w.y * x0;
                x1 = input(next + SLOTS);
                total += w.z;
                a0 += w.z * x2;
                a1 += w.z * x3;
                a2 += w.z * x0;
                a3 += w.z * x1;
                x2 = input(next + 2u * SLOTS);
                total += w.w;
                a0 += w.w * x3;
                a1 += w.w * x0;
                a2 += w.w * x1;
                a3 += w.w * x2;
                x3 = input(next + 3u * SLOTS);
            }
        }
    }
    if !live {
        return;
    }
    let total255 = total * 255.0;
    store(out, across, out_len, a0 / total255);
    store(out + 1, across, out_len, a1 / total255);
    store(out + 2, across, out_len, a2 / total255);
    store(out + 3, across, out_len, a3 / total255);
}

fn store(along: i32, across: i32, out_len: i32, rgb: vec3<f32>) {
    if along < out_len {
        let p = select(vec2(across, along), vec2(along, across), HORIZONTAL);
        textureStore(dst, p, vec4(rgb, 1.0));
    }
}
