//! The spatial ops (conv2d, convTranspose2d, pooling, reduceMean,
//! resample2d) on the GPU context against the CPU reference, on random data
//! over the padding/stride/dilation/group/layout combinations TFLite and
//! Keras models use, plus small hand-computed cases checked on both contexts
//! so that the two cannot agree on a wrong answer.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use crate::common::ops::{self, f16s, f32s, floats, one, In, Pair};

/// Values in [-1, 1), for inputs and weights alike.
fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    ops::uniform(rng, n, -1.0, 1.0)
}

fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], v: &[f32]) -> Operand {
    b.constant(OperandDescriptor::new(dt, shape), &ops::float_bytes(dt, v))
        .unwrap()
}

/// Runs the one-output graph `build` makes on `ctx` and returns its values
/// and the graph's node count.
fn run(
    ctx: &Context,
    inputs: &[In],
    build: &dyn Fn(&GraphBuilder, &[Operand]) -> Operand,
) -> (Vec<f64>, usize) {
    let mut ran = ops::run(ctx, &one(build), inputs).unwrap();
    (ran.outputs.remove(0).values, ran.nodes)
}

/// Runs on both contexts, checks they agree, returns the CPU values.
fn compare(
    what: &str,
    inputs: &[In],
    build: &dyn Fn(&GraphBuilder, &[Operand]) -> Operand,
) -> Vec<f64> {
    let c = Pair::new()
        .check(what, &one(build), inputs)
        .remove(0)
        .values;
    // These ops of finite inputs are finite: a NaN or infinity agreeing on
    // both contexts is still wrong.
    assert!(
        c.iter().all(|v| v.is_finite()),
        "{what}: the CPU reference is not finite"
    );
    assert!(
        c.iter().any(|&v| v != 0.0),
        "{what}: an all-zero output checks nothing"
    );
    c
}

/// Checks hand-computed values on both contexts (to 1e-6).
fn known(
    what: &str,
    inputs: &[In],
    build: &dyn Fn(&GraphBuilder, &[Operand]) -> Operand,
    want: &[f64],
) {
    Pair::new().known_within(what, &one(build), inputs, &[want], Some(1e-6));
}

/// TF "SAME" padding along one axis: [begin, end].
fn same_pad(input: usize, k: usize, stride: usize, dilation: usize) -> [usize; 2] {
    let out = input.div_ceil(stride);
    let eff = (k - 1) * dilation + 1;
    let total = ((out - 1) * stride + eff).saturating_sub(input);
    [total / 2, total - total / 2]
}

#[derive(Clone, Copy, Debug)]
enum Pad {
    Same,
    Valid,
    Explicit([usize; 4]),
}

fn resolve(
    pad: Pad,
    [h, w]: [usize; 2],
    k: [usize; 2],
    s: [usize; 2],
    d: [usize; 2],
) -> [usize; 4] {
    match pad {
        Pad::Same => {
            let [t, b] = same_pad(h, k[0], s[0], d[0]);
            let [l, r] = same_pad(w, k[1], s[1], d[1]);
            [t, b, l, r]
        }
        Pad::Valid => [0; 4],
        Pad::Explicit(p) => p,
    }
}

fn activation_shape(layout: InputLayout, n: usize, c: usize, h: usize, w: usize) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    }
}

#[derive(Clone, Copy, Debug)]
enum Act {
    None,
    Relu,
    Clamp(f32, f32),
}

fn apply(b: &GraphBuilder, x: Operand, act: Act) -> Operand {
    match act {
        Act::None => x,
        Act::Relu => b.relu(&x).unwrap(),
        Act::Clamp(lo, hi) => b.clamp(&x, lo, hi).unwrap(),
    }
}

#[derive(Clone, Copy, Debug)]
struct ConvCase {
    name: &'static str,
    /// [n, c, h, w]
    input: [usize; 4],
    out_channels: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    pad: Pad,
    groups: usize,
    layout: InputLayout,
    filter: Conv2dFilterLayout,
    bias: bool,
    act: Act,
}

const BASE: ConvCase = ConvCase {
    name: "",
    input: [1, 3, 7, 5],
    out_channels: 8,
    kernel: [3, 3],
    strides: [1, 1],
    dilations: [1, 1],
    pad: Pad::Same,
    groups: 1,
    layout: InputLayout::Nhwc,
    filter: Conv2dFilterLayout::Ohwi,
    bias: true,
    act: Act::None,
};

fn conv_filter_shape(l: Conv2dFilterLayout, o: usize, i: usize, [h, w]: [usize; 2]) -> Vec<usize> {
    match l {
        Conv2dFilterLayout::Oihw => vec![o, i, h, w],
        Conv2dFilterLayout::Hwio => vec![h, w, i, o],
        Conv2dFilterLayout::Ohwi => vec![o, h, w, i],
        Conv2dFilterLayout::Ihwo => vec![i, h, w, o],
    }
}

fn check_conv(case: ConvCase, dt: DataType, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, c, h, w] = case.input;
    let oc = case.out_channels;
    let fshape = conv_filter_shape(case.filter, oc, c / case.groups, case.kernel);
    let filter = random(&mut rng, fshape.iter().product());
    let bias = random(&mut rng, oc);
    let xshape = activation_shape(case.layout, n, c, h, w);
    let x = random(&mut rng, xshape.iter().product());
    let options = Conv2dOptions {
        padding: resolve(case.pad, [h, w], case.kernel, case.strides, case.dilations),
        strides: case.strides,
        dilations: case.dilations,
        groups: case.groups,
        input_layout: case.layout,
        filter_layout: case.filter,
    };
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let f = constant(b, dt, &fshape, &filter);
        let bias = case.bias.then(|| constant(b, dt, &[oc], &bias));
        let y = b
            .conv2d(&ins[0], &f, bias.as_ref(), options.clone())
            .unwrap();
        apply(b, y, case.act)
    };
    compare(
        &format!("conv2d {} ({dt})", case.name),
        &[floats(dt, &xshape, &x)],
        &build,
    );
}

