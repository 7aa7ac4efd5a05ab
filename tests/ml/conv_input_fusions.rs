//! Producers folded into the conv2d that reads them: a nearest-neighbour
//! upsample by integer factors (the narrow and direct kernels read through
//! it; the CPU context upsamples), and a channel concat (split into a chain
//! of convolutions, one per operand). Each fused graph is checked on both
//! contexts against the same graph kept unfused (the intermediate is also a
//! graph output, so nothing folds), GPU against CPU, with the node counts
//! that show what folded; and the cases the pass must leave alone.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use crate::common::ops::{self, assert_close, floats, run, tolerance, In, Pair};

/// Values in [-1, 1).
pub(super) fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    ops::uniform(rng, n, -1.0, 1.0)
}

pub(super) fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], v: &[f32]) -> Operand {
    b.constant(OperandDescriptor::new(dt, shape), &ops::float_bytes(dt, v))
        .unwrap()
}

pub(super) fn activation_shape(layout: InputLayout, [n, c, h, w]: [usize; 4]) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    }
}

/// What [`check_fold`] runs: see there.
pub(super) type Folding<'a> = dyn Fn(&GraphBuilder, &[Operand], bool) -> Vec<Operand> + 'a;

/// `build(b, inputs, keep)` makes the graph's output, and with `keep` the
/// intermediate the pass would fold as a second output (so that it cannot).
/// The graph and the unfused one must have `nodes` nodes on both contexts
/// and agree, and GPU with CPU.
pub(super) fn check_fold(what: &str, inputs: &[In], nodes: (usize, usize), build: &Folding<'_>) {
    let fused = |b: &GraphBuilder, x: &[Operand]| Ok(build(b, x, false));
    let unfused = |b: &GraphBuilder, x: &[Operand]| Ok(build(b, x, true));
    let c = Pair::new().check(what, &fused, inputs).remove(0);
    assert!(
        c.values.iter().any(|&v| v != 0.0) && c.values.iter().all(|v| v.is_finite()),
        "{what}: a degenerate reference"
    );
    for (name, ctx) in Pair::new().both() {
        let f = run(ctx, &fused, inputs).unwrap_or_else(|e| panic!("{what} on {name}: {e}"));
        let u = run(ctx, &unfused, inputs).unwrap_or_else(|e| panic!("{what} on {name}: {e}"));
        assert_eq!(
            (f.nodes, u.nodes),
            nodes,
            "{what} on {name}: (nodes fused, unfused)"
        );
        let (f, u) = (&f.outputs[0], &u.outputs[0]);
        let what = format!("{what} on {name}, fused against unfused");
        assert_close(&what, f.dt, &f.values, &u.values, tolerance(f.dt));
    }
}

/// A resample2d read by a conv2d.
#[derive(Clone, Copy, Debug)]
struct Up {
    name: &'static str,
    dt: DataType,
    /// [n, c, h, w] of the resample's input.
    input: [usize; 4],
    layout: InputLayout,
    mode: InterpolationMode,
    /// Scales, or (`sizes`) the output extents as these multiples of the
    /// input's.
    scales: [f32; 2],
    sizes: bool,
    transform: CoordinateTransform,
    rounding: NearestRounding,
    out_channels: usize,
    groups: usize,
    kernel: usize,
    strides: [usize; 2],
    dilations: [usize; 2],
    padding: [usize; 4],
    residual: bool,
    relu: bool,
    /// Whether the pass folds the resample into the conv.
    folds: bool,
}

/// ESRGAN's tail in small: TF.js UpSampling2D (sizes, asymmetric, floor)
/// then a 3x3 12 -> 3 conv, NHWC.
const ESRGAN_TAIL: Up = Up {
    name: "",
    dt: DataType::Float32,
    input: [1, 12, 5, 7],
    layout: InputLayout::Nhwc,
    mode: InterpolationMode::NearestNeighbor,
    scales: [2.0, 2.0],
    sizes: true,
    transform: CoordinateTransform::Asymmetric,
    rounding: NearestRounding::Floor,
    out_channels: 3,
    groups: 1,
    kernel: 3,
    strides: [1, 1],
    dilations: [1, 1],
    padding: [1; 4],
    residual: false,
    relu: false,
    folds: true,
};

