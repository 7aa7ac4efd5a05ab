//! conv2d with few output channels in NHWC: up to 16 over a long reduction
//! (conv2d_split.wgsl: the input channels of a pixel split over lanes), and
//! 17..32 on the vec4 GEMM's 32-channel tiles (large maps); and 1x1s over
//! up to 16 input channels (conv2d_pointwise.wgsl). GPU against the CPU context
//! on random data (odd sizes, strides, dilations, padding, batches, output
//! counts that are not whole vec4s, channel runs that do not fill the
//! lanes evenly), with bias, input scale, residual and activations, in
//! float32 and float16; and one hand-computed case.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use crate::common::ops::{self, floats, one, Pair};

/// Values in [-1, 1).
fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    ops::uniform(rng, n, -1.0, 1.0)
}

fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], v: &[f32]) -> Operand {
    b.constant(OperandDescriptor::new(dt, shape), &ops::float_bytes(dt, v))
        .unwrap()
}

#[derive(Clone, Copy, Debug)]
struct Case {
    /// [n, h, w, c]
    input: [usize; 4],
    out_channels: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    /// [top, bottom, left, right]
    padding: [usize; 4],
    groups: usize,
    filter: Conv2dFilterLayout,
    bias: bool,
    /// A per-channel gate on the input (fused as the conv's input scale).
    scale: bool,
    /// A same-shaped tensor added to the result (fused as its residual).
    residual: bool,
    relu: bool,
}

const BASE: Case = Case {
    input: [1, 7, 11, 64],
    out_channels: 4,
    kernel: [3, 3],
    strides: [1, 1],
    dilations: [1, 1],
    padding: [1; 4],
    groups: 1,
    filter: Conv2dFilterLayout::Ohwi,
    bias: true,
    scale: false,
    residual: false,
    relu: false,
};

fn filter_shape(l: Conv2dFilterLayout, o: usize, i: usize, [h, w]: [usize; 2]) -> Vec<usize> {
    match l {
        Conv2dFilterLayout::Oihw => vec![o, i, h, w],
        Conv2dFilterLayout::Hwio => vec![h, w, i, o],
        Conv2dFilterLayout::Ohwi => vec![o, h, w, i],
        Conv2dFilterLayout::Ihwo => vec![i, h, w, o],
    }
}

fn check(what: &str, case: Case, dt: DataType, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, h, w, c] = case.input;
    let [kh, kw] = case.kernel;
    let oc = case.out_channels;
    let [pt, pb, pl, pr] = case.padding;
    let oh = (h + pt + pb - (kh - 1) * case.dilations[0] - 1) / case.strides[0] + 1;
    let ow = (w + pl + pr - (kw - 1) * case.dilations[1] - 1) / case.strides[1] + 1;
    let fshape = filter_shape(case.filter, oc, c / case.groups, case.kernel);
    let filter = random(&mut rng, fshape.iter().product());
    let bias = random(&mut rng, oc);
    let x = random(&mut rng, n * h * w * c);
    let mut inputs = vec![floats(dt, &[n, h, w, c], &x)];
    if case.scale {
        inputs.push(floats(dt, &[1, 1, 1, c], &random(&mut rng, c)));
    }
    if case.residual {
        let r = random(&mut rng, n * oh * ow * oc);
        inputs.push(floats(dt, &[n, oh, ow, oc], &r));
    }
    let options = Conv2dOptions {
        padding: case.padding,
        strides: case.strides,
        dilations: case.dilations,
        groups: case.groups,
        input_layout: InputLayout::Nhwc,
        filter_layout: case.filter,
    };
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let f = constant(b, dt, &fshape, &filter);
        let bias = case.bias.then(|| constant(b, dt, &[oc], &bias));
        let x = if case.scale {
            b.mul(&ins[0], &ins[1]).unwrap()
        } else {
            ins[0].clone()
        };
        let mut y = b.conv2d(&x, &f, bias.as_ref(), options.clone()).unwrap();
        if case.residual {
            y = b.add(&y, ins.last().unwrap()).unwrap();
        }
        if case.relu {
            y = b.relu(&y).unwrap();
        }
        y
    };
    let what = format!("{what} ({dt})");
    let cpu = Pair::new().check(&what, &one(&build), &inputs).remove(0);
    assert_eq!(cpu.values.len(), n * oh * ow * oc, "{what}: output size");
    assert!(
        cpu.values.iter().any(|&v| v != 0.0) && cpu.values.iter().all(|v| v.is_finite()),
        "{what}: a degenerate reference"
    );
}