fn conv_cases() -> Vec<ConvCase> {
    use Conv2dFilterLayout::*;
    use InputLayout::*;
    vec![
        ConvCase {
            name: "tflite 3x3 same s1 relu",
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "tflite 3x3 same s2 relu6",
            input: [1, 4, 7, 5],
            out_channels: 6,
            strides: [2, 2],
            act: Act::Clamp(0.0, 6.0),
            ..BASE
        },
        ConvCase {
            name: "tflite depthwise 3x3 same s1",
            input: [1, 8, 7, 5],
            groups: 8,
            filter: Ihwo,
            ..BASE
        },
        ConvCase {
            name: "tflite depthwise 5x5 same s2 multiplier 2",
            input: [1, 4, 9, 7],
            groups: 4,
            kernel: [5, 5],
            strides: [2, 2],
            filter: Ihwo,
            act: Act::Clamp(0.0, 6.0),
            ..BASE
        },
        // The depthwise kernel (taps compiled in, clamped reads past the
        // edges): a 7x7 with dilation and uneven padding over a batch, a
        // 3x5 with a row stride, and one of more channels than a
        // workgroup has invocations.
        ConvCase {
            name: "depthwise 7x7 dilation [2, 1] explicit padding batch 2 relu",
            input: [2, 5, 9, 8],
            out_channels: 5,
            kernel: [7, 7],
            dilations: [2, 1],
            pad: Pad::Explicit([4, 2, 3, 1]),
            groups: 5,
            filter: Ihwo,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "nchw depthwise 3x5 stride [1, 2] valid no bias",
            input: [1, 4, 6, 11],
            out_channels: 4,
            kernel: [3, 5],
            strides: [1, 2],
            pad: Pad::Valid,
            groups: 4,
            layout: Nchw,
            filter: Oihw,
            bias: false,
            ..BASE
        },
        ConvCase {
            name: "depthwise 5x5 same over 70 channels",
            input: [1, 70, 6, 5],
            out_channels: 70,
            kernel: [5, 5],
            groups: 70,
            filter: Ihwo,
            act: Act::Clamp(0.0, 6.0),
            ..BASE
        },
        // The lanes kernel (small maps, 32 or more input channels, each
        // output's sum over 8 invocations): a channel count that is not a
        // multiple of the lanes, NCHW with a row stride and uneven
        // padding, two groups of 32 with dilation.
        ConvCase {
            name: "lanes 1x1 40 -> 24 batch 2 relu",
            input: [2, 40, 5, 7],
            out_channels: 24,
            kernel: [1, 1],
            pad: Pad::Valid,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "lanes nchw 3x1 36 -> 10 stride [2, 1] explicit padding",
            input: [1, 36, 7, 6],
            out_channels: 10,
            kernel: [3, 1],
            strides: [2, 1],
            pad: Pad::Explicit([2, 0, 1, 0]),
            layout: Nchw,
            filter: Oihw,
            ..BASE
        },
        ConvCase {
            name: "lanes 2 groups of 32 -> 6, 2x2 dilation 2",
            input: [1, 64, 6, 7],
            out_channels: 12,
            kernel: [2, 2],
            dilations: [2, 2],
            groups: 2,
            filter: Hwio,
            bias: false,
            ..BASE
        },
        ConvCase {
            name: "tflite 1x1",
            input: [1, 16, 7, 5],
            out_channels: 12,
            kernel: [1, 1],
            pad: Pad::Valid,
            ..BASE
        },
        ConvCase {
            name: "tflite 1x1 on a 1x1 image",
            input: [1, 5, 1, 1],
            out_channels: 3,
            kernel: [1, 1],
            pad: Pad::Valid,
            ..BASE
        },
        ConvCase {
            name: "1x1 stride 2 valid",
            input: [2, 3, 7, 5],
            out_channels: 4,
            kernel: [1, 1],
            strides: [2, 2],
            pad: Pad::Valid,
            ..BASE
        },
        ConvCase {
            name: "keras 3x3 valid dilation 2",
            input: [1, 3, 9, 8],
            out_channels: 5,
            dilations: [2, 2],
            pad: Pad::Valid,
            filter: Hwio,
            ..BASE
        },
        ConvCase {
            name: "keras 5x5 same s2 no bias",
            input: [1, 3, 9, 6],
            out_channels: 4,
            kernel: [5, 5],
            strides: [2, 2],
            filter: Hwio,
            bias: false,
            ..BASE
        },
        ConvCase {
            name: "keras 3x3 same dilation 2 relu",
            input: [1, 2, 7, 7],
            out_channels: 3,
            dilations: [2, 2],
            filter: Hwio,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "keras depthwise 3x3 same s2",
            input: [1, 6, 7, 5],
            out_channels: 6,
            strides: [2, 2],
            groups: 6,
            filter: Hwio,
            ..BASE
        },
        ConvCase {
            name: "nchw oihw 3x3 asymmetric padding stride [2, 1] batch 2",
            input: [2, 3, 7, 5],
            out_channels: 5,
            strides: [2, 1],
            pad: Pad::Explicit([1, 0, 2, 1]),
            layout: Nchw,
            filter: Oihw,
            ..BASE
        },
        ConvCase {
            name: "nchw oihw grouped 3x3 same",
            input: [1, 4, 5, 7],
            out_channels: 6,
            groups: 2,
            layout: Nchw,
            filter: Oihw,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "nchw oihw depthwise 3x3 same s2",
            input: [1, 5, 7, 5],
            out_channels: 5,
            groups: 5,
            strides: [2, 2],
            layout: Nchw,
            filter: Oihw,
            ..BASE
        },
        ConvCase {
            name: "nchw hwio 3x2 valid",
            input: [1, 3, 6, 5],
            out_channels: 4,
            kernel: [3, 2],
            pad: Pad::Valid,
            layout: Nchw,
            filter: Hwio,
            ..BASE
        },
        ConvCase {
            name: "nchw ohwi grouped 3 ways",
            input: [1, 6, 5, 5],
            out_channels: 9,
            groups: 3,
            layout: Nchw,
            filter: Ohwi,
            ..BASE
        },
        ConvCase {
            name: "nchw ihwo 5x5 same s2",
            input: [1, 2, 7, 5],
            out_channels: 3,
            kernel: [5, 5],
            strides: [2, 2],
            layout: Nchw,
            filter: Ihwo,
            ..BASE
        },
        // Larger than one 64 x 64 tile of the implicit-GEMM kernel in both
        // pixels and channels, with a reduction (180) not a multiple of 16.
        ConvCase {
            name: "nhwc ohwi 3x3 same, several gemm tiles",
            input: [1, 20, 9, 11],
            out_channels: 70,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "nchw oihw 2 groups of 8 channels, batch 2, stride [2, 1], dilation [1, 2]",
            input: [2, 6, 9, 7],
            out_channels: 16,
            groups: 2,
            strides: [2, 1],
            dilations: [1, 2],
            pad: Pad::Explicit([0, 2, 1, 3]),
            layout: Nchw,
            filter: Oihw,
            ..BASE
        },
        ConvCase {
            name: "nhwc hwio 1x1 batch 3 wide",
            input: [3, 40, 5, 3],
            out_channels: 66,
            kernel: [1, 1],
            pad: Pad::Valid,
            filter: Hwio,
            ..BASE
        },
        // Enough 128-pixel tiles (>= 264) for the wide implicit-GEMM
        // kernel; pixel counts, channels and reductions (45, 27) that are
        // not multiples of its tile.
        ConvCase {
            name: "wide tiles: nhwc ohwi 3x3 same, 2 channel tiles",
            input: [1, 5, 130, 260],
            out_channels: 70,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "wide tiles: nchw oihw 2 groups, batch 2, stride [2, 1], dilation [2, 1]",
            input: [2, 6, 150, 130],
            out_channels: 10,
            groups: 2,
            strides: [2, 1],
            dilations: [2, 1],
            layout: Nchw,
            filter: Oihw,
            ..BASE
        },
        ConvCase {
            name: "nhwc oihw grouped asymmetric stride",
            input: [1, 4, 8, 7],
            out_channels: 4,
            groups: 2,
            strides: [1, 2],
            dilations: [2, 1],
            pad: Pad::Explicit([2, 1, 0, 1]),
            filter: Oihw,
            ..BASE
        },
        // The narrow kernel (one group, up to 8 outputs, all of a pixel's
        // in one invocation): channels in runs of 4 (vector loads in NHWC)
        // and not, odd widths, strides, dilations, batches, both layouts.
        ConvCase {
            name: "narrow: nhwc hwio 12 -> 3 (esrgan's last conv), odd width",
            input: [1, 12, 9, 11],
            out_channels: 3,
            filter: Hwio,
            ..BASE
        },
        ConvCase {
            name: "narrow: nhwc ohwi 8 -> 1, stride 2, batch 2, relu",
            input: [2, 8, 9, 7],
            out_channels: 1,
            strides: [2, 2],
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "narrow: nhwc oihw 7 -> 2 (a 3-channel tail), dilation [1, 2]",
            input: [1, 7, 8, 9],
            out_channels: 2,
            dilations: [1, 2],
            filter: Oihw,
            ..BASE
        },
        ConvCase {
            name: "narrow: nchw oihw 8 -> 5, 5x5 stride [1, 2], asymmetric padding",
            input: [1, 8, 7, 9],
            out_channels: 5,
            kernel: [5, 5],
            strides: [1, 2],
            pad: Pad::Explicit([2, 1, 0, 3]),
            layout: Nchw,
            filter: Oihw,
            ..BASE
        },
        ConvCase {
            name: "narrow: nchw hwio 13 -> 8, batch 2, no bias, clamp",
            input: [2, 13, 5, 7],
            out_channels: 8,
            filter: Hwio,
            bias: false,
            layout: Nchw,
            act: Act::Clamp(-0.5, 0.5),
            ..BASE
        },
        ConvCase {
            name: "narrow: nhwc ihwo 16 -> 3, 1x1",
            input: [1, 16, 5, 9],
            out_channels: 3,
            kernel: [1, 1],
            pad: Pad::Valid,
            filter: Ihwo,
            ..BASE
        },
        // Wider outputs over a short reduction (an RGB stem): the GEMM
        // kernels, past the narrow kernel's 8 outputs.
        ConvCase {
            name: "short reduction: nhwc ohwi 3 -> 20, 3x3 same s2 (an rgb stem), relu",
            input: [2, 3, 9, 11],
            out_channels: 20,
            strides: [2, 2],
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "short reduction: nchw oihw 3 -> 11, 3x3 valid dilation [2, 1]",
            input: [1, 3, 9, 7],
            out_channels: 11,
            dilations: [2, 1],
            pad: Pad::Valid,
            layout: Nchw,
            filter: Oihw,
            ..BASE
        },
    ]
}