fn check_upsample(case: Up, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, c, h, w] = case.input;
    let (oc, k, layout, dt) = (case.out_channels, case.kernel, case.layout, case.dt);
    let icg = c / case.groups;
    let x = random(&mut rng, n * c * h * w);
    let filter = random(&mut rng, oc * icg * k * k);
    let bias = random(&mut rng, oc);
    let (uh, uw) = (
        (h as f32 * case.scales[0]) as usize,
        (w as f32 * case.scales[1]) as usize,
    );
    let [pt, pb, pl, pr] = case.padding;
    let oh = (uh + pt + pb - case.dilations[0] * (k - 1) - 1) / case.strides[0] + 1;
    let ow = (uw + pl + pr - case.dilations[1] * (k - 1) - 1) / case.strides[1] + 1;
    let mut inputs = vec![floats(dt, &activation_shape(layout, case.input), &x)];
    if case.residual {
        let shape = activation_shape(layout, [n, oc, oh, ow]);
        let r = random(&mut rng, shape.iter().product());
        inputs.push(floats(dt, &shape, &r));
    }
    let build = |b: &GraphBuilder, ins: &[Operand], keep: bool| {
        let axes = match layout {
            InputLayout::Nchw => [2, 3],
            InputLayout::Nhwc => [1, 2],
        };
        let up = b
            .resample2d(
                &ins[0],
                Resample2dOptions {
                    mode: case.mode,
                    scales: case.scales,
                    sizes: case.sizes.then_some([uh, uw]),
                    axes,
                    coordinate_transform: case.transform,
                    nearest_rounding: case.rounding,
                },
            )
            .unwrap();
        let f = constant(b, dt, &[oc, icg, k, k], &filter);
        let bias = constant(b, dt, &[oc], &bias);
        let o = Conv2dOptions {
            padding: case.padding,
            strides: case.strides,
            dilations: case.dilations,
            groups: case.groups,
            input_layout: layout,
            filter_layout: Conv2dFilterLayout::Oihw,
        };
        let mut y = b.conv2d(&up, &f, Some(&bias), o).unwrap();
        if case.residual {
            y = b.add(&y, &ins[1]).unwrap();
        }
        if case.relu {
            y = b.relu(&y).unwrap();
        }
        if keep {
            vec![y, up]
        } else {
            vec![y]
        }
    };
    let what = format!("upsample then conv2d: {} ({dt})", case.name);
    let nodes = if case.folds { (1, 2) } else { (2, 2) };
    check_fold(&what, &inputs, nodes, &build);
}

fn upsample_cases() -> Vec<Up> {
    use CoordinateTransform::*;
    use InputLayout::*;
    vec![
        Up {
            name: "esrgan's tail, nhwc 12 -> 3 x2 (one convolution per output phase)",
            ..ESRGAN_TAIL
        },
        Up {
            name: "float16 esrgan's tail",
            dt: DataType::Float16,
            ..ESRGAN_TAIL
        },
        // conv2d_upsampled.wgsl: a small convolution of the input per
        // output phase, for NHWC channels in runs of 4 and stride 1.
        Up {
            name: "nhwc 8 -> 5 x4 (phases reaching 1 and 2 input rows), batch 2, residual, relu",
            input: [2, 8, 3, 5],
            scales: [4.0, 4.0],
            out_channels: 5,
            residual: true,
            relu: true,
            ..ESRGAN_TAIL
        },
        Up {
            name: "float16 nhwc 4 -> 8, x2 down and x3 across, 5x5, padding [2, 1, 0, 3]",
            dt: DataType::Float16,
            input: [1, 4, 4, 3],
            scales: [2.0, 3.0],
            out_channels: 8,
            kernel: 5,
            padding: [2, 1, 0, 3],
            ..ESRGAN_TAIL
        },
        Up {
            name: "nhwc 16 -> 1 x2, 2x2 valid (an output shorter than the upsampled input)",
            input: [1, 16, 4, 5],
            out_channels: 1,
            kernel: 2,
            padding: [0; 4],
            ..ESRGAN_TAIL
        },
        Up {
            name: "nchw 5 -> 2, scales [3, 2] half-pixel, stride 2, dilation 2, residual, relu",
            input: [2, 5, 4, 5],
            layout: Nchw,
            scales: [3.0, 2.0],
            sizes: false,
            transform: HalfPixel,
            rounding: NearestRounding::RoundPreferCeil,
            out_channels: 2,
            strides: [2, 2],
            dilations: [2, 2],
            padding: [2, 1, 0, 3],
            residual: true,
            relu: true,
            ..ESRGAN_TAIL
        },
        Up {
            name: "float16 nhwc 7 -> 8 (a channel tail), x4 along x only, residual",
            dt: DataType::Float16,
            input: [1, 7, 3, 5],
            scales: [1.0, 4.0],
            out_channels: 8,
            residual: true,
            ..ESRGAN_TAIL
        },
        Up {
            name: "depthwise nhwc 6 channels x2 (direct kernel), relu",
            input: [1, 6, 4, 5],
            out_channels: 6,
            groups: 6,
            relu: true,
            ..ESRGAN_TAIL
        },
        Up {
            name: "grouped nchw 3 groups of 2 outputs (direct kernel), tf half-pixel",
            input: [1, 6, 3, 4],
            layout: Nchw,
            out_channels: 6,
            groups: 3,
            transform: TfHalfPixelForNn,
            ..ESRGAN_TAIL
        },
        // What the pass must leave alone.
        Up {
            name: "linear",
            mode: InterpolationMode::Linear,
            folds: false,
            ..ESRGAN_TAIL
        },
        Up {
            name: "scale 1.5",
            scales: [1.5, 1.5],
            input: [1, 12, 4, 6],
            folds: false,
            ..ESRGAN_TAIL
        },
        Up {
            name: "align corners x2, floor (taps other than y / 2)",
            transform: AlignCorners,
            folds: false,
            ..ESRGAN_TAIL
        },
        Up {
            name: "16 outputs, one group (an implicit-GEMM kernel)",
            out_channels: 16,
            folds: false,
            ..ESRGAN_TAIL
        },
        Up {
            name: "2 groups of 6 outputs (an implicit-GEMM kernel)",
            out_channels: 12,
            groups: 2,
            folds: false,
            ..ESRGAN_TAIL
        },
    ]
}