fn cases() -> Vec<(&'static str, Case)> {
    use Conv2dFilterLayout::*;
    vec![
        // conv2d_split.wgsl: 16 lanes, one output vec4 (ESRGAN's 64 -> 4).
        ("split 64 -> 4 3x3 same relu", Case { relu: true, ..BASE }),
        // One output vec4 and output rows a multiple of the lane groups' 8
        // pixels, stride and dilation 1 along x: each input row is read once
        // for a filter row's taps.
        (
            "split rows 64 -> 4 3x3, gate, residual, relu",
            Case {
                input: [1, 5, 16, 64],
                scale: true,
                residual: true,
                relu: true,
                ..BASE
            },
        ),
        (
            "split rows 64 -> 3 5x5, stride [2, 1], dilation [2, 1]",
            Case {
                input: [1, 9, 16, 64],
                out_channels: 3,
                kernel: [5, 5],
                strides: [2, 1],
                dilations: [2, 1],
                padding: [4, 3, 2, 2],
                ..BASE
            },
        ),
        (
            "split rows 32 -> 4 3x3, batch 2, oihw",
            Case {
                input: [2, 9, 16, 32],
                filter: Oihw,
                ..BASE
            },
        ),
        // 8 lanes, three output vec4 (ESRGAN's 32 -> 12), batch 2.
        (
            "split 32 -> 12 3x3, batch 2, oihw",
            Case {
                input: [2, 9, 13, 32],
                out_channels: 12,
                filter: Oihw,
                ..BASE
            },
        ),
        // 17 channel runs over 16 lanes, 16 outputs, stride 2, dilation 2.
        (
            "split 68 -> 16 3x3 stride 2 dilation 2, hwio",
            Case {
                input: [1, 11, 10, 68],
                out_channels: 16,
                strides: [2, 2],
                dilations: [2, 2],
                padding: [2, 1, 2, 2],
                filter: Hwio,
                ..BASE
            },
        ),
        // 5 outputs (the second vec4 has one), 5x5, asymmetric padding, no
        // bias.
        (
            "split 64 -> 5 5x5 asymmetric padding",
            Case {
                input: [1, 6, 9, 64],
                out_channels: 5,
                kernel: [5, 5],
                padding: [2, 1, 0, 3],
                bias: false,
                ..BASE
            },
        ),
        // One output, a 1x1 over 256 channels; 3 outputs, stride [2, 1],
        // dilation [1, 2], ihwo; 12 -> 3's neighbour 32 -> 1.
        (
            "split 256 -> 1 1x1",
            Case {
                input: [1, 5, 7, 256],
                out_channels: 1,
                kernel: [1, 1],
                padding: [0; 4],
                ..BASE
            },
        ),
        (
            "split 48 -> 3 3x3 stride [2, 1] dilation [1, 2], ihwo",
            Case {
                input: [1, 8, 9, 48],
                out_channels: 3,
                strides: [2, 1],
                dilations: [1, 2],
                padding: [1, 1, 2, 2],
                filter: Ihwo,
                ..BASE
            },
        ),
        // Past 32 pixels of a workgroup and past one workgroup's rows.
        (
            "split 32 -> 1 3x3, valid",
            Case {
                input: [1, 13, 17, 32],
                out_channels: 1,
                padding: [0; 4],
                ..BASE
            },
        ),
        // Bias, input scale, residual and relu, all fused into the kernel.
        (
            "split 64 -> 4 gate, residual, relu",
            Case {
                scale: true,
                residual: true,
                relu: true,
                ..BASE
            },
        ),
        (
            "split 32 -> 12 gate, residual, no bias",
            Case {
                input: [1, 5, 6, 32],
                out_channels: 12,
                bias: false,
                scale: true,
                residual: true,
                ..BASE
            },
        ),
        // 32 outputs on a small map: the vec4 GEMM's 64 x 64 tile (the
        // 32-channel tile is for large maps only).
        (
            "vec4 64: 64 -> 32 3x3 on a small map",
            Case {
                out_channels: 32,
                ..BASE
            },
        ),
        // 20 outputs (12 idle columns) over 266 tiles of 128 pixels: the
        // 128 x 32 tile, 5x5, gate and residual.
        (
            "vec4 32: 16 -> 20 5x5, gate, residual, relu",
            Case {
                input: [1, 131, 260, 16],
                out_channels: 20,
                kernel: [5, 5],
                strides: [1, 1],
                padding: [2, 2, 2, 1],
                scale: true,
                residual: true,
                relu: true,
                ..BASE
            },
        ),
        // Two groups of 8 -> 32: two 32-channel tiles side by side (133
        // tiles of 128 pixels per group, 266 in all).
        (
            "vec4 32: 2 groups of 8 -> 32, oihw",
            Case {
                input: [1, 130, 131, 16],
                out_channels: 64,
                groups: 2,
                filter: Oihw,
                ..BASE
            },
        ),
        // conv2d_pointwise.wgsl: a 1x1 over up to 16 input channels, one
        // invocation per output vec4 (ESRGAN's 4 -> 64 pieces of a split
        // concat, which add a residual).
        (
            "pointwise 4 -> 64 1x1, residual, relu",
            Case {
                input: [1, 7, 11, 4],
                out_channels: 64,
                kernel: [1, 1],
                padding: [0; 4],
                residual: true,
                relu: true,
                ..BASE
            },
        ),
        // Channels not in runs of 4 (loaded one by one, zero past them),
        // gate, batch 2, stride 2, oihw.
        (
            "pointwise 6 -> 12 1x1 stride 2, gate, batch 2, oihw",
            Case {
                input: [2, 9, 10, 6],
                out_channels: 12,
                kernel: [1, 1],
                strides: [2, 2],
                padding: [0; 4],
                scale: true,
                filter: Oihw,
                ..BASE
            },
        ),
        // 16 inputs (the most it takes), 72 outputs, no bias, residual and
        // gate, hwio.
        (
            "pointwise 16 -> 72 1x1, gate, residual, no bias, hwio",
            Case {
                input: [1, 5, 13, 16],
                out_channels: 72,
                kernel: [1, 1],
                padding: [0; 4],
                bias: false,
                scale: true,
                residual: true,
                filter: Hwio,
                ..BASE
            },
        ),
        // Short reductions over several taps take the other kernels (the
        // pointwise kernel's one invocation per output vec4 measured 0.24
        // ms for ESRGAN's 3x3 RGB head at 960x540 on an H100, where the
        // tensor cores take 0.16 with their copy): an RGB head, 3 -> 64
        // same, residual and relu; a stem, 3x3 stride 2 onto 16 with
        // asymmetric padding; 2 -> 8 3x3 dilation [2, 1], batch 2, ihwo.
        (
            "rgb head 3 -> 64 3x3 same, residual, relu",
            Case {
                input: [1, 6, 9, 3],
                out_channels: 64,
                residual: true,
                relu: true,
                ..BASE
            },
        ),
        (
            "stem 3 -> 16 3x3 stride 2, padding [0, 1, 0, 1]",
            Case {
                input: [1, 9, 12, 3],
                out_channels: 16,
                strides: [2, 2],
                padding: [0, 1, 0, 1],
                ..BASE
            },
        ),
        // Stems of up to 16 outputs take the narrow kernel, all of a
        // pixel's outputs in one invocation: 13 (not whole vec4s) over a
        // 5x5 stride 2, residual and relu, batch 2.
        (
            "stem 4 -> 13 5x5 stride 2, residual, relu, batch 2",
            Case {
                input: [2, 11, 9, 4],
                out_channels: 13,
                kernel: [5, 5],
                strides: [2, 2],
                padding: [2; 4],
                residual: true,
                relu: true,
                ..BASE
            },
        ),
        (
            "2 -> 8 3x3 dilation [2, 1], batch 2, ihwo",
            Case {
                input: [2, 7, 6, 2],
                out_channels: 8,
                dilations: [2, 1],
                padding: [2, 2, 1, 1],
                filter: Ihwo,
                ..BASE
            },
        ),
        // 265 tiles of 128 pixels: the 128-pixel x 32-channel tile, with
        // outputs past the last whole tile.
        (
            "vec4 32 128-pixel tiles: 8 -> 12, 3x3",
            Case {
                input: [1, 130, 261, 8],
                out_channels: 12,
                ..BASE
            },
        ),
    ]
}