#[test]
fn conv2d_matches_cpu() {
    for (i, case) in conv_cases().into_iter().enumerate() {
        check_conv(case, DataType::Float32, i as u64);
    }
}

#[test]
fn conv2d_float16_matches_cpu() {
    let cases = conv_cases();
    for i in [0, 3, 4, 9, 12, 17, 20, 21, 23, 24, 25, 26, 27, 28, 29, 30] {
        check_conv(cases[i], DataType::Float16, 100 + i as u64);
    }
}

/// Float32 NHWC convolutions with a constant filter whose group channels
/// come in runs of 4 (in and out): the implicit GEMM with 16-byte loads
/// (conv2d_gemm_vec.wgsl). Pixel counts that are not a multiple of its 64-
/// or 128-pixel tile, output channels that are not a multiple of its 64
/// (4, 12, 72, 136), reductions that are not a multiple of its 8-row slice.
fn vec4_conv_cases() -> Vec<ConvCase> {
    use Conv2dFilterLayout::*;
    vec![
        ConvCase {
            name: "vec4: 4 -> 4, 3x3 same relu",
            input: [1, 4, 9, 11],
            out_channels: 4,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "vec4: 8 -> 12, 5x5 stride 2 asymmetric padding, batch 2",
            input: [2, 8, 13, 10],
            out_channels: 12,
            kernel: [5, 5],
            strides: [2, 2],
            pad: Pad::Explicit([2, 1, 0, 3]),
            ..BASE
        },
        // 66 x 66: 69 tiles, past the 66 below which the reduction is
        // split (conv2d/gemm_split.rs).
        ConvCase {
            name: "vec4: 68 -> 72, 3x3 same dilation 2, hwio, no bias",
            input: [1, 68, 66, 66],
            out_channels: 72,
            dilations: [2, 2],
            filter: Hwio,
            bias: false,
            ..BASE
        },
        ConvCase {
            name: "vec4: 12 -> 136, 1x1, oihw, batch 3, relu6",
            input: [3, 12, 5, 7],
            out_channels: 136,
            kernel: [1, 1],
            pad: Pad::Valid,
            filter: Oihw,
            act: Act::Clamp(0.0, 6.0),
            ..BASE
        },
        ConvCase {
            name: "vec4: 2 groups of 8 -> 12, stride [2, 1], dilation [1, 2], ihwo",
            input: [1, 16, 6, 7],
            out_channels: 24,
            groups: 2,
            strides: [2, 1],
            dilations: [1, 2],
            pad: Pad::Explicit([1, 0, 2, 1]),
            filter: Ihwo,
            ..BASE
        },
        // One tile over 384 rows: the split reduction, in NHWC.
        ConvCase {
            name: "vec4: 3x2 valid, 64 -> 64",
            input: [1, 64, 6, 5],
            out_channels: 64,
            kernel: [3, 2],
            pad: Pad::Valid,
            ..BASE
        },
        // 265 tiles of 128 pixels: the 128-pixel tile.
        ConvCase {
            name: "vec4 128-pixel tiles: 8 -> 8, 3x3 same, clamp",
            input: [1, 8, 130, 260],
            out_channels: 8,
            act: Act::Clamp(-0.5, 0.5),
            ..BASE
        },
        // 67 pixel tiles x 2 channel tiles x 2 groups: the 128-pixel tile.
        ConvCase {
            name: "vec4 128-pixel tiles: 2 groups of 4 -> 72, 3x3 same stride 2",
            input: [1, 8, 183, 184],
            out_channels: 144,
            groups: 2,
            strides: [2, 2],
            ..BASE
        },
    ]
}

#[test]
fn conv2d_vec4_matches_cpu() {
    for (i, case) in vec4_conv_cases().into_iter().enumerate() {
        check_conv(case, DataType::Float32, 200 + i as u64);
    }
}

/// The same kernel reading float16 (where no tensor cores take it, as on
/// lavapipe).
#[test]
fn conv2d_vec4_float16_matches_cpu() {
    let cases = vec4_conv_cases();
    for i in [0, 1, 2, 3, 4, 6] {
        check_conv(cases[i], DataType::Float16, 300 + i as u64);
    }
}

/// 3x3 convolutions at stride 1 in NHWC with enough channels and work:
/// Winograd F(2x2, 3x3) (conv2d_winograd.wgsl, which takes them from 132
/// workgroups of 8 x 16 outputs x 64 channels an image; its `choose` test
/// holds these shapes). Odd output sizes (partial tiles and blocks), a
/// reduction that is not a multiple of its 16-channel chunk (12, 24),
/// outputs not a multiple of its 64 (48, 96: two channel tiles), groups,
/// a batch, asymmetric and no padding, every filter layout, both layouts.
fn winograd_conv_cases() -> Vec<ConvCase> {
    use Conv2dFilterLayout::*;
    vec![
        ConvCase {
            name: "winograd: 16 -> 64, 3x3 same relu",
            input: [1, 16, 96, 176],
            out_channels: 64,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "winograd: 12 -> 48, padding [0, 2, 1, 1], batch 2, hwio",
            input: [2, 12, 97, 181],
            out_channels: 48,
            pad: Pad::Explicit([0, 2, 1, 1]),
            filter: Hwio,
            ..BASE
        },
        ConvCase {
            name: "winograd: 2 groups of 32 -> 64, clamp, ihwo, no bias",
            input: [1, 64, 64, 132],
            out_channels: 128,
            groups: 2,
            filter: Ihwo,
            bias: false,
            act: Act::Clamp(-0.5, 0.5),
            ..BASE
        },
        ConvCase {
            name: "winograd: 24 -> 96 valid, oihw",
            input: [1, 24, 100, 180],
            out_channels: 96,
            pad: Pad::Valid,
            filter: Oihw,
            ..BASE
        },
        // NCHW (ONNX models): the same kernel reading x through its
        // strides and writing with its other epilogue.
        ConvCase {
            name: "winograd nchw: 24 -> 64, same, relu, oihw",
            input: [1, 24, 97, 181],
            out_channels: 64,
            layout: InputLayout::Nchw,
            filter: Oihw,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "winograd nchw: 16 -> 112, padding [1, 0, 2, 0], hwio, batch 2",
            input: [2, 16, 96, 176],
            out_channels: 112,
            pad: Pad::Explicit([1, 0, 2, 0]),
            layout: InputLayout::Nchw,
            filter: Hwio,
            ..BASE
        },
    ]
}

