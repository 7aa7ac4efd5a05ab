//! A depthwise conv2d read only by a 1x1 conv2d fuses into one node on both
//! contexts, and the GPU's one kernel (the depthwise values computed as the
//! pointwise GEMM loads them) agrees with the CPU on random data: both
//! layouts, every filter layout on either side, strides, dilations,
//! asymmetric padding, a channel multiplier, odd channel counts and sizes,
//! more than one tile of pixels and of output channels, several images,
//! biases, activations on both convs, an input scale and a residual, float32
//! and float16; plus hand-computed values and the pairs that must not fuse.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use crate::common::ops::{self, floats, In, Pair};

#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    /// [n, c, h, w]
    input: [usize; 4],
    mult: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    padding: [usize; 4],
    out_channels: usize,
    layout: InputLayout,
    dw_filter: Conv2dFilterLayout,
    pw_filter: Conv2dFilterLayout,
    dw_bias: bool,
    pw_bias: bool,
    scale: bool,
    residual: bool,
}

const BASE: Case = Case {
    name: "",
    input: [1, 7, 9, 6],
    mult: 1,
    kernel: [3, 3],
    strides: [1, 1],
    dilations: [1, 1],
    padding: [1, 1, 1, 1],
    // Pairs are fused from 64 output channels on (one full tile).
    out_channels: 64,
    layout: InputLayout::Nhwc,
    dw_filter: Conv2dFilterLayout::Ihwo,
    pw_filter: Conv2dFilterLayout::Ohwi,
    dw_bias: true,
    pw_bias: true,
    scale: false,
    residual: false,
};

fn shape(layout: InputLayout, [n, c, h, w]: [usize; 4]) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    }
}

fn filter_shape(l: Conv2dFilterLayout, o: usize, i: usize, [h, w]: [usize; 2]) -> Vec<usize> {
    match l {
        Conv2dFilterLayout::Oihw => vec![o, i, h, w],
        Conv2dFilterLayout::Hwio => vec![h, w, i, o],
        Conv2dFilterLayout::Ohwi => vec![o, h, w, i],
        Conv2dFilterLayout::Ihwo => vec![i, h, w, o],
    }
}

fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], v: &[f32]) -> wgnn::Result<Operand> {
    b.constant(OperandDescriptor::new(dt, shape), &ops::float_bytes(dt, v))
}

fn out_size(input: usize, k: usize, s: usize, d: usize, pad: usize) -> usize {
    (input + pad - (k - 1) * d - 1) / s + 1
}

fn check(case: Case, dt: DataType, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, c, h, w] = case.input;
    let (cm, oc) = (c * case.mult, case.out_channels);
    let [kh, kw] = case.kernel;
    let oh = out_size(
        h,
        kh,
        case.strides[0],
        case.dilations[0],
        case.padding[0] + case.padding[1],
    );
    let ow = out_size(
        w,
        kw,
        case.strides[1],
        case.dilations[1],
        case.padding[2] + case.padding[3],
    );
    let mut inputs: Vec<In> = vec![floats(
        dt,
        &shape(case.layout, case.input),
        &ops::uniform(&mut rng, n * c * h * w, -1.0, 1.0),
    )];
    if case.scale {
        let g = ops::uniform(&mut rng, c, 0.0, 1.0);
        inputs.push(floats(dt, &shape(case.layout, [1, c, 1, 1]), &g));
    }
    if case.residual {
        let r = ops::uniform(&mut rng, n * oc * oh * ow, -1.0, 1.0);
        inputs.push(floats(dt, &shape(case.layout, [n, oc, oh, ow]), &r));
    }
    let dwf = ops::uniform(&mut rng, cm * kh * kw, -1.0, 1.0);
    let dwb = ops::uniform(&mut rng, cm, -0.5, 0.5);
    let pwf = ops::uniform(&mut rng, oc * cm, -1.0, 1.0);
    let pwb = ops::uniform(&mut rng, oc, -0.5, 0.5);
    let build = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
        let x = if case.scale {
            b.mul(&ins[0], &ins[1])?
        } else {
            ins[0].clone()
        };
        let f = constant(
            b,
            dt,
            &filter_shape(case.dw_filter, cm, 1, case.kernel),
            &dwf,
        )?;
        let bias = if case.dw_bias {
            Some(constant(b, dt, &[cm], &dwb)?)
        } else {
            None
        };
        let o = Conv2dOptions {
            padding: case.padding,
            strides: case.strides,
            dilations: case.dilations,
            groups: c,
            input_layout: case.layout,
            filter_layout: case.dw_filter,
        };
        let d = b.clamp(&b.conv2d(&x, &f, bias.as_ref(), o)?, 0.0, 6.0)?;
        let f = constant(b, dt, &filter_shape(case.pw_filter, oc, cm, [1, 1]), &pwf)?;
        let bias = if case.pw_bias {
            Some(constant(b, dt, &[oc], &pwb)?)
        } else {
            None
        };
        let o = Conv2dOptions {
            input_layout: case.layout,
            filter_layout: case.pw_filter,
            ..Conv2dOptions::new()
        };
        let y = b.conv2d(&d, &f, bias.as_ref(), o)?;
        Ok(vec![if case.residual {
            b.hard_swish(&b.add(ins.last().unwrap(), &y)?)?
        } else {
            y
        }])
    };
    let what = format!("{} {dt}", case.name);
    let y = Pair::new().check(&what, &build, &inputs).remove(0).values;
    assert_eq!(y.len(), n * oc * oh * ow, "{what}");
    assert!(
        y.iter().any(|&v| v != 0.0),
        "{what}: an all-zero output checks nothing"
    );
    for (ctx_name, ctx) in Pair::new().both() {
        let ran = ops::run(ctx, &build, &inputs).unwrap();
        assert_eq!(ran.nodes, 1, "{what} on {ctx_name}: one node");
    }
}