#[test]
fn few_output_conv2d_matches_cpu() {
    for (i, (what, case)) in cases().into_iter().enumerate() {
        check(what, case, DataType::Float32, 700 + i as u64);
    }
}

#[test]
fn few_output_conv2d_float16_matches_cpu() {
    for (i, (what, case)) in cases().into_iter().enumerate() {
        check(what, case, DataType::Float16, 800 + i as u64);
    }
}

/// Every input value 1 and filter value m + 1 for output m, bias m, 3x3
/// same padding over 32 channels at 3x4: each output is (m + 1) x 32 x the
/// taps inside the image (4 at a corner, 6 on an edge, 9 inside) + m.
#[test]
fn few_output_conv2d_known_values() {
    let (h, w, c, oc) = (3, 4, 32, 4);
    let filter: Vec<f32> = (0..oc)
        .flat_map(|m| std::iter::repeat_n((m + 1) as f32, 9 * c))
        .collect();
    let bias: Vec<f32> = (0..oc).map(|m| m as f32).collect();
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let dt = DataType::Float32;
        let f = constant(b, dt, &[oc, 3, 3, c], &filter);
        let bias = constant(b, dt, &[oc], &bias);
        let o = Conv2dOptions {
            padding: [1; 4],
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Ohwi,
            ..Conv2dOptions::new()
        };
        b.conv2d(&ins[0], &f, Some(&bias), o).unwrap()
    };
    let mut want = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let rows = if y == 0 || y == h - 1 { 2 } else { 3 };
            let cols = if x == 0 || x == w - 1 { 2 } else { 3 };
            for m in 0..oc {
                want.push(((m + 1) * c * rows * cols + m) as f64);
            }
        }
    }
    let x = floats(DataType::Float32, &[1, h, w, c], &vec![1.0; h * w * c]);
    Pair::new().known_within(
        "conv2d 32 -> 4 of ones",
        &one(&build),
        &[x],
        &[&want],
        Some(1e-6),
    );
}