#[test]
fn conv2d_winograd_matches_cpu() {
    for (i, case) in winograd_conv_cases().into_iter().enumerate() {
        check_conv(case, DataType::Float32, 400 + i as u64);
    }
}

/// The same kernel reading and writing float16 (where no tensor cores take
/// it, as on lavapipe).
#[test]
fn conv2d_winograd_float16_matches_cpu() {
    let cases = winograd_conv_cases();
    for i in [0, 1, 4] {
        check_conv(cases[i], DataType::Float16, 500 + i as u64);
    }
}

/// Small NCHW maps over long reductions (ResNet's last stages): few 64 x
/// 64 tiles, whose reduction conv2d_gemm.wgsl splits over workgroups and
/// conv2d_gemm_sum.wgsl adds up (kernel_tests checks the split). Output
/// channels not a multiple of the tile, groups, a batch, a strided 1x1.
fn split_reduction_cases() -> Vec<ConvCase> {
    use Conv2dFilterLayout::*;
    use InputLayout::*;
    vec![
        ConvCase {
            name: "split reduction: 7x7, 256 -> 64, 3x3 same relu, oihw",
            input: [1, 256, 7, 7],
            out_channels: 64,
            layout: Nchw,
            filter: Oihw,
            act: Act::Relu,
            ..BASE
        },
        ConvCase {
            name: "split reduction: 14x14, 2 groups of 128 -> 96, batch 2, hwio",
            input: [2, 256, 14, 14],
            out_channels: 192,
            groups: 2,
            layout: Nchw,
            filter: Hwio,
            ..BASE
        },
        ConvCase {
            name: "split reduction: 1x1 stride 2, 1024 -> 72, clamp, no bias",
            input: [1, 1024, 14, 14],
            out_channels: 72,
            kernel: [1, 1],
            strides: [2, 2],
            pad: Pad::Valid,
            layout: Nchw,
            filter: Oihw,
            bias: false,
            act: Act::Clamp(-0.5, 0.5),
            ..BASE
        },
    ]
}

#[test]
fn conv2d_split_reduction_matches_cpu() {
    for (i, case) in split_reduction_cases().into_iter().enumerate() {
        check_conv(case, DataType::Float32, 600 + i as u64);
    }
    check_conv(split_reduction_cases()[0], DataType::Float16, 700);
}

fn known_conv_input() -> In {
    let x: Vec<f32> = (1..=9).map(|v| v as f32).collect();
    f32s(&[1, 1, 3, 3], &x)
}

#[test]
fn conv2d_known_values() {
    // x = [[1 2 3] [4 5 6] [7 8 9]], filter [[1 2] [3 4]], bias 1.
    known(
        "conv2d 2x2 valid",
        &[known_conv_input()],
        &|b, ins| {
            let f = b.constant_f32(&[1, 1, 2, 2], &[1., 2., 3., 4.]).unwrap();
            let bias = b.constant_f32(&[1], &[1.]).unwrap();
            b.conv2d(&ins[0], &f, Some(&bias), Conv2dOptions::new())
                .unwrap()
        },
        &[38., 48., 68., 78.],
    );
    // Four output channels (the narrow kernel's path, all four in one
    // invocation): channel k is (k + 1) times the filter above, with bias k.
    known(
        "conv2d 4 channels",
        &[known_conv_input()],
        &|b, ins| {
            let f: Vec<f32> = (1..=4)
                .flat_map(|k| [1., 2., 3., 4.].map(|v| v * k as f32))
                .collect();
            let f = b.constant_f32(&[4, 1, 2, 2], &f).unwrap();
            let bias = b.constant_f32(&[4], &[0., 1., 2., 3.]).unwrap();
            b.conv2d(&ins[0], &f, Some(&bias), Conv2dOptions::new())
                .unwrap()
        },
        &[
            37., 47., 67., 77., //
            75., 95., 135., 155., //
            113., 143., 203., 233., //
            151., 191., 271., 311.,
        ],
    );
    // Padding 1 all round, stride 2, bias -20, then relu: before relu the
    // four windows give 4, 18, 36, 77.
    known(
        "conv2d padded stride 2 relu",
        &[known_conv_input()],
        &|b, ins| {
            let f = b.constant_f32(&[1, 1, 2, 2], &[1., 2., 3., 4.]).unwrap();
            let bias = b.constant_f32(&[1], &[-20.]).unwrap();
            let o = Conv2dOptions {
                padding: [1, 1, 1, 1],
                strides: [2, 2],
                ..Conv2dOptions::new()
            };
            let y = b.conv2d(&ins[0], &f, Some(&bias), o).unwrap();
            b.relu(&y).unwrap()
        },
        &[0., 0., 16., 57.],
    );
    // Depthwise in NHWC with an IHWO filter: channel 0 sums its 2x2 window
    // times 1, channel 1 takes its top-left pixel times 10.
    let x: Vec<f32> = (0..8).map(|v| v as f32).collect();
    known(
        "conv2d depthwise nhwc",
        &[f32s(&[1, 2, 2, 2], &x)],
        &|b, ins| {
            let f = b
                .constant_f32(&[1, 2, 2, 2], &[1., 10., 1., 0., 1., 0., 1., 0.])
                .unwrap();
            let o = Conv2dOptions {
                groups: 2,
                input_layout: InputLayout::Nhwc,
                filter_layout: Conv2dFilterLayout::Ihwo,
                ..Conv2dOptions::new()
            };
            b.conv2d(&ins[0], &f, None, o).unwrap()
        },
        &[0. + 2. + 4. + 6., 10.],
    );
    // Three outputs of four NHWC channels (the narrow kernel's vector
    // loads), 1x1: the channel sum; c0 - c3 + 10; 2 c2 + 0.5.
    let x: Vec<f32> = (1..=8).map(|v| v as f32).collect();
    known(
        "conv2d narrow nhwc 4 -> 3",
        &[f32s(&[1, 1, 2, 4], &x)],
        &|b, ins| {
            let f = b
                .constant_f32(
                    &[3, 1, 1, 4],
                    &[1., 1., 1., 1., 1., 0., 0., -1., 0., 0., 2., 0.],
                )
                .unwrap();
            let bias = b.constant_f32(&[3], &[0., 10., 0.5]).unwrap();
            let o = Conv2dOptions {
                input_layout: InputLayout::Nhwc,
                filter_layout: Conv2dFilterLayout::Ohwi,
                ..Conv2dOptions::new()
            };
            b.conv2d(&ins[0], &f, Some(&bias), o).unwrap()
        },
        &[10., 7., 6.5, 26., 7., 14.5],
    );
    // Four channels in, twelve out in NHWC (conv2d_gemm_vec.wgsl: more
    // outputs than the narrow kernel takes): one row of 3 pixels,
    // x[p][c] = 10 p + c; a 1x3 filter (padding 1 left and right) whose
    // output o takes channel o % 4 of the left neighbour minus that of the
    // right one; bias 100 o.
    let x: Vec<f32> = (0..3)
        .flat_map(|p| (0..4).map(move |c| (10 * p + c) as f32))
        .collect();
    let mut f = vec![0f32; 12 * 3 * 4];
    for o in 0..12 {
        f[(o * 3) * 4 + o % 4] = 1.0;
        f[(o * 3 + 2) * 4 + o % 4] = -1.0;
    }
    let bias: Vec<f32> = (0..12).map(|o| 100.0 * o as f32).collect();
    let want: Vec<f64> = (0..3)
        .flat_map(|p: i32| {
            (0..12).map(move |o: i32| {
                let at = |q: i32| {
                    if (0..3).contains(&q) {
                        (10 * q + o % 4) as f64
                    } else {
                        0.0
                    }
                };
                at(p - 1) - at(p + 1) + 100.0 * o as f64
            })
        })
        .collect();
    known(
        "conv2d 4 -> 12 nhwc, left minus right",
        &[f32s(&[1, 1, 3, 4], &x)],
        &|b, ins| {
            let f = b.constant_f32(&[12, 1, 3, 4], &f).unwrap();
            let bias = b.constant_f32(&[12], &bias).unwrap();
            let o = Conv2dOptions {
                padding: [0, 0, 1, 1],
                input_layout: InputLayout::Nhwc,
                filter_layout: Conv2dFilterLayout::Ohwi,
                ..Conv2dOptions::new()
            };
            b.conv2d(&ins[0], &f, Some(&bias), o).unwrap()
        },
        &want,
    );
}