#[test]
fn nearest_upsample_folds_into_the_conv_that_reads_it() {
    for (i, case) in upsample_cases().into_iter().enumerate() {
        check_upsample(case, 300 + i as u64);
    }
}

/// An upsample the fusion folded, by hand: a 1x2 image [1, 2] upsampled x2
/// (2x4: rows [1 1 2 2]) under a 2x2 all-ones filter, valid: each window
/// sums two rows of [1 1], [1 2], [2 2] -> 4, 6, 8.
#[test]
fn a_folded_upsample_gives_known_values() {
    let x = floats(DataType::Float32, &[1, 1, 1, 2], &[1., 2.]);
    let build = |b: &GraphBuilder, ins: &[Operand]| {
        let up = b
            .resample2d(
                &ins[0],
                Resample2dOptions {
                    scales: [2.0, 2.0],
                    ..Resample2dOptions::default()
                },
            )
            .unwrap();
        let f = b.constant_f32(&[1, 1, 2, 2], &[1.; 4]).unwrap();
        Ok(vec![b.conv2d(&up, &f, None, Conv2dOptions::new()).unwrap()])
    };
    Pair::new().known(
        "folded upsample 1x2 x2",
        &build,
        std::slice::from_ref(&x),
        &[&[4., 6., 8.]],
    );
    for (name, ctx) in Pair::new().both() {
        assert_eq!(
            run(ctx, &build, std::slice::from_ref(&x)).unwrap().nodes,
            1,
            "{name}"
        );
    }
}

/// A channel concat read by a conv2d: the concatenated operands' channel
/// counts (the operands are graph inputs unless `esrgan`), the conv's
/// output channels, filter size and stride.
#[derive(Clone, Copy, Debug)]
struct Cat {
    name: &'static str,
    dt: DataType,
    layout: InputLayout,
    filter: Conv2dFilterLayout,
    /// n, h, w of the operands.
    size: [usize; 3],
    parts: &'static [usize],
    out_channels: usize,
    kernel: usize,
    stride: usize,
    /// ESRGAN's block: the first operand is conv(x), the second relu(conv
    /// of the first), and the conv's result plus the first is the output
    /// (the add fused as a residual before the split).
    esrgan: bool,
    relu: bool,
    /// Nodes (split, kept whole).
    nodes: (usize, usize),
}

