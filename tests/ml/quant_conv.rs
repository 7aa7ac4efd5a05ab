//! quantConv2d (`Op::QuantConv2d`, the int8 convolution of quantized
//! models): the GPU kernel (conv2d_int8.wgsl, dot4I8Packed) against the CPU
//! context on random data, odd shapes: input channels that are not whole
//! packed words, strides, dilations, uneven padding, groups and depthwise,
//! int8 and uint8 inputs, filter zero points, both layouts, float32 and
//! float16, a fused activation; and one hand-computed case. Both contexts
//! sum the same integers, so they differ only by the final float
//! product's rounding.

use std::sync::Arc;

use wgnn::ml::*;

use crate::common::ops::{self, floats, one, Pair};

#[derive(Clone, Copy, Debug)]
struct Case {
    /// [n, c, h, w]
    input: [usize; 4],
    out_channels: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    /// [top, bottom, left, right]
    padding: [usize; 4],
    groups: usize,
    /// uint8 input (zero point 131) and filter zero points; else int8,
    /// zero point -5 and symmetric filters.
    unsigned: bool,
    layout: InputLayout,
    relu: bool,
}

const BASE: Case = Case {
    input: [1, 5, 7, 6],
    out_channels: 7,
    kernel: [3, 3],
    strides: [1, 1],
    dilations: [1, 1],
    padding: [1; 4],
    groups: 1,
    unsigned: false,
    layout: InputLayout::Nchw,
    relu: false,
};

fn options(case: Case, filter: Vec<i8>, filter_zero: Vec<i32>) -> QuantConv2dOptions {
    let [_, c, ..] = case.input;
    let oc = case.out_channels;
    QuantConv2dOptions {
        conv: Conv2dOptions {
            padding: case.padding,
            strides: case.strides,
            dilations: case.dilations,
            groups: case.groups,
            input_layout: case.layout,
            ..Conv2dOptions::new()
        },
        input_scale: 1.0 / 50.0,
        input_zero: if case.unsigned { 131 } else { -5 },
        input_signed: !case.unsigned,
        filter_shape: [oc, c / case.groups, case.kernel[0], case.kernel[1]],
        filter: Arc::new(filter),
        filter_zero,
        filter_scale: (0..oc).map(|m| 0.01 + 0.002 * m as f32).collect(),
    }
}

fn check(what: &str, case: Case, dt: DataType, seed: u64) {
    let mut rng = ops::rng(seed);
    let [n, c, h, w] = case.input;
    let oc = case.out_channels;
    let taps = c / case.groups * case.kernel[0] * case.kernel[1];
    let filter: Vec<i8> = ops::uniform(&mut rng, oc * taps, -128.0, 128.0)
        .iter()
        .map(|&v| v.floor() as i8)
        .collect();
    let zeros = ops::uniform(&mut rng, oc, -20.0, 20.0);
    let filter_zero = zeros
        .iter()
        .map(|&z| if case.unsigned { z as i32 } else { 0 })
        .collect();
    let o = options(case, filter, filter_zero);
    let bias = ops::uniform(&mut rng, oc, -1.0, 1.0);
    let shape = match case.layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    };
    let x = ops::uniform(&mut rng, n * c * h * w, -3.0, 3.0);
    let inputs = vec![floats(dt, &shape, &x)];
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let bias = b
            .constant(
                OperandDescriptor::new(dt, [oc]),
                &ops::float_bytes(dt, &bias),
            )
            .unwrap();
        let y = b.quant_conv2d(&ins[0], Some(&bias), o.clone()).unwrap();
        if case.relu {
            b.relu(&y).unwrap()
        } else {
            y
        }
    };
    let what = format!("{what} ({dt})");
    let cpu = Pair::new().check(&what, &one(&build), &inputs).remove(0);
    assert!(
        cpu.values.iter().any(|&v| v != 0.0) && cpu.values.iter().all(|v| v.is_finite()),
        "{what}: a degenerate reference"
    );
}

