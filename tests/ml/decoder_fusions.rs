//! The rewrites of MobileNet-style decoder blocks (selfie's) and YOLO's
//! bottlenecks: an add of an activated conv2d and a tensor becomes the
//! conv's late residual, added after its activations
//! (`fuse/late_residual.rs`), and a 1x1 conv2d
//! of an upsampled tensor runs before the upsample (`fuse/resample_swap.rs`).
//! Each rewritten graph is checked on both contexts against the same graph
//! kept as written (an intermediate is also a graph output, so nothing
//! moves), GPU against CPU, with node counts; and the cases the passes must
//! leave alone.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use super::conv_input_fusions::{activation_shape, check_fold, constant, random};
use crate::common::ops::{floats, In};

fn options(layout: InputLayout, groups: usize, pad: usize) -> Conv2dOptions {
    Conv2dOptions {
        padding: [pad; 4],
        strides: [1, 1],
        dilations: [1, 1],
        groups,
        input_layout: layout,
        filter_layout: Conv2dFilterLayout::Oihw,
    }
}

/// add(act(conv(x)), r), c -> c channels.
#[derive(Clone, Copy, Debug)]
struct Late {
    dt: DataType,
    /// [n, c, h, w].
    input: [usize; 4],
    layout: InputLayout,
    /// Depthwise (groups = c); else one group.
    depthwise: bool,
    kernel: usize,
    /// 0: relu, 1: clamp(0, 6) then hardSwish, 2: none.
    act: usize,
    /// r is the conv's own input (selfie's `x + relu(dw(x))`), else a
    /// graph input of its own.
    own_input: bool,
    /// Whether the add becomes the conv's late residual.
    folds: bool,
}

fn check_late(case: Late, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, c, h, w] = case.input;
    let (k, layout, dt) = (case.kernel, case.layout, case.dt);
    let groups = if case.depthwise { c } else { 1 };
    let shape = activation_shape(layout, case.input);
    let count = n * c * h * w;
    let mut inputs = vec![floats(dt, &shape, &random(&mut rng, count))];
    if !case.own_input {
        inputs.push(floats(dt, &shape, &random(&mut rng, count)));
    }
    let filter = random(&mut rng, c * (c / groups) * k * k);
    let bias = random(&mut rng, c);
    let build = |b: &GraphBuilder, ins: &[Operand], keep: bool| {
        let f = constant(b, dt, &[c, c / groups, k, k], &filter);
        let bias = constant(b, dt, &[c], &bias);
        let conv = b
            .conv2d(&ins[0], &f, Some(&bias), options(layout, groups, k / 2))
            .unwrap();
        let a = match case.act {
            0 => b.relu(&conv).unwrap(),
            1 => b.hard_swish(&b.clamp(&conv, 0.0, 6.0).unwrap()).unwrap(),
            _ => conv,
        };
        let r = if case.own_input { &ins[0] } else { &ins[1] };
        let y = b.add(r, &a).unwrap();
        if keep {
            vec![y, a]
        } else {
            vec![y]
        }
    };
    let what = format!("add(act(conv2d), r): {case:?}");
    // Without an activation the add is an ordinary residual (before the
    // activations: none), so it folds too.
    let nodes = if case.folds { (1, 2) } else { (2, 2) };
    check_fold(&what, &inputs, nodes, &build);
}

#[test]
fn an_add_after_an_activated_conv_becomes_its_late_residual() {
    use DataType::*;
    use InputLayout::*;
    let base = Late {
        dt: Float32,
        input: [1, 16, 9, 11],
        layout: Nhwc,
        depthwise: true,
        kernel: 3,
        act: 0,
        own_input: true,
        folds: true,
    };
    let cases = [
        base,
        Late {
            dt: Float16,
            ..base
        },
        Late {
            layout: Nchw,
            input: [2, 5, 7, 6],
            ..base
        },
        Late {
            dt: Float16,
            layout: Nchw,
            input: [1, 3, 13, 5],
            act: 1,
            ..base
        },
        Late {
            own_input: false,
            kernel: 5,
            ..base
        },
        Late {
            own_input: false,
            act: 1,
            input: [1, 24, 4, 3],
            ..base
        },
        // No activation: the ordinary residual pass takes it.
        Late { act: 2, ..base },
        // Convolutions of one group, on the kernels conv2d/choose.rs gives
        // them (src/ml/gpu/conv2d_choices.txt has the late rows): YOLO's
        // bottleneck 3x3 (the narrow and direct kernels on small maps) ...
        Late {
            depthwise: false,
            ..base
        },
        Late {
            depthwise: false,
            kernel: 1,
            input: [1, 4, 6, 5],
            ..base
        },
        Late {
            depthwise: false,
            dt: Float16,
            layout: Nchw,
            act: 1,
            own_input: false,
            ..base
        },
        // ... a long reduction (the GEMM, its reduction split) ...
        Late {
            depthwise: false,
            layout: Nchw,
            input: [1, 32, 12, 10],
            ..base
        },
        // ... many pixels (the vec4 GEMM in NHWC, 64 x 64 tiles in NCHW) ...
        Late {
            depthwise: false,
            input: [2, 32, 40, 36],
            ..base
        },
        Late {
            depthwise: false,
            layout: Nchw,
            dt: Float16,
            input: [1, 20, 48, 44],
            ..base
        },
        // ... and a 1x1 over few channels (the pointwise kernel).
        Late {
            depthwise: false,
            kernel: 1,
            input: [1, 8, 48, 40],
            ..base
        },
    ];
    for (i, case) in cases.into_iter().enumerate() {
        check_late(case, 100 + i as u64);
    }
    assert_eq!(cases.len(), 14);
}