#[test]
fn conv2d_relu_fuses_to_one_node() {
    let mut rng = StdRng::seed_from_u64(7);
    let x = random(&mut rng, 3 * 5 * 5);
    let filter = random(&mut rng, 4 * 3 * 3 * 3);
    for (name, ctx) in Pair::new().both() {
        let (y, nodes) = run(ctx, &[f32s(&[1, 3, 5, 5], &x)], &|b, ins| {
            let f = b.constant_f32(&[4, 3, 3, 3], &filter).unwrap();
            let y = b.conv2d(&ins[0], &f, None, Conv2dOptions::new()).unwrap();
            b.relu(&y).unwrap()
        });
        assert_eq!(nodes, 1, "{name}: conv2d + relu should be one node");
        assert!(y.iter().all(|&v| v >= 0.0), "{name}: relu not applied");
        assert!(y.iter().any(|&v| v > 0.0), "{name}: all zero");
    }
}

/// What may surround a conv2d in `conv2d_fusions_make_one_node`.
#[derive(Clone, Copy)]
struct FusionCase {
    name: &'static str,
    /// NCHW
    input: [usize; 4],
    out_channels: usize,
    groups: usize,
    layout: InputLayout,
    /// mul(x, per-channel gate) before the conv; `Some(true)`: gate * x.
    gate: Option<bool>,
    /// add(conv, r) after it; `Some(true)`: r + conv.
    residual: Option<bool>,
}

/// Around a conv2d, a per-channel gate on its input (mul), a residual add on
/// its output and a relu after that all fuse into the one conv node: the
/// gate scales input channels as they are read, the residual is added
/// before the activation. GEMM, narrow, grouped and depthwise kernels, both
/// layouts, operands on either side; GPU and CPU agree.
#[test]
fn conv2d_fusions_make_one_node() {
    let base = FusionCase {
        name: "",
        input: [1, 6, 7, 9],
        out_channels: 12,
        groups: 1,
        layout: InputLayout::Nhwc,
        gate: None,
        residual: Some(false),
    };
    let cases = [
        FusionCase {
            name: "gemm nhwc + residual",
            ..base
        },
        FusionCase {
            name: "gemm nchw, r + conv",
            input: [2, 5, 6, 5],
            out_channels: 10,
            layout: InputLayout::Nchw,
            residual: Some(true),
            ..base
        },
        FusionCase {
            name: "depthwise nhwc + residual",
            input: [1, 7, 9, 6],
            out_channels: 7,
            groups: 7,
            residual: Some(true),
            ..base
        },
        FusionCase {
            name: "gate, gemm nhwc + residual",
            input: [1, 6, 5, 7],
            out_channels: 9,
            gate: Some(false),
            ..base
        },
        FusionCase {
            name: "gate * x, gemm nchw",
            input: [2, 5, 4, 6],
            out_channels: 10,
            layout: InputLayout::Nchw,
            gate: Some(true),
            residual: None,
            ..base
        },
        FusionCase {
            name: "gate, grouped nhwc",
            input: [1, 8, 5, 5],
            groups: 2,
            gate: Some(false),
            residual: None,
            ..base
        },
        FusionCase {
            name: "gate, wide-tile gemm nhwc + residual",
            input: [1, 6, 130, 270],
            gate: Some(false),
            ..base
        },
        FusionCase {
            name: "gate, narrow nhwc (vector loads) + residual",
            input: [1, 8, 5, 7],
            out_channels: 3,
            gate: Some(false),
            ..base
        },
        FusionCase {
            name: "gate * x, narrow nchw, r + conv",
            input: [2, 5, 4, 7],
            out_channels: 5,
            layout: InputLayout::Nchw,
            gate: Some(true),
            residual: Some(true),
            ..base
        },
        FusionCase {
            name: "narrow nhwc, 1 output + residual",
            input: [1, 6, 5, 5],
            out_channels: 1,
            ..base
        },
        FusionCase {
            name: "gate * x, vec4 gemm nhwc, r + conv",
            input: [1, 12, 9, 10],
            out_channels: 16,
            gate: Some(true),
            residual: Some(true),
            ..base
        },
        FusionCase {
            name: "gate, vec4 gemm nhwc 128-pixel tiles + residual",
            input: [1, 4, 130, 262],
            gate: Some(false),
            ..base
        },
        // Winograd (96 x 176 outputs, 16 -> 48: 132 blocks), the gate in
        // its patch loads, the residual in its epilogue.
        FusionCase {
            name: "gate * x, winograd nhwc, r + conv",
            input: [1, 16, 96, 176],
            out_channels: 48,
            gate: Some(true),
            residual: Some(true),
            ..base
        },
        // The split reduction (7x7 over 256 channels): the gate in its
        // first pass, the residual in its second.
        FusionCase {
            name: "gate * x, split reduction nchw, r + conv",
            input: [1, 256, 7, 7],
            out_channels: 64,
            layout: InputLayout::Nchw,
            gate: Some(true),
            residual: Some(true),
            ..base
        },
        FusionCase {
            name: "gate, winograd nchw + residual",
            input: [1, 16, 96, 176],
            out_channels: 48,
            layout: InputLayout::Nchw,
            gate: Some(false),
            ..base
        },
        FusionCase {
            name: "gate, depthwise nchw + residual",
            input: [1, 7, 6, 5],
            out_channels: 7,
            groups: 7,
            layout: InputLayout::Nchw,
            gate: Some(false),
            ..base
        },
    ];
    let mut rng = StdRng::seed_from_u64(11);
    for case in cases {
        let FusionCase {
            name,
            input: [n, c, h, w],
            out_channels: oc,
            groups,
            layout,
            gate,
            residual,
        } = case;
        let mut inputs = vec![f32s(
            &activation_shape(layout, n, c, h, w),
            &random(&mut rng, n * c * h * w),
        )];
        if gate.is_some() {
            let shape = activation_shape(layout, 1, c, 1, 1);
            inputs.push(f32s(&shape, &random(&mut rng, c)));
        }
        if residual.is_some() {
            let shape = activation_shape(layout, n, oc, h, w);
            inputs.push(f32s(&shape, &random(&mut rng, n * oc * h * w)));
        }
        let filter = random(&mut rng, oc * (c / groups) * 9);
        let bias = random(&mut rng, oc);
        let build = |b: &GraphBuilder, ins: &[Operand]| {
            let fshape = conv_filter_shape(Conv2dFilterLayout::Ohwi, oc, c / groups, [3, 3]);
            let f = b.constant_f32(&fshape, &filter).unwrap();
            let bias = b.constant_f32(&[oc], &bias).unwrap();
            let o = Conv2dOptions {
                padding: [1, 1, 1, 1],
                groups,
                input_layout: layout,
                filter_layout: Conv2dFilterLayout::Ohwi,
                ..Conv2dOptions::new()
            };
            let x = match gate {
                Some(true) => b.mul(&ins[1], &ins[0]).unwrap(),
                Some(false) => b.mul(&ins[0], &ins[1]).unwrap(),
                None => ins[0].clone(),
            };
            let y = b.conv2d(&x, &f, Some(&bias), o).unwrap();
            let r = ins.last().unwrap();
            let y = match residual {
                Some(true) => b.add(r, &y).unwrap(),
                Some(false) => b.add(&y, r).unwrap(),
                None => y,
            };
            b.relu(&y).unwrap()
        };
        let y = compare(name, &inputs, &build);
        assert!(y.iter().all(|&v| v >= 0.0), "{name}: relu not applied");
        for (ctx_name, ctx) in Pair::new().both() {
            let (_, nodes) = run(ctx, &inputs, &build);
            assert_eq!(nodes, 1, "{name} on {ctx_name}: one node");
        }
    }
}

