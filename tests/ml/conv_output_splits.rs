//! A channel split of a conv2d's result becomes one conv per part
//! (`ml::fuse::conv_split`): checked on both contexts against the same graph
//! kept unsplit (the conv's result also a graph output, so nothing folds),
//! GPU against CPU, on odd shapes in both layouts and float types. Which
//! splits stay is checked on the graphs themselves (the pass's unit tests).

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use super::conv_input_fusions::{activation_shape, check_fold, constant, random};
use crate::common::ops::{floats, In};

/// conv2d (bias, an activation) of `in_channels` to the sum of `parts`,
/// split along the channels; the output is the parts concatenated in
/// reverse order, so that every part is read.
#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    dt: DataType,
    layout: InputLayout,
    filter: Conv2dFilterLayout,
    /// n, h, w of the input.
    size: [usize; 3],
    in_channels: usize,
    parts: &'static [usize],
    kernel: usize,
    stride: usize,
    silu: bool,
    /// Nodes (split into convs, kept whole).
    nodes: (usize, usize),
}

fn check_split(case: Case, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (dt, layout) = (case.dt, case.layout);
    let [n, h, w] = case.size;
    let (ic, k) = (case.in_channels, case.kernel);
    let oc: usize = case.parts.iter().sum();
    let filter_shape = match case.filter {
        Conv2dFilterLayout::Oihw => vec![oc, ic, k, k],
        Conv2dFilterLayout::Hwio => vec![k, k, ic, oc],
        Conv2dFilterLayout::Ohwi => vec![oc, k, k, ic],
        Conv2dFilterLayout::Ihwo => vec![ic, k, k, oc],
    };
    let filter: Vec<f32> = random(&mut rng, oc * ic * k * k)
        .iter()
        .map(|v| v / ic as f32)
        .collect();
    let bias = random(&mut rng, oc);
    let input: In = floats(
        dt,
        &activation_shape(layout, [n, ic, h, w]),
        &random(&mut rng, n * ic * h * w),
    );
    let axis = match layout {
        InputLayout::Nchw => 1,
        InputLayout::Nhwc => 3,
    };
    let build = |b: &GraphBuilder, ins: &[Operand], keep: bool| {
        let o = Conv2dOptions {
            padding: [k / 2; 4],
            strides: [case.stride; 2],
            input_layout: layout,
            filter_layout: case.filter,
            ..Conv2dOptions::new()
        };
        let f = constant(b, dt, &filter_shape, &filter);
        let bias = constant(b, dt, &[oc], &bias);
        let y = b.conv2d(&ins[0], &f, Some(&bias), o).unwrap();
        let y = if case.silu {
            b.mul(&y, &b.sigmoid(&y).unwrap()).unwrap()
        } else {
            b.relu(&y).unwrap()
        };
        let parts = b.split_sizes(&y, case.parts, axis).unwrap();
        let reversed: Vec<&Operand> = parts.iter().rev().collect();
        let out = b.concat(&reversed, axis).unwrap();
        if keep {
            vec![out, y]
        } else {
            vec![out]
        }
    };
    let what = format!("conv2d then split: {} ({dt})", case.name);
    check_fold(&what, &[input], case.nodes, &build);
}

const NCHW_STRIDED: Case = Case {
    name: "float16 nchw oihw 7 -> 2 + 3, 3x3 stride 2, batch 2, relu",
    dt: DataType::Float16,
    layout: InputLayout::Nchw,
    filter: Conv2dFilterLayout::Oihw,
    size: [2, 9, 7],
    in_channels: 7,
    parts: &[2, 3],
    kernel: 3,
    stride: 2,
    silu: false,
    nodes: (3, 3),
};

const NHWC_PARTS: Case = Case {
    name: "float16 nhwc hwio 5 -> 3 + 4 + 1, 3x3, silu",
    layout: InputLayout::Nhwc,
    filter: Conv2dFilterLayout::Hwio,
    size: [1, 6, 5],
    in_channels: 5,
    parts: &[3, 4, 1],
    stride: 1,
    silu: true,
    nodes: (4, 3),
    ..NCHW_STRIDED
};

#[test]
fn a_channel_split_of_a_conv_becomes_a_conv_per_part() {
    let cases = [
        NCHW_STRIDED,
        NHWC_PARTS,
        // float32 keeps the split (`split_pays`): 3 nodes either way.
        Case {
            name: "float32 nhwc hwio 5 -> 3 + 4 + 1, 3x3, silu, kept whole",
            dt: DataType::Float32,
            nodes: (3, 3),
            ..NHWC_PARTS
        },
        Case {
            name: "float16 nhwc ohwi 16 -> 16 + 16, 1x1, silu (YOLOv8's C2f cv1)",
            dt: DataType::Float16,
            layout: InputLayout::Nhwc,
            filter: Conv2dFilterLayout::Ohwi,
            size: [1, 5, 7],
            in_channels: 16,
            parts: &[16, 16],
            kernel: 1,
            stride: 1,
            silu: true,
            ..NCHW_STRIDED
        },
    ];
    for (i, case) in cases.into_iter().enumerate() {
        check_split(case, 700 + i as u64);
    }
}