/// add(a, a) with a = relu(depthwise conv(x)): the add's other operand is
/// the conv's own result, which cannot be its residual.
#[test]
fn an_add_of_a_depthwise_conv_with_itself_stays() {
    let mut rng = StdRng::seed_from_u64(7);
    let (dt, layout, c) = (DataType::Float32, InputLayout::Nhwc, 6);
    let shape = activation_shape(layout, [1, c, 5, 7]);
    let inputs: Vec<In> = vec![floats(dt, &shape, &random(&mut rng, c * 35))];
    let filter = random(&mut rng, c * 9);
    let build = |b: &GraphBuilder, ins: &[Operand], keep: bool| {
        let f = constant(b, dt, &[c, 1, 3, 3], &filter);
        let conv = b.conv2d(&ins[0], &f, None, options(layout, c, 1)).unwrap();
        let a = b.relu(&conv).unwrap();
        let y = b.add(&a, &a).unwrap();
        if keep {
            vec![y, a]
        } else {
            vec![y]
        }
    };
    check_fold("add(a, a) of a depthwise conv", &inputs, (2, 2), &build);
}

/// conv1x1(resample(x)), optionally of mul(x, gate) (a per-channel gate,
/// folded into the swapped conv as its input scale).
#[derive(Clone, Copy, Debug)]
struct Swap {
    dt: DataType,
    /// [n, c, h, w] of the resample's input.
    input: [usize; 4],
    layout: InputLayout,
    mode: InterpolationMode,
    transform: CoordinateTransform,
    scales: [f32; 2],
    out_channels: usize,
    kernel: usize,
    gate: bool,
    /// A relu reads the conv: it keeps its place.
    relu: bool,
    /// (nodes rewritten, nodes as written).
    nodes: (usize, usize),
}

fn check_swap(case: Swap, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, c, h, w] = case.input;
    let (oc, k, layout, dt) = (case.out_channels, case.kernel, case.layout, case.dt);
    let shape = activation_shape(layout, case.input);
    let mut inputs = vec![floats(dt, &shape, &random(&mut rng, n * c * h * w))];
    if case.gate {
        let gate = activation_shape(layout, [1, c, 1, 1]);
        inputs.push(floats(dt, &gate, &random(&mut rng, c)));
    }
    let filter = random(&mut rng, oc * c * k * k);
    let bias = random(&mut rng, oc);
    let axes = match layout {
        InputLayout::Nchw => [2, 3],
        InputLayout::Nhwc => [1, 2],
    };
    let build = |b: &GraphBuilder, ins: &[Operand], keep: bool| {
        let x = match case.gate {
            true => b.mul(&ins[0], &ins[1]).unwrap(),
            false => ins[0].clone(),
        };
        let up = b
            .resample2d(
                &x,
                Resample2dOptions {
                    mode: case.mode,
                    scales: case.scales,
                    sizes: None,
                    axes,
                    coordinate_transform: case.transform,
                    nearest_rounding: NearestRounding::default(),
                },
            )
            .unwrap();
        let f = constant(b, dt, &[oc, c, k, k], &filter);
        let bias = constant(b, dt, &[oc], &bias);
        let mut y = b
            .conv2d(&up, &f, Some(&bias), options(layout, 1, k / 2))
            .unwrap();
        if case.relu {
            y = b.relu(&y).unwrap();
        }
        if keep {
            vec![y, up]
        } else {
            vec![y]
        }
    };
    check_fold(
        &format!("conv2d(resample2d(x)): {case:?}"),
        &inputs,
        case.nodes,
        &build,
    );
}

#[test]
fn a_pointwise_conv_of_an_upsample_runs_before_it() {
    use CoordinateTransform::*;
    use DataType::*;
    use InputLayout::*;
    use InterpolationMode::*;
    let base = Swap {
        dt: Float32,
        input: [1, 12, 5, 7],
        layout: Nhwc,
        mode: Linear,
        transform: HalfPixel,
        scales: [2.0, 2.0],
        out_channels: 8,
        kernel: 1,
        gate: true,
        relu: false,
        // mul folds into the swapped conv: conv (scaled), resample.
        nodes: (2, 3),
    };
    let cases = [
        base,
        Swap {
            dt: Float16,
            ..base
        },
        Swap {
            layout: Nchw,
            input: [2, 5, 3, 4],
            out_channels: 3,
            transform: AlignCorners,
            scales: [3.0, 2.0],
            ..base
        },
        Swap {
            mode: NearestNeighbor,
            transform: Asymmetric,
            out_channels: 24,
            ..base
        },
        Swap {
            dt: Float16,
            layout: Nchw,
            input: [1, 7, 4, 3],
            transform: Asymmetric,
            scales: [1.5, 2.5],
            ..base
        },
        // Without a gate the count stays (resample, conv either way); the
        // values still must agree.
        Swap {
            gate: false,
            nodes: (2, 2),
            ..base
        },
        // Must not apply: a 3x3 conv; a relu reading the conv.
        Swap {
            kernel: 3,
            nodes: (3, 3),
            ..base
        },
        Swap {
            relu: true,
            nodes: (3, 3),
            ..base
        },
        // Must not apply: a downsample (the conv would run on more pixels).
        Swap {
            scales: [0.5, 0.5],
            input: [1, 12, 8, 6],
            nodes: (3, 3),
            ..base
        },
    ];
    for (i, case) in cases.into_iter().enumerate() {
        check_swap(case, 200 + i as u64);
    }
}