/// A gate that varies along rows rather than channels is a plain mul.
#[test]
fn conv2d_row_gate_stays_a_mul() {
    let mut rng = StdRng::seed_from_u64(14);
    let inputs = [
        f32s(&[1, 4, 5, 3], &random(&mut rng, 60)),
        f32s(&[1, 4, 1, 1], &random(&mut rng, 4)),
    ];
    let filter = random(&mut rng, 2 * 3);
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let f = b.constant_f32(&[2, 1, 1, 3], &filter).unwrap();
        let o = Conv2dOptions {
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Ohwi,
            ..Conv2dOptions::new()
        };
        b.conv2d(&b.mul(&ins[0], &ins[1]).unwrap(), &f, None, o)
            .unwrap()
    };
    compare("row gate", &inputs, &build);
    for (ctx_name, ctx) in Pair::new().both() {
        let (_, nodes) = run(ctx, &inputs, &build);
        assert_eq!(nodes, 2, "{ctx_name}: a row gate stays a mul");
    }
}

/// A conv2d whose result is read again after the add keeps its own node,
/// and the values still agree.
#[test]
fn conv2d_add_stays_apart_when_the_result_is_reused() {
    let mut rng = StdRng::seed_from_u64(12);
    let x = random(&mut rng, 4 * 5 * 5);
    let r = random(&mut rng, 4 * 5 * 5);
    let filter = random(&mut rng, 4 * 4);
    let inputs = [f32s(&[1, 4, 5, 5], &x), f32s(&[1, 4, 5, 5], &r)];
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let f = b.constant_f32(&[4, 4, 1, 1], &filter).unwrap();
        let y = b.conv2d(&ins[0], &f, None, Conv2dOptions::new()).unwrap();
        let sum = b.add(&y, &ins[1]).unwrap();
        b.mul(&sum, &y).unwrap()
    };
    compare("conv, add, mul by the conv", &inputs, &build);
    for (ctx_name, ctx) in Pair::new().both() {
        let (_, nodes) = run(ctx, &inputs, &build);
        assert_eq!(nodes, 3, "{ctx_name}: nothing may fuse");
    }
}

#[derive(Clone, Copy, Debug)]
struct TransposeCase {
    name: &'static str,
    input: [usize; 4],
    /// Output channels per group.
    out_channels: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    padding: [usize; 4],
    output_padding: [usize; 2],
    output_sizes: Option<[usize; 2]>,
    groups: usize,
    layout: InputLayout,
    filter: ConvTranspose2dFilterLayout,
    bias: bool,
    act: Act,
}

const TBASE: TransposeCase = TransposeCase {
    name: "",
    input: [1, 3, 5, 4],
    out_channels: 4,
    kernel: [3, 3],
    strides: [2, 2],
    dilations: [1, 1],
    padding: [1, 1, 1, 1],
    output_padding: [1, 1],
    output_sizes: None,
    groups: 1,
    layout: InputLayout::Nchw,
    filter: ConvTranspose2dFilterLayout::Iohw,
    bias: true,
    act: Act::None,
};

fn transpose_filter_shape(
    l: ConvTranspose2dFilterLayout,
    i: usize,
    o: usize,
    [h, w]: [usize; 2],
) -> Vec<usize> {
    match l {
        ConvTranspose2dFilterLayout::Iohw => vec![i, o, h, w],
        ConvTranspose2dFilterLayout::Hwoi => vec![h, w, o, i],
        ConvTranspose2dFilterLayout::Ohwi => vec![o, h, w, i],
    }
}

#[test]
fn conv_transpose2d_matches_cpu() {
    use ConvTranspose2dFilterLayout::*;
    use InputLayout::*;
    let cases = [
        TransposeCase {
            name: "nchw iohw 3x3 s2 pad 1 output_padding 1",
            ..TBASE
        },
        TransposeCase {
            name: "tflite nhwc ohwi 3x3 s2 output_sizes relu",
            input: [1, 5, 4, 3],
            layout: Nhwc,
            filter: Ohwi,
            padding: [0, 1, 0, 1],
            output_padding: [0, 0],
            output_sizes: Some([8, 6]),
            act: Act::Relu,
            ..TBASE
        },
        TransposeCase {
            name: "keras nhwc hwoi 4x4 s2 valid",
            input: [1, 3, 3, 5],
            kernel: [4, 4],
            padding: [0; 4],
            output_padding: [0, 0],
            layout: Nhwc,
            filter: Hwoi,
            bias: false,
            ..TBASE
        },
        TransposeCase {
            name: "nchw iohw 3x3 s1 dilation 2 grouped",
            input: [1, 4, 5, 3],
            out_channels: 3,
            strides: [1, 1],
            dilations: [2, 2],
            padding: [1, 2, 0, 1],
            output_padding: [0, 0],
            groups: 2,
            ..TBASE
        },
        TransposeCase {
            name: "nhwc ohwi 2x2 s[2,1] batch 2 depthwise",
            input: [2, 3, 3, 2],
            out_channels: 1,
            kernel: [2, 2],
            strides: [2, 1],
            padding: [0; 4],
            output_padding: [1, 0],
            groups: 3,
            layout: Nhwc,
            filter: Ohwi,
            act: Act::Clamp(-0.5, 0.5),
            ..TBASE
        },
    ];
    for (seed, case) in cases.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(200 + seed as u64);
        let [n, c, h, w] = case.input;
        let oc = case.out_channels * case.groups;
        let fshape = transpose_filter_shape(case.filter, c, case.out_channels, case.kernel);
        let filter = random(&mut rng, fshape.iter().product());
        let bias = random(&mut rng, oc);
        let xshape = activation_shape(case.layout, n, c, h, w);
        let x = random(&mut rng, xshape.iter().product());
        let options = ConvTranspose2dOptions {
            padding: case.padding,
            strides: case.strides,
            dilations: case.dilations,
            output_padding: case.output_padding,
            output_sizes: case.output_sizes,
            groups: case.groups,
            input_layout: case.layout,
            filter_layout: case.filter,
        };
        // float16 too, on the first two cases.
        let types: &[DataType] = if seed < 2 {
            &[DataType::Float32, DataType::Float16]
        } else {
            &[DataType::Float32]
        };
        for &dt in types {
            compare(
                &format!("convTranspose2d {} ({dt})", case.name),
                &[floats(dt, &xshape, &x)],
                &|b, ins| {
                    let f = constant(b, dt, &fshape, &filter);
                    let bias = case.bias.then(|| constant(b, dt, &[oc], &bias));
                    let y = b
                        .conv_transpose2d(&ins[0], &f, bias.as_ref(), options.clone())
                        .unwrap();
                    apply(b, y, case.act)
                },
            );
        }
    }
}