fn check_concat(case: Cat, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (dt, layout) = (case.dt, case.layout);
    let [n, h, w] = case.size;
    let channels: usize = case.parts.iter().sum();
    let (oc, k) = (case.out_channels, case.kernel);
    let filter_shape = match case.filter {
        Conv2dFilterLayout::Oihw => vec![oc, channels, k, k],
        Conv2dFilterLayout::Hwio => vec![k, k, channels, oc],
        Conv2dFilterLayout::Ohwi => vec![oc, k, k, channels],
        Conv2dFilterLayout::Ihwo => vec![channels, k, k, oc],
    };
    // Weights scaled down so that sums of many stay near 1 (float16).
    let filter: Vec<f32> = random(&mut rng, oc * channels * k * k)
        .iter()
        .map(|v| v / channels as f32)
        .collect();
    let bias = random(&mut rng, oc);
    let inputs: Vec<In> = if case.esrgan {
        vec![floats(
            dt,
            &activation_shape(layout, [n, 3, h, w]),
            &random(&mut rng, n * 3 * h * w),
        )]
    } else {
        case.parts
            .iter()
            .map(|&c| {
                floats(
                    dt,
                    &activation_shape(layout, [n, c, h, w]),
                    &random(&mut rng, n * c * h * w),
                )
            })
            .collect()
    };
    let head = random(&mut rng, case.parts[0] * 3 * 9);
    let inner = random(&mut rng, case.parts[1] * case.parts[0] * 9);
    let build = |b: &GraphBuilder, ins: &[Operand], keep: bool| {
        let o = |filter_layout, stride: usize, pad: usize| Conv2dOptions {
            padding: [pad; 4],
            strides: [stride; 2],
            input_layout: layout,
            filter_layout,
            ..Conv2dOptions::new()
        };
        let parts: Vec<Operand> = if case.esrgan {
            let (c0, c1) = (case.parts[0], case.parts[1]);
            let f0 = constant(b, dt, &[c0, 3, 3, 3], &head);
            let f1 = constant(b, dt, &[c1, c0, 3, 3], &inner);
            let oihw = Conv2dFilterLayout::Oihw;
            let p0 = b.conv2d(&ins[0], &f0, None, o(oihw, 1, 1)).unwrap();
            let p1 = b.conv2d(&p0, &f1, None, o(oihw, 1, 1)).unwrap();
            vec![p0, b.relu(&p1).unwrap()]
        } else {
            ins.to_vec()
        };
        let refs: Vec<&Operand> = parts.iter().collect();
        let axis = match layout {
            InputLayout::Nchw => 1,
            InputLayout::Nhwc => 3,
        };
        let cat = b.concat(&refs, axis).unwrap();
        let f = constant(b, dt, &filter_shape, &filter);
        let bias = constant(b, dt, &[oc], &bias);
        let mut y = b
            .conv2d(&cat, &f, Some(&bias), o(case.filter, case.stride, k / 2))
            .unwrap();
        if case.esrgan {
            y = b.add(&y, &parts[0]).unwrap();
        }
        if case.relu {
            y = b.relu(&y).unwrap();
        }
        if keep {
            vec![y, cat]
        } else {
            vec![y]
        }
    };
    let what = format!("concat then conv2d: {} ({dt})", case.name);
    check_fold(&what, &inputs, case.nodes, &build);
}

const ESRGAN_BLOCK: Cat = Cat {
    name: "esrgan's block: concat(F_0, relu(F_1_1)) -> 1x1 LFF_1 + F_0, nhwc",
    dt: DataType::Float32,
    layout: InputLayout::Nhwc,
    filter: Conv2dFilterLayout::Hwio,
    size: [1, 7, 9],
    parts: &[8, 4],
    out_channels: 8,
    kernel: 1,
    stride: 1,
    esrgan: true,
    relu: false,
    nodes: (4, 4),
};

/// conv(concat(a, b), W) as conv(b, W[:, b's channels]) + (conv(a, W[:,
/// a's channels]) + bias): on both contexts as the unsplit graph (the
/// concat also an output), GPU as CPU. Which concats stay is checked on
/// the graphs themselves (`ml::fuse::concat`'s tests).
#[test]
fn a_channel_concat_read_by_a_conv_becomes_a_chain_of_convs() {
    let cases = [
        ESRGAN_BLOCK,
        Cat {
            name: "float16 esrgan's block",
            dt: DataType::Float16,
            ..ESRGAN_BLOCK
        },
        Cat {
            name: "nchw oihw, three operands (16 + 3 + 5: a piece of 16 channels), 3x3 stride 2, batch 2, relu",
            layout: InputLayout::Nchw,
            filter: Conv2dFilterLayout::Oihw,
            size: [2, 7, 5],
            parts: &[16, 3, 5],
            out_channels: 6,
            kernel: 3,
            stride: 2,
            esrgan: false,
            relu: true,
            nodes: (3, 2),
            ..ESRGAN_BLOCK
        },
        Cat {
            name: "float16 nhwc ohwi 16 + 16 -> 20, 3x3 (tensor-core pieces where there are some)",
            dt: DataType::Float16,
            filter: Conv2dFilterLayout::Ohwi,
            size: [1, 5, 6],
            parts: &[16, 16],
            out_channels: 20,
            kernel: 3,
            esrgan: false,
            nodes: (2, 2),
            ..ESRGAN_BLOCK
        },
        Cat {
            name: "nhwc ihwo 5 + 4 -> 3 (narrow pieces), relu",
            filter: Conv2dFilterLayout::Ihwo,
            size: [1, 6, 7],
            parts: &[5, 4],
            out_channels: 3,
            kernel: 3,
            esrgan: false,
            relu: true,
            nodes: (2, 2),
            ..ESRGAN_BLOCK
        },
    ];
    for (i, case) in cases.into_iter().enumerate() {
        check_concat(case, 400 + i as u64);
    }
}