fn cases() -> Vec<Case> {
    use Conv2dFilterLayout::*;
    vec![
        BASE,
        Case {
            name: "nchw, stride 2, asymmetric padding, oihw/hwio",
            input: [2, 5, 9, 8],
            strides: [2, 2],
            padding: [0, 1, 0, 1],
            layout: InputLayout::Nchw,
            dw_filter: Oihw,
            pw_filter: Hwio,
            ..BASE
        },
        Case {
            name: "nhwc 5x5 dilated, multiplier 2, no biases, hwio/ihwo",
            input: [1, 3, 11, 10],
            mult: 2,
            kernel: [5, 5],
            dilations: [2, 1],
            padding: [4, 4, 2, 2],
            dw_bias: false,
            pw_bias: false,
            dw_filter: Hwio,
            pw_filter: Ihwo,
            ..BASE
        },
        Case {
            name: "nhwc, input scale and residual",
            input: [1, 9, 7, 5],
            scale: true,
            residual: true,
            ..BASE
        },
        Case {
            name: "nchw, scale, residual, ohwi/oihw, stride (2, 1)",
            input: [2, 6, 7, 9],
            strides: [2, 1],
            padding: [1, 0, 1, 1],
            layout: InputLayout::Nchw,
            dw_filter: Ohwi,
            pw_filter: Oihw,
            scale: true,
            residual: true,
            ..BASE
        },
        Case {
            // Two tiles of output channels, several of pixels, 72 channels
            // (selfie's shape, smaller).
            name: "nhwc, 70 outputs, 33x35",
            input: [1, 72, 33, 35],
            strides: [2, 2],
            padding: [0, 1, 0, 1],
            out_channels: 70,
            ..BASE
        },
        // Small maps over many depthwise channels (MobileNetV3's 14x14
        // stages): few tiles, the reduction split over workgroups and
        // added up by a second pass (conv2d/gemm_split.rs), which applies
        // the pointwise bias, the residual and the activations. (The 33x35
        // case above splits too, in 5 runs.)
        Case {
            name: "split: nchw 14x14, 184 channels, scale, residual, oihw/oihw",
            input: [1, 184, 14, 14],
            out_channels: 80,
            layout: InputLayout::Nchw,
            dw_filter: Oihw,
            pw_filter: Oihw,
            scale: true,
            residual: true,
            ..BASE
        },
        Case {
            name: "split: nhwc 28x28 stride 2, 240 channels, batch 2",
            input: [2, 240, 28, 28],
            strides: [2, 2],
            padding: [0, 1, 0, 1],
            out_channels: 80,
            ..BASE
        },
        Case {
            name: "nhwc, no padding, 1 channel",
            input: [1, 1, 4, 5],
            padding: [0; 4],
            out_channels: 65,
            ..BASE
        },
    ]
}

#[test]
fn depthwise_pointwise_matches_cpu() {
    for (i, case) in cases().into_iter().enumerate() {
        check(case, DataType::Float32, 100 + i as u64);
    }
}

#[test]
fn depthwise_pointwise_float16_matches_cpu() {
    for (i, case) in cases().into_iter().enumerate() {
        check(case, DataType::Float16, 120 + i as u64);
    }
}