#[test]
fn conv_transpose2d_known_values() {
    let x = f32s(&[1, 1, 2, 2], &[1., 2., 3., 4.]);
    // Stride 2, 2x2 filter: each input pixel becomes its own 2x2 block of
    // x * filter.
    known(
        "convTranspose2d stride 2",
        std::slice::from_ref(&x),
        &|b, ins| {
            let f = b.constant_f32(&[1, 1, 2, 2], &[1., 2., 3., 4.]).unwrap();
            let o = ConvTranspose2dOptions {
                strides: [2, 2],
                ..ConvTranspose2dOptions::new()
            };
            b.conv_transpose2d(&ins[0], &f, None, o).unwrap()
        },
        &[
            1., 2., 2., 4., //
            3., 4., 6., 8., //
            3., 6., 4., 8., //
            9., 12., 12., 16.,
        ],
    );
    // Stride 1: the blocks overlap and add up; bias 0.5.
    known(
        "convTranspose2d stride 1",
        &[x],
        &|b, ins| {
            let f = b.constant_f32(&[1, 1, 2, 2], &[1., 2., 3., 4.]).unwrap();
            let bias = b.constant_f32(&[1], &[0.5]).unwrap();
            b.conv_transpose2d(&ins[0], &f, Some(&bias), ConvTranspose2dOptions::new())
                .unwrap()
        },
        &[1.5, 4.5, 4.5, 6.5, 20.5, 16.5, 9.5, 24.5, 16.5],
    );
}

#[test]
fn pool2d_matches_cpu() {
    use InputLayout::*;
    // (window, strides, dilations, padding, layout, rounding)
    type PoolCase = (
        Option<[usize; 2]>,
        [usize; 2],
        [usize; 2],
        Pad,
        InputLayout,
        RoundingType,
    );
    let floor = RoundingType::Floor;
    let cases: [PoolCase; 9] = [
        (Some([3, 3]), [2, 2], [1, 1], Pad::Same, Nhwc, floor),
        (Some([2, 2]), [2, 2], [1, 1], Pad::Valid, Nhwc, floor),
        (Some([3, 3]), [1, 1], [1, 1], Pad::Same, Nhwc, floor),
        (Some([3, 3]), [1, 1], [2, 2], Pad::Same, Nchw, floor),
        (Some([5, 5]), [2, 2], [1, 1], Pad::Same, Nchw, floor),
        (
            Some([3, 2]),
            [2, 1],
            [1, 1],
            Pad::Explicit([1, 0, 0, 1]),
            Nchw,
            floor,
        ),
        (
            Some([2, 2]),
            [2, 2],
            [1, 1],
            Pad::Valid,
            Nchw,
            RoundingType::Ceil,
        ),
        (None, [1, 1], [1, 1], Pad::Valid, Nhwc, floor),
        (None, [1, 1], [1, 1], Pad::Valid, Nchw, floor),
    ];
    let (n, c, h, w) = (2, 5, 9, 7);
    for (seed, (window, strides, dilations, pad, layout, rounding)) in cases.into_iter().enumerate()
    {
        let mut rng = StdRng::seed_from_u64(300 + seed as u64);
        let shape = activation_shape(layout, n, c, h, w);
        let x = random(&mut rng, shape.iter().product());
        let k = window.unwrap_or([h, w]);
        let options = Pool2dOptions {
            window_dimensions: window,
            padding: resolve(pad, [h, w], k, strides, dilations),
            strides,
            dilations,
            layout,
            rounding_type: rounding,
            output_sizes: None,
            count_include_pad: false,
        };
        for kind in [PoolKind::Average, PoolKind::Max] {
            compare(
                &format!("{kind:?} pool {seed} {options:?}"),
                &[f32s(&shape, &x)],
                &|b, ins| match kind {
                    PoolKind::Average => b.average_pool2d(&ins[0], options.clone()).unwrap(),
                    PoolKind::Max => b.max_pool2d(&ins[0], options.clone()).unwrap(),
                },
            );
        }
    }
}

/// Global pooling (window = the whole unpadded input) is lowered as a
/// parallel reduction: planes larger than a workgroup, not a multiple of it,
/// in both layouts, with the window given explicitly (as TFLite models do)
/// or left out.
#[test]
fn global_pool2d_over_large_planes_matches_cpu() {
    let cases = [
        (InputLayout::Nhwc, [1, 45, 37, 6], Some([45, 37])),
        (InputLayout::Nchw, [2, 3, 40, 33], Some([40, 33])),
        (InputLayout::Nhwc, [2, 19, 23, 5], None),
    ];
    for (seed, (layout, shape, window)) in cases.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(340 + seed as u64);
        let x = random(&mut rng, shape.iter().product());
        let options = Pool2dOptions {
            window_dimensions: window,
            layout,
            ..Pool2dOptions::new()
        };
        for kind in [PoolKind::Average, PoolKind::Max] {
            compare(
                &format!("global {kind:?} pool {shape:?} {layout:?}"),
                &[f32s(&shape, &x)],
                &|b, ins| match kind {
                    PoolKind::Average => b.average_pool2d(&ins[0], options.clone()).unwrap(),
                    PoolKind::Max => b.max_pool2d(&ins[0], options.clone()).unwrap(),
                },
            );
        }
    }
}

#[test]
fn pool2d_float16_matches_cpu() {
    let mut rng = StdRng::seed_from_u64(350);
    let x = random(&mut rng, 7 * 5 * 3);
    let options = Pool2dOptions {
        window_dimensions: Some([3, 3]),
        padding: [1, 1, 1, 1],
        strides: [2, 2],
        layout: InputLayout::Nhwc,
        ..Pool2dOptions::new()
    };
    for kind in [PoolKind::Average, PoolKind::Max] {
        compare(
            &format!("{kind:?} pool float16"),
            &[f16s(&[1, 7, 5, 3], &x)],
            &|b, ins| match kind {
                PoolKind::Average => b.average_pool2d(&ins[0], options.clone()).unwrap(),
                PoolKind::Max => b.max_pool2d(&ins[0], options.clone()).unwrap(),
            },
        );
    }
}

#[test]
fn pool2d_known_values() {
    let x = known_conv_input();
    let window = |p: [usize; 4], s: usize, k: usize| Pool2dOptions {
        window_dimensions: Some([k, k]),
        padding: p,
        strides: [s, s],
        ..Pool2dOptions::new()
    };
    known(
        "averagePool2d 2x2 valid",
        std::slice::from_ref(&x),
        &|b, ins| b.average_pool2d(&ins[0], window([0; 4], 1, 2)).unwrap(),
        &[3., 4., 6., 7.],
    );
    known(
        "maxPool2d 2x2 valid",
        std::slice::from_ref(&x),
        &|b, ins| b.max_pool2d(&ins[0], window([0; 4], 1, 2)).unwrap(),
        &[5., 6., 8., 9.],
    );
    // 3x3 windows, padding 1, stride 2: each window covers four real pixels,
    // and the average is over those four only (not nine).
    known(
        "averagePool2d 3x3 padded",
        std::slice::from_ref(&x),
        &|b, ins| b.average_pool2d(&ins[0], window([1; 4], 2, 3)).unwrap(),
        &[3., 4., 6., 7.],
    );
    known(
        "maxPool2d 3x3 padded",
        std::slice::from_ref(&x),
        &|b, ins| b.max_pool2d(&ins[0], window([1; 4], 2, 3)).unwrap(),
        &[5., 6., 8., 9.],
    );
    known(
        "averagePool2d global",
        &[x],
        &|b, ins| b.average_pool2d(&ins[0], Pool2dOptions::new()).unwrap(),
        &[5.],
    );
}