/// A 1x1 from 4 input channels (c + 1 at channel c) onto 8 outputs, filter
/// value (m + 1) for output m and input channel c = 0 and 0 elsewhere, bias
/// m, plus a residual of 100: output m of every pixel is (m + 1) + m + 100,
/// the pointwise kernel's vec4 path read end to end.
#[test]
fn pointwise_conv2d_known_values() {
    let (h, w, c, oc) = (2, 3, 4, 8);
    let mut filter = vec![0.0f32; oc * c];
    for m in 0..oc {
        filter[m * c] = (m + 1) as f32;
    }
    let bias: Vec<f32> = (0..oc).map(|m| m as f32).collect();
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let dt = DataType::Float32;
        let f = constant(b, dt, &[oc, 1, 1, c], &filter);
        let bias = constant(b, dt, &[oc], &bias);
        let o = Conv2dOptions {
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Ohwi,
            ..Conv2dOptions::new()
        };
        let y = b.conv2d(&ins[0], &f, Some(&bias), o).unwrap();
        b.add(&y, &ins[1]).unwrap()
    };
    let want: Vec<f64> = (0..h * w)
        .flat_map(|_| (0..oc).map(|m| (2 * m + 101) as f64))
        .collect();
    let x: Vec<f32> = (0..h * w)
        .flat_map(|_| (0..c).map(|k| (k + 1) as f32))
        .collect();
    let x = floats(DataType::Float32, &[1, h, w, c], &x);
    let r = floats(DataType::Float32, &[1, h, w, oc], &vec![100.0; h * w * oc]);
    Pair::new().known_within(
        "conv2d 1x1 4 -> 8",
        &one(&build),
        &[x, r],
        &[&want],
        Some(1e-6),
    );
}
