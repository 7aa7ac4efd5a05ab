// conv2d's parameters, one struct for its four kernels (direct and the
// implicit GEMMs); mirrored by `Params` in conv2d.rs. Layouts are not
// specialised: the input's element strides come in (n, c, h, w) order and
// the filter's in (o, i, h, w) order whatever the layouts, so every layout
// pair shares one pipeline.
struct Params {
    x_strides: vec4<u32>,
    f_strides: vec4<u32>,
    // (y, x) pairs.
    stride: vec2<u32>,
    dilation: vec2<u32>,
    // (top, left)
    padding: vec2<u32>,
    // (kh, kw)
    filter_size: vec2<u32>,
    // Output elements (the direct kernel's invocations).
    total: u32,
    // Output pixels, n * oh * ow (the GEMM rows).
    pixels: u32,
    oc: u32,
    // Output channels per group.
    ocg: u32,
    oh: u32,
    ow: u32,
    ohw: u32,
    // 1 where input and output are NHWC.
    nhwc: u32,
    // The input's extent as the convolution sees it (upsampled).
    h: u32,
    w: u32,
    // Input channels per group.
    icg: u32,
    // The GEMM reduction length, icg * kh * kw.
    kdim: u32,
    // Channel tiles per group (the GEMM grid's y is pixel tiles past 65535
    // times these).
    channel_tiles: u32,
    // The row length of a filter pre-transposed at build: output channels
    // per group padded to a multiple of 64 (tensor cores), or the narrow
    // kernel's runs padded to 4; 0 where the kernel reads the filter as it is.
    ocp: u32,
    // (sy, sx): the direct and narrow kernels read input pixel
    // (y / sy, x / sx) at (y, x) of an input h x w (a fused nearest
    // upsample; 1, 1 without). The GEMM kernels take none.
    upsample: vec2<u32>,
}

// Output element i's (n, channel, y, x) for the kernels with one invocation
// per output element (direct, depthwise), which walk the output in memory
// order so that neighbouring invocations write neighbouring addresses in
// either layout.
fn output_element(i: u32) -> vec4<u32> {
    let oc = params.oc;
    let oh = params.oh;
    let ow = params.ow;
    if params.nhwc != 0u {
        let r = i / oc;
        return vec4(r / (ow * oh), i % oc, (r / ow) % oh, r % ow);
    }
    let r = i / ow;
    return vec4(r / (oh * oc), (r / oh) % oc, r % oh, i % ow);
}