#[test]
fn reduce_mean_matches_cpu() {
    // (shape, axes, keep_dimensions)
    type ReduceCase = (&'static [usize], Option<&'static [usize]>, bool);
    let cases: [ReduceCase; 9] = [
        // Global average pooling of a MediaPipe-sized NHWC feature map.
        (&[1, 256, 256, 16], Some(&[1, 2]), true),
        (&[2, 5, 7, 3], Some(&[2, 3]), true),
        (&[2, 5, 7, 3], Some(&[3]), false),
        (&[2, 5, 7, 3], Some(&[0]), false),
        (&[2, 5, 7, 3], Some(&[1, 3]), true),
        (&[2, 5, 7, 3], Some(&[0, 2]), false),
        (&[2, 5, 7, 3], None, false),
        (&[3, 1, 70], Some(&[0, 1, 2]), true),
        (&[65, 3], Some(&[1]), false),
    ];
    for (seed, (shape, axes, keep)) in cases.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(400 + seed as u64);
        // Offset so that the means are not all near zero.
        let x: Vec<f32> = random(&mut rng, shape.iter().product())
            .into_iter()
            .map(|v| v + 0.25)
            .collect();
        for dt in [DataType::Float32, DataType::Float16] {
            compare(
                &format!("reduceMean {shape:?} over {axes:?} ({dt})"),
                &[floats(dt, shape, &x)],
                &|b, ins| b.reduce_mean(&ins[0], axes, keep).unwrap(),
            );
        }
    }
}

#[test]
fn reduce_mean_known_values() {
    let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    known(
        "reduceMean axis 1",
        std::slice::from_ref(&x),
        &|b, ins| b.reduce_mean(&ins[0], Some(&[1]), false).unwrap(),
        &[2., 5.],
    );
    known(
        "reduceMean axis 0",
        std::slice::from_ref(&x),
        &|b, ins| b.reduce_mean(&ins[0], Some(&[0]), true).unwrap(),
        &[2.5, 3.5, 4.5],
    );
    known(
        "reduceMean all",
        &[x],
        &|b, ins| b.reduce_mean(&ins[0], None, false).unwrap(),
        &[3.5],
    );
}

fn resample_cases() -> Vec<(Resample2dOptions, [usize; 4])> {
    use CoordinateTransform::*;
    use InterpolationMode::*;
    let mut cases = Vec::new();
    for mode in [NearestNeighbor, Linear] {
        for t in [HalfPixel, AlignCorners, Asymmetric] {
            // NHWC, 2x upsampling by scale.
            cases.push((
                Resample2dOptions {
                    mode,
                    scales: [2.0, 2.0],
                    axes: [1, 2],
                    coordinate_transform: t,
                    ..Default::default()
                },
                [1, 7, 5, 3],
            ));
            // NCHW to explicit sizes, up in one axis and down in the other.
            cases.push((
                Resample2dOptions {
                    mode,
                    sizes: Some([11, 3]),
                    axes: [2, 3],
                    coordinate_transform: t,
                    ..Default::default()
                },
                [2, 3, 7, 5],
            ));
            // Fractional scales, and a 1-pixel axis.
            cases.push((
                Resample2dOptions {
                    mode,
                    scales: [1.5, 3.0],
                    axes: [1, 2],
                    coordinate_transform: t,
                    ..Default::default()
                },
                [1, 5, 1, 2],
            ));
            // NHWC channels in runs of 4 (four an invocation), batch 2,
            // up in one axis and down in the other.
            cases.push((
                Resample2dOptions {
                    mode,
                    sizes: Some([6, 2]),
                    axes: [1, 2],
                    coordinate_transform: t,
                    ..Default::default()
                },
                [2, 3, 5, 8],
            ));
        }
    }
    cases
}

#[test]
fn resample2d_matches_cpu() {
    for (seed, (options, shape)) in resample_cases().into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(500 + seed as u64);
        let x = random(&mut rng, shape.iter().product());
        for dt in [DataType::Float32, DataType::Float16] {
            compare(
                &format!("resample2d {options:?} on {shape:?} ({dt})"),
                &[floats(dt, &shape, &x)],
                &|b, ins| b.resample2d(&ins[0], options.clone()).unwrap(),
            );
        }
    }
}

#[test]
fn resample2d_known_values() {
    use CoordinateTransform::*;
    use InterpolationMode::*;
    let x = f32s(&[1, 1, 2, 2], &[1., 2., 3., 4.]);
    // TF's nearest neighbour floors asymmetric sources (the default rounds).
    let up = |mode, t, sizes: Option<[usize; 2]>| Resample2dOptions {
        mode,
        scales: [2.0, 2.0],
        sizes,
        coordinate_transform: t,
        nearest_rounding: if t == Asymmetric {
            NearestRounding::Floor
        } else {
            NearestRounding::default()
        },
        ..Default::default()
    };
    let blocks = [
        1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.,
    ];
    for t in [HalfPixel, Asymmetric] {
        known(
            &format!("resample2d nearest x2 {t:?}"),
            std::slice::from_ref(&x),
            &|b, ins| b.resample2d(&ins[0], up(NearestNeighbor, t, None)).unwrap(),
            &blocks,
        );
    }
    // Half-pixel sources -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
    known(
        "resample2d linear x2 half-pixel",
        std::slice::from_ref(&x),
        &|b, ins| b.resample2d(&ins[0], up(Linear, HalfPixel, None)).unwrap(),
        &[
            1., 1.25, 1.75, 2., //
            1.5, 1.75, 2.25, 2.5, //
            2.5, 2.75, 3.25, 3.5, //
            3., 3.25, 3.75, 4.,
        ],
    );
    // Align corners, 2 -> 3: sources 0, 0.5, 1.
    known(
        "resample2d linear align-corners",
        std::slice::from_ref(&x),
        &|b, ins| {
            b.resample2d(&ins[0], up(Linear, AlignCorners, Some([3, 3])))
                .unwrap()
        },
        &[1., 1.5, 2., 2., 2.5, 3., 3., 3.5, 4.],
    );
    // Nearest with align corners rounds source 0.5 away from zero, to 1.
    known(
        "resample2d nearest align-corners",
        &[x],
        &|b, ins| {
            b.resample2d(&ins[0], up(NearestNeighbor, AlignCorners, Some([3, 3])))
                .unwrap()
        },
        &[1., 2., 2., 3., 4., 4., 3., 4., 4.],
    );
}

/// More output pixels than 65535 workgroups of the wide conv2d kernel cover
/// in one grid dimension (128 pixels each), so the grid has to fold.
#[test]
fn conv2d_large_image_folds_the_grid() {
    let mut rng = StdRng::seed_from_u64(9);
    // 2^23 pixels: 65536 tiles, and 4 f32 channels fill exactly the
    // 128 MiB storage binding that lavapipe allows.
    let (h, w) = (2048, 4096);
    let x = random(&mut rng, h * w);
    let filter = random(&mut rng, 4);
    compare(
        "conv2d 1x1 on 2048x4096",
        &[f32s(&[1, 1, h, w], &x)],
        &|b, ins| {
            let f = b.constant_f32(&[4, 1, 1, 1], &filter).unwrap();
            b.conv2d(&ins[0], &f, None, Conv2dOptions::new()).unwrap()
        },
    );
}

/// A filter that is an input, not a constant: the narrow kernel, which
/// rearranges a constant filter at build, leaves it to the direct kernel
/// (few outputs) and the implicit GEMM (a short reduction).
#[test]
fn conv2d_with_a_filter_input_matches_cpu() {
    let mut rng = StdRng::seed_from_u64(17);
    for (c, oc) in [(8, 3), (3, 12)] {
        let xshape = [1, 5, 7, c];
        let fshape = [oc, 3, 3, c];
        let x = random(&mut rng, xshape.iter().product());
        let f = random(&mut rng, fshape.iter().product());
        compare(
            &format!("conv2d {c} -> {oc} with a filter input"),
            &[f32s(&xshape, &x), f32s(&fshape, &f)],
            &|b, ins| {
                let o = Conv2dOptions {
                    padding: [1; 4],
                    input_layout: InputLayout::Nhwc,
                    filter_layout: Conv2dFilterLayout::Ohwi,
                    ..Conv2dOptions::new()
                };
                b.conv2d(&ins[0], &ins[1], None, o).unwrap()
            },
        );
    }
}