fn cases() -> Vec<(&'static str, Case)> {
    vec![
        ("5 -> 7 3x3 same, int8", BASE),
        (
            "5 -> 7 3x3 same, uint8 with filter zero points, NHWC, relu",
            Case {
                unsigned: true,
                layout: InputLayout::Nhwc,
                relu: true,
                ..BASE
            },
        ),
        (
            "9 -> 11 5x3 stride [2, 1] dilation [1, 2] uneven padding, batch 2",
            Case {
                input: [2, 9, 9, 8],
                out_channels: 11,
                kernel: [5, 3],
                strides: [2, 1],
                dilations: [1, 2],
                padding: [2, 1, 0, 3],
                ..BASE
            },
        ),
        (
            "6 -> 9 in 3 groups, 3x3 stride 2, uint8",
            Case {
                input: [1, 6, 8, 7],
                out_channels: 9,
                strides: [2, 2],
                groups: 3,
                unsigned: true,
                ..BASE
            },
        ),
        (
            "depthwise 5 channels 3x3, NHWC",
            Case {
                out_channels: 5,
                groups: 5,
                layout: InputLayout::Nhwc,
                ..BASE
            },
        ),
        (
            "1x1 16 -> 20 (whole words, blocks of 8 and 4)",
            Case {
                input: [1, 16, 5, 3],
                out_channels: 20,
                kernel: [1, 1],
                padding: [0; 4],
                ..BASE
            },
        ),
    ]
}

#[test]
fn quant_conv2d_gpu_matches_cpu() {
    let mut ran = 0;
    for (i, (what, case)) in cases().into_iter().enumerate() {
        for dt in [DataType::Float32, DataType::Float16] {
            check(what, case, dt, 40 + i as u64);
            ran += 1;
        }
    }
    assert_eq!(ran, 12, "cases run");
}

/// x = [0.26, -0.74] at scale 0.5 is [1, -1] (0.52 and -1.48 rounded);
/// with the filter [3, -2] at scale 0.1 the sum is 5, so the output is
/// 5 x 0.5 x 0.1 + 1 = 1.25; at input zero point 1 the input is [2, 0],
/// centred [1, -1] again.
#[test]
fn quant_conv2d_known_values() {
    let pair = Pair::new();
    for zero in [0, 1] {
        let o = QuantConv2dOptions {
            conv: Conv2dOptions::new(),
            input_scale: 0.5,
            input_zero: zero,
            input_signed: true,
            filter_shape: [1, 2, 1, 1],
            filter: Arc::new(vec![3, -2]),
            filter_zero: vec![0],
            filter_scale: vec![0.1],
        };
        let build = |b: &GraphBuilder, ins: &[Operand]| {
            let bias = b.constant_f32(&[1], &[1.0]).unwrap();
            b.quant_conv2d(&ins[0], Some(&bias), o.clone()).unwrap()
        };
        let x = ops::f32s(&[1, 2, 1, 1], &[0.26, -0.74]);
        pair.known("quantConv2d 1x1", &one(&build), &[x], &[&[1.25]]);
    }
}

/// fakeQuantize after an add (fused into its kernel), int8 and uint8, on
/// random values that reach past both ends of the range: the GPU against
/// the CPU, and a few values by hand.
#[test]
fn fake_quantize_gpu_matches_cpu() {
    let pair = Pair::new();
    let mut rng = ops::rng(7);
    let mut ran = 0;
    for (zero, range) in [(-3.0, (-128.0, 127.0)), (130.0, (0.0, 255.0))] {
        for dt in [DataType::Float32, DataType::Float16] {
            let shape = [2, 3, 5, 7];
            let a = ops::uniform(&mut rng, 210, -8.0, 8.0);
            let c = ops::uniform(&mut rng, 210, -8.0, 8.0);
            let build = |b: &GraphBuilder, ins: &[Operand]| {
                let s = b.add(&ins[0], &ins[1]).unwrap();
                b.fake_quantize(&s, 0.05, zero, range).unwrap()
            };
            let inputs = [floats(dt, &shape, &a), floats(dt, &shape, &c)];
            pair.check(
                &format!("fakeQuantize zero {zero} ({dt})"),
                &one(&build),
                &inputs,
            );
            ran += 1;
        }
    }
    assert_eq!(ran, 4, "cases run");
    // At scale 0.5, zero point 1: 0.25 -> 0.5 rounds to 0 (half to even),
    // 0.75 -> 1.5 to 2; 100 saturates at 127 - 1 = 126 steps, -100 at -129.
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        b.fake_quantize(&ins[0], 0.5, 1.0, (-128.0, 127.0)).unwrap()
    };
    let x = ops::f32s(&[4], &[0.25, 0.75, 100.0, -100.0]);
    pair.known(
        "fakeQuantize",
        &one(&build),
        &[x],
        &[&[0.0, 1.0, 63.0, -64.5]],
    );
}
