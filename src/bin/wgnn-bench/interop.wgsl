// wgnn-bench interop: the "custom op" side of WebNN issue 33's experiment, written
// the way an application would write its own WGSL: a direct 3x3 convolution
// (one output per invocation, "same" padding) and add + relu.

// Prepended (interop.rs): the shape H, W, CI, CO as constants, and the
// entry point `main` calling `conv` or `add_relu`.

// conv: x NHWC [1, H, W, CI], f HWIO [3, 3, CI, CO], y NHWC [1, H, W, CO].
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> f: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// add_relu: z = max(a + bias[channel], 0), all NHWC [1, H, W, CO].
@group(0) @binding(3) var<storage, read> a: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;

fn flat(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.x + gid.y * groups.x * 64u;
}

fn conv(gid: vec3<u32>, groups: vec3<u32>) {
    let i = flat(gid, groups);
    if (i >= H * W * CO) {
        return;
    }
    let co = i % CO;
    let p = i / CO;
    let ox = i32(p % W);
    let oy = i32(p / W);
    var acc = 0.0;
    for (var ky = 0; ky < 3; ky++) {
        let iy = oy + ky - 1;
        if (iy < 0 || iy >= i32(H)) {
            continue;
        }
        for (var kx = 0; kx < 3; kx++) {
            let ix = ox + kx - 1;
            if (ix < 0 || ix >= i32(W)) {
                continue;
            }
            let xb = (u32(iy) * W + u32(ix)) * CI;
            let fb = u32(ky * 3 + kx) * CI * CO + co;
            for (var ci = 0u; ci < CI; ci++) {
                acc += x[xb + ci] * f[fb + ci * CO];
            }
        }
    }
    y[i] = acc;
}

fn add_relu(gid: vec3<u32>, groups: vec3<u32>) {
    let i = flat(gid, groups);
    if (i >= H * W * CO) {
        return;
    }
    z[i] = max(a[i] + bias[i % CO], 0.0);
}
