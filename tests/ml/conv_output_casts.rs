//! A cast between float types of a conv2d's result folded into the conv2d,
//! which then writes the cast's type (`fuse/cast.rs`): the last node of a
//! float16 graph built from a float32 model. Each case runs on both
//! contexts, folded against the same graph with the conv's own result also
//! a graph output (so nothing folds; it rounds that result to the conv's
//! type before the cast, hence float16's tolerance between the two), GPU
//! against CPU, with the node counts that show what folded; then the casts
//! the pass must leave alone.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use super::conv_input_fusions::{activation_shape, constant, random};
use crate::common::ops::{assert_close, floats, run, tolerance, Pair};

/// A conv2d ("same" padding, stride 1, one group), then a cast.
#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    /// The conv's type (input, filter, bias) and the cast's.
    from: DataType,
    to: DataType,
    /// [n, c, h, w] of the input.
    input: [usize; 4],
    layout: InputLayout,
    out_channels: usize,
    kernel: usize,
    /// A nearest x2 upsample before the conv (folded into it first).
    upsample: bool,
    residual: bool,
    relu: bool,
    /// Nodes of the graph as built and of the one whose conv result is
    /// also an output.
    nodes: (usize, usize),
}

const BASE: Case = Case {
    name: "",
    from: DataType::Float16,
    to: DataType::Float32,
    input: [1, 32, 9, 16],
    layout: InputLayout::Nhwc,
    out_channels: 12,
    kernel: 3,
    upsample: false,
    residual: false,
    relu: false,
    nodes: (1, 2),
};

fn check(case: Case, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, c, h, w] = case.input;
    let (oc, k, layout) = (case.out_channels, case.kernel, case.layout);
    let (uh, uw) = if case.upsample {
        (2 * h, 2 * w)
    } else {
        (h, w)
    };
    let x = random(&mut rng, n * c * h * w);
    let filter = random(&mut rng, oc * c * k * k);
    let bias = random(&mut rng, oc);
    let mut inputs = vec![floats(case.from, &activation_shape(layout, case.input), &x)];
    if case.residual {
        let shape = activation_shape(layout, [n, oc, uh, uw]);
        let r = random(&mut rng, shape.iter().product());
        inputs.push(floats(case.from, &shape, &r));
    }
    let build = |b: &GraphBuilder, ins: &[Operand], keep: bool| {
        let mut x = ins[0].clone();
        if case.upsample {
            let axes = match layout {
                InputLayout::Nchw => [2, 3],
                InputLayout::Nhwc => [1, 2],
            };
            x = b
                .resample2d(
                    &x,
                    Resample2dOptions {
                        mode: InterpolationMode::NearestNeighbor,
                        scales: [2.0, 2.0],
                        sizes: None,
                        axes,
                        coordinate_transform: CoordinateTransform::Asymmetric,
                        nearest_rounding: NearestRounding::Floor,
                    },
                )
                .unwrap();
        }
        let f = constant(b, case.from, &[oc, c, k, k], &filter);
        let bias = constant(b, case.from, &[oc], &bias);
        let o = Conv2dOptions {
            padding: [k / 2; 4],
            strides: [1, 1],
            dilations: [1, 1],
            groups: 1,
            input_layout: layout,
            filter_layout: Conv2dFilterLayout::Oihw,
        };
        let mut y = b.conv2d(&x, &f, Some(&bias), o).unwrap();
        if case.residual {
            y = b.add(&y, &ins[1]).unwrap();
        }
        if case.relu {
            y = b.relu(&y).unwrap();
        }
        let cast = b.cast(&y, case.to).unwrap();
        if keep {
            vec![cast, y]
        } else {
            vec![cast]
        }
    };
    let what = format!("conv2d then cast: {}", case.name);
    let folded = |b: &GraphBuilder, x: &[Operand]| Ok(build(b, x, false));
    let kept = |b: &GraphBuilder, x: &[Operand]| Ok(build(b, x, true));
    // GPU against CPU: where the cast folds, both sum in float32 and round
    // once, to the cast's type; where it stays, the conv's result is
    // rounded to its own type first.
    let pair = Pair::new();
    let [g, c] = pair.both().map(|(name, ctx)| {
        run(ctx, &folded, &inputs).unwrap_or_else(|e| panic!("{what} on {name}: {e}"))
    });
    let (g, c) = (&g.outputs[0], &c.outputs[0]);
    assert_eq!(
        (g.dt, c.dt),
        (case.to, case.to),
        "{what}: the output's type"
    );
    assert!(
        c.values.iter().any(|&v| v != 0.0) && c.values.iter().all(|v| v.is_finite()),
        "{what}: a degenerate reference"
    );
    let folds = case.nodes.0 < case.nodes.1;
    let tol = if folds {
        tolerance(case.to)
    } else {
        tolerance(case.from).max(tolerance(case.to))
    };
    assert_close(
        &format!("{what}, GPU against CPU"),
        case.to,
        &g.values,
        &c.values,
        tol,
    );
    for (name, ctx) in pair.both() {
        let f = run(ctx, &folded, &inputs).unwrap_or_else(|e| panic!("{what} on {name}: {e}"));
        let u = run(ctx, &kept, &inputs).unwrap_or_else(|e| panic!("{what} on {name}: {e}"));
        assert_eq!(
            (f.nodes, u.nodes),
            case.nodes,
            "{what} on {name}: (nodes folded, kept)"
        );
        let what = format!("{what} on {name}, folded against kept");
        let tol = tolerance(DataType::Float16);
        assert_close(
            &what,
            case.to,
            &f.outputs[0].values,
            &u.outputs[0].values,
            tol,
        );
    }
}

