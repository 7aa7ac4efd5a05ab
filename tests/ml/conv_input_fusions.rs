//! Producers folded into the conv2d that reads them: a nearest-neighbour
//! upsample by integer factors (the narrow and direct kernels read through
//! it; the CPU context upsamples). Each fused graph is checked on both
//! contexts against the same graph kept unfused (the intermediate is also a
//! graph output, so nothing folds), GPU against CPU, with the node counts
//! that show what folded; and the cases the pass must leave alone.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use crate::common::ops::{self, assert_close, floats, run, tolerance, In, Pair};

/// Values in [-1, 1).
fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    ops::uniform(rng, n, -1.0, 1.0)
}

fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], v: &[f32]) -> Operand {
    b.constant(OperandDescriptor::new(dt, shape), &ops::float_bytes(dt, v))
        .unwrap()
}

fn activation_shape(layout: InputLayout, [n, c, h, w]: [usize; 4]) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    }
}

/// What [`check_fold`] runs: see there.
type Folding<'a> = dyn Fn(&GraphBuilder, &[Operand], bool) -> Vec<Operand> + 'a;

/// `build(b, inputs, keep)` makes the graph's output, and with `keep` the
/// intermediate the pass would fold as a second output (so that it cannot).
/// The graph and the unfused one must have `nodes` nodes on both contexts
/// and agree, and GPU with CPU.
fn check_fold(what: &str, inputs: &[In], nodes: (usize, usize), build: &Folding<'_>) {
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
            name: "esrgan's tail, nhwc 12 -> 3 x2 (narrow kernel, vector loads)",
            ..ESRGAN_TAIL
        },
        Up {
            name: "float16 esrgan's tail",
            dt: DataType::Float16,
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