/// Hand-computed: a 1x2x2x2 NHWC input, a 1x1 depthwise filter [2, 3]
/// with bias [1, 0] and relu, then a pointwise [1, -1]:
/// relu(2x0 + 1) - relu(3x1).
#[test]
fn depthwise_pointwise_known_values() {
    let x = [1., 2., -1., 1., 0., -3., 2., 0.];
    let inputs = [floats(DataType::Float32, &[1, 2, 2, 2], &x)];
    // Output channel o takes (o + 1) * (relu(2 a + 1) - relu(3 b)).
    let oc = 64;
    let pw: Vec<f32> = (0..oc)
        .flat_map(|o| [(o + 1) as f32, -((o + 1) as f32)])
        .collect();
    let build = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
        let f = b.constant_f32(&[1, 1, 1, 2], &[2., 3.])?;
        let bias = b.constant_f32(&[2], &[1., 0.])?;
        let o = Conv2dOptions {
            groups: 2,
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Ihwo,
            ..Conv2dOptions::new()
        };
        let d = b.relu(&b.conv2d(&ins[0], &f, Some(&bias), o)?)?;
        let f = b.constant_f32(&[oc, 1, 1, 2], &pw)?;
        let o = Conv2dOptions {
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Ohwi,
            ..Conv2dOptions::new()
        };
        Ok(vec![b.conv2d(&d, &f, None, o)?])
    };
    // Pixels: (1, 2) -> 3 - 6; (-1, 1) -> 0 - 3; (0, -3) -> 1 - 0; (2, 0) -> 5 - 0.
    let want: Vec<f64> = [-3.0f64, -3.0, 1.0, 5.0]
        .iter()
        .flat_map(|v| (0..oc).map(move |o| v * (o + 1) as f64))
        .collect();
    Pair::new().known_within("known", &build, &inputs, &[&want[..]], Some(1e-6));
    for (ctx_name, ctx) in Pair::new().both() {
        assert_eq!(
            ops::run(ctx, &build, &inputs).unwrap().nodes,
            1,
            "{ctx_name}"
        );
    }
}

/// A pointwise conv with fewer outputs than a fused tile, a depthwise result
/// read twice, a pointwise conv with a stride, and a grouped first conv stay
/// two nodes; the values agree.
#[test]
fn depthwise_pointwise_leaves_other_pairs_alone() {
    let mut rng = StdRng::seed_from_u64(140);
    let x = ops::uniform(&mut rng, 4 * 6 * 6, -1.0, 1.0);
    let inputs = [floats(DataType::Float32, &[1, 4, 6, 6], &x)];
    let f = ops::uniform(&mut rng, 256, -1.0, 1.0);
    type Pair2 = fn(&GraphBuilder, &Operand, &[f32]) -> wgnn::Result<Vec<Operand>>;
    let pairs: [(&str, Pair2, usize); 4] = [
        (
            // Fewer output channels than a fused tile pays for.
            "narrow pointwise",
            |b, x, f| {
                let dw = Conv2dOptions {
                    groups: 4,
                    ..Conv2dOptions::new()
                };
                let d = b.conv2d(x, &b.constant_f32(&[4, 1, 1, 1], &f[..4])?, None, dw)?;
                let w = b.constant_f32(&[4, 4, 1, 1], &f[..16])?;
                Ok(vec![b.conv2d(&d, &w, None, Conv2dOptions::new())?])
            },
            2,
        ),
        (
            "depthwise read twice",
            |b, x, f| {
                let dw = Conv2dOptions {
                    groups: 4,
                    ..Conv2dOptions::new()
                };
                let d = b.conv2d(x, &b.constant_f32(&[4, 1, 1, 1], &f[..4])?, None, dw)?;
                let w = b.constant_f32(&[4, 4, 1, 1], &f[..16])?;
                Ok(vec![b.conv2d(&d, &w, None, Conv2dOptions::new())?, d])
            },
            2,
        ),
        (
            "strided pointwise",
            |b, x, f| {
                let dw = Conv2dOptions {
                    groups: 4,
                    ..Conv2dOptions::new()
                };
                let d = b.conv2d(x, &b.constant_f32(&[4, 1, 1, 1], &f[..4])?, None, dw)?;
                let w = b.constant_f32(&[64, 4, 1, 1], &f[..256])?;
                let o = Conv2dOptions {
                    strides: [2, 2],
                    ..Conv2dOptions::new()
                };
                Ok(vec![b.conv2d(&d, &w, None, o)?])
            },
            2,
        ),
        (
            "grouped first conv",
            |b, x, f| {
                let g = Conv2dOptions {
                    groups: 2,
                    ..Conv2dOptions::new()
                };
                let d = b.conv2d(x, &b.constant_f32(&[4, 2, 1, 1], &f[..8])?, None, g)?;
                let w = b.constant_f32(&[64, 4, 1, 1], &f[..256])?;
                Ok(vec![b.conv2d(&d, &w, None, Conv2dOptions::new())?])
            },
            2,
        ),
    ];
    for (name, pair, nodes) in pairs {
        let build = |b: &GraphBuilder, ins: &[Operand]| pair(b, &ins[0], &f);
        Pair::new().check(name, &build, &inputs);
        for (ctx_name, ctx) in Pair::new().both() {
            assert_eq!(
                ops::run(ctx, &build, &inputs).unwrap().nodes,
                nodes,
                "{name} on {ctx_name}"
            );
        }
    }
}