#[test]
fn float_casts_of_a_conv2d_result_fold_into_it() {
    let cases = [
        // The split kernel (few outputs over a long reduction).
        Case {
            name: "float16 nhwc 3x3 32 -> 12 to float32",
            ..BASE
        },
        // ESRGAN's tail: one small convolution per output phase.
        Case {
            name: "float16 nhwc x2 upsample, 3x3 12 -> 3, to float32",
            input: [1, 12, 5, 7],
            out_channels: 3,
            upsample: true,
            ..BASE
        },
        // The pointwise kernel, with a relu before the cast.
        Case {
            name: "float16 nhwc 1x1 4 -> 64, relu, to float32",
            input: [2, 4, 6, 5],
            out_channels: 64,
            kernel: 1,
            relu: true,
            ..BASE
        },
        // The vec4 GEMM.
        Case {
            name: "float16 nhwc 3x3 16 -> 24 to float32",
            input: [1, 16, 24, 40],
            out_channels: 24,
            ..BASE
        },
        // The other way, in NCHW.
        Case {
            name: "float32 nchw 3x3 8 -> 12 to float16",
            from: DataType::Float32,
            to: DataType::Float16,
            input: [1, 8, 20, 24],
            layout: InputLayout::Nchw,
            ..BASE
        },
    ];
    for (seed, case) in cases.into_iter().enumerate() {
        check(case, seed as u64);
    }
}

#[test]
fn casts_the_pass_leaves_alone() {
    // A fused residual is read as the output's type: the cast stays.
    check(
        Case {
            name: "float16 3x3 32 -> 12 with a residual",
            residual: true,
            nodes: (2, 2),
            ..BASE
        },
        7,
    );
    // A cast to an integer type is not an output type the conv writes.
    let ctx = Context::cpu();
    let b = GraphBuilder::new(&ctx);
    let x = b
        .input("x", OperandDescriptor::new(DataType::Float16, [1, 4, 4, 8]))
        .unwrap();
    let f = constant(&b, DataType::Float16, &[8, 8, 1, 1], &[0.5; 64]);
    let o = Conv2dOptions {
        padding: [0; 4],
        strides: [1, 1],
        dilations: [1, 1],
        groups: 1,
        input_layout: InputLayout::Nhwc,
        filter_layout: Conv2dFilterLayout::Oihw,
    };
    let y = b.conv2d(&x, &f, None, o).unwrap();
    let y = b.cast(&y, DataType::Int32).unwrap();
    let g = b.build(&[("y", &y)]).unwrap();
    assert_eq!(g.node_count(), 2, "conv2d then cast to int32");
}
