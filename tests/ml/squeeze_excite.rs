//! Squeeze-and-excitation chains (the mean of each channel over the image,
//! by averagePool2d or reduceMean, then one or two 1x1 conv2d with their
//! activations) fuse into one node on both contexts, and the GPU's one
//! kernel agrees with the CPU on random data: odd channel counts and image
//! sizes, both layouts, every filter layout, float32 and float16, several
//! images, channel counts past one pass of the kernel's workgroup, images
//! large enough to be summed by many workgroups (up to the most the kernel
//! splits one into), run again and again on new inputs (the kernel's scratch
//! must be left clean); plus hand-computed values, the chains that must not
//! fuse, and the gate of a chain fused on as the next conv2d's input scale
//! (float16 too).

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use crate::common::ops::{self, floats, In, Pair};

/// How a chain pools.
#[derive(Clone, Copy, Debug)]
enum Pool {
    Average,
    ReduceMean,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    /// [n, c, h, w]
    input: [usize; 4],
    /// Output channels of the first layer; a second layer goes back to c.
    hidden: usize,
    layers: usize,
    layout: InputLayout,
    filter: Conv2dFilterLayout,
    bias: bool,
    pool: Pool,
    /// Nodes after fusion.
    nodes: usize,
}

const BASE: Case = Case {
    name: "",
    input: [1, 7, 5, 3],
    hidden: 3,
    layers: 2,
    layout: InputLayout::Nhwc,
    filter: Conv2dFilterLayout::Ohwi,
    bias: true,
    pool: Pool::Average,
    nodes: 1,
};

fn shape(layout: InputLayout, [n, c, h, w]: [usize; 4]) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    }
}

fn filter_shape(l: Conv2dFilterLayout, o: usize, i: usize) -> Vec<usize> {
    match l {
        Conv2dFilterLayout::Oihw => vec![o, i, 1, 1],
        Conv2dFilterLayout::Hwio => vec![1, 1, i, o],
        Conv2dFilterLayout::Ohwi => vec![o, 1, 1, i],
        Conv2dFilterLayout::Ihwo => vec![i, 1, 1, o],
    }
}

fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], v: &[f32]) -> wgnn::Result<Operand> {
    b.constant(OperandDescriptor::new(dt, shape), &ops::float_bytes(dt, v))
}

/// The global mean of `x` as `pool` takes it.
fn mean(b: &GraphBuilder, x: &Operand, layout: InputLayout, pool: Pool) -> wgnn::Result<Operand> {
    match pool {
        Pool::Average => b.average_pool2d(
            x,
            Pool2dOptions {
                layout,
                ..Pool2dOptions::new()
            },
        ),
        Pool::ReduceMean => {
            let axes: &[usize] = match layout {
                InputLayout::Nchw => &[2, 3],
                InputLayout::Nhwc => &[1, 2],
            };
            b.reduce_mean(x, Some(axes), true)
        }
    }
}

/// A 1x1 conv2d of `x` with weights `f` (and bias `bias`) in `case`'s layouts.
fn pointwise(
    b: &GraphBuilder,
    dt: DataType,
    case: &Case,
    x: &Operand,
    (o, i): (usize, usize),
    f: &[f32],
    bias: &[f32],
) -> wgnn::Result<Operand> {
    let f = constant(b, dt, &filter_shape(case.filter, o, i), f)?;
    let bias = if case.bias {
        Some(constant(b, dt, &[o], bias)?)
    } else {
        None
    };
    let opts = Conv2dOptions {
        input_layout: case.layout,
        filter_layout: case.filter,
        ..Conv2dOptions::new()
    };
    b.conv2d(x, &f, bias.as_ref(), opts)
}

fn check(case: Case, dt: DataType, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let [n, c, h, w] = case.input;
    let hid = case.hidden;
    // Inputs offset from 0 so that the means are not all near 0.
    let x = ops::uniform(&mut rng, n * c * h * w, -0.5, 1.5);
    let f1 = ops::uniform(&mut rng, hid * c, -1.0, 1.0);
    let b1 = ops::uniform(&mut rng, hid, -0.5, 0.5);
    let f2 = ops::uniform(&mut rng, c * hid, -1.0, 1.0);
    let b2 = ops::uniform(&mut rng, c, -0.5, 0.5);
    let inputs: [In; 1] = [floats(dt, &shape(case.layout, case.input), &x)];
    let build = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
        let m = mean(b, &ins[0], case.layout, case.pool)?;
        let v = pointwise(b, dt, &case, &m, (hid, c), &f1, &b1)?;
        let y = if case.layers == 2 {
            let v = b.relu(&v)?;
            let v = pointwise(b, dt, &case, &v, (c, hid), &f2, &b2)?;
            b.hard_sigmoid(&v, 0.2, 0.5)?
        } else {
            b.sigmoid(&v)?
        };
        Ok(vec![y])
    };
    let what = format!("{} {dt}", case.name);
    let y = Pair::new().check(&what, &build, &inputs).remove(0).values;
    let distinct = y.iter().filter(|&&v| (v - y[0]).abs() > 1e-3).count();
    assert!(distinct > 0, "{what}: every gate the same checks little");
    let pair = Pair::new();
    for (ctx_name, ctx) in pair.both() {
        let ran = ops::run(ctx, &build, &inputs).unwrap();
        assert_eq!(
            ran.nodes, case.nodes,
            "{what} on {ctx_name}: nodes after fusion"
        );
    }
}

fn cases() -> Vec<Case> {
    vec![
        BASE,
        Case {
            name: "nchw, oihw, reduceMean, two images",
            input: [2, 5, 3, 7],
            layout: InputLayout::Nchw,
            filter: Conv2dFilterLayout::Oihw,
            pool: Pool::ReduceMean,
            ..BASE
        },
        Case {
            name: "nhwc, hwio, no bias, one layer",
            input: [3, 9, 4, 1],
            layers: 1,
            filter: Conv2dFilterLayout::Hwio,
            bias: false,
            ..BASE
        },
        Case {
            name: "nchw, ihwo, one layer, reduceMean",
            input: [1, 6, 1, 1],
            hidden: 5,
            layers: 1,
            layout: InputLayout::Nchw,
            filter: Conv2dFilterLayout::Ihwo,
            pool: Pool::ReduceMean,
            ..BASE
        },
        Case {
            // Channels past one workgroup pass (256), two passes.
            name: "nhwc, 300 channels",
            input: [1, 300, 3, 5],
            hidden: 75,
            ..BASE
        },
        Case {
            // Pixels past the 256 lanes of a pass, with an uneven tail.
            name: "nchw, 437 pixels",
            input: [2, 5, 23, 19],
            layout: InputLayout::Nchw,
            ..BASE
        },
        Case {
            // 16 workgroups, the last one summing fewer pixels.
            name: "nhwc, 30x33x33",
            input: [1, 33, 30, 33],
            hidden: 8,
            ..BASE
        },
        Case {
            name: "nhwc, 70x61x9, two images",
            input: [2, 9, 70, 61],
            ..BASE
        },
        Case {
            name: "nchw, 64x64x10, reduceMean",
            input: [1, 10, 64, 64],
            layout: InputLayout::Nchw,
            pool: Pool::ReduceMean,
            ..BASE
        },
        Case {
            // Past the most workgroups per image (256): wider chunks.
            name: "nhwc, 420x421x3, one layer",
            input: [1, 3, 420, 421],
            layers: 1,
            ..BASE
        },
        Case {
            // One channel, 4 workgroups per image.
            name: "nhwc, 1 channel, 70x90, two images",
            input: [2, 1, 70, 90],
            layers: 1,
            ..BASE
        },
        Case {
            name: "nchw, 128 channels, 20x21, one layer",
            input: [1, 128, 20, 21],
            hidden: 4,
            layers: 1,
            layout: InputLayout::Nchw,
            ..BASE
        },
        Case {
            // Channels past one pass, several workgroups.
            name: "nchw, 300 channels, 20x21",
            input: [1, 300, 20, 21],
            hidden: 40,
            layout: InputLayout::Nchw,
            ..BASE
        },
    ]
}

#[test]
fn squeeze_excite_matches_cpu() {
    for (i, case) in cases().into_iter().enumerate() {
        check(case, DataType::Float32, 40 + i as u64);
    }
}

#[test]
fn squeeze_excite_float16_matches_cpu() {
    for (i, case) in cases().into_iter().enumerate() {
        check(case, DataType::Float16, 60 + i as u64);
    }
}

/// Hand-computed: two NCHW images of two channels, means (2.5, -1) and
/// (0, 4); layer 1 [[1, 1], [1, -1], [0, 2]] + [0, 0, -1] then relu, layer
/// 2 [1, 2, 3] with no bias: 8.5 and 25.
#[test]
fn squeeze_excite_known_values() {
    let x = [
        1., 2., 3., 4., -1., -1., -1., -1., 0., 0., 0., 0., 4., 4., 4., 4.,
    ];
    let inputs = [floats(DataType::Float32, &[2, 2, 2, 2], &x)];
    let build = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
        let m = b.average_pool2d(&ins[0], Pool2dOptions::new())?;
        let f1 = b.constant_f32(&[3, 2, 1, 1], &[1., 1., 1., -1., 0., 2.])?;
        let b1 = b.constant_f32(&[3], &[0., 0., -1.])?;
        let v = b.relu(&b.conv2d(&m, &f1, Some(&b1), Conv2dOptions::new())?)?;
        let f2 = b.constant_f32(&[1, 3, 1, 1], &[1., 2., 3.])?;
        Ok(vec![b.conv2d(&v, &f2, None, Conv2dOptions::new())?])
    };
    Pair::new().known_within("known", &build, &inputs, &[&[8.5, 25.0]], Some(1e-6));
    for (ctx_name, ctx) in Pair::new().both() {
        assert_eq!(
            ops::run(ctx, &build, &inputs).unwrap().nodes,
            1,
            "{ctx_name}"
        );
    }
}

/// What is not a squeeze-and-excitation chain keeps its nodes: a pool read
/// twice, a windowed pool, a padded or 3x3 conv, a grouped conv; values agree.
#[test]
fn squeeze_excite_leaves_other_chains_alone() {
    let mut rng = StdRng::seed_from_u64(70);
    let x = ops::uniform(&mut rng, 4 * 6 * 6, -1.0, 1.0);
    let inputs = [floats(DataType::Float32, &[1, 4, 6, 6], &x)];
    let f = ops::uniform(&mut rng, 4 * 4 * 9, -1.0, 1.0);
    type Chain = fn(&GraphBuilder, &Operand, &[f32]) -> wgnn::Result<Vec<Operand>>;
    let chains: [(&str, Chain, usize); 4] = [
        (
            "pool read twice",
            |b, x, f| {
                let m = b.average_pool2d(x, Pool2dOptions::new())?;
                let w = b.constant_f32(&[4, 4, 1, 1], &f[..16])?;
                let y = b.conv2d(&m, &w, None, Conv2dOptions::new())?;
                Ok(vec![y, b.relu(&m)?])
            },
            3,
        ),
        (
            "windowed pool",
            |b, x, f| {
                let o = Pool2dOptions {
                    window_dimensions: Some([3, 3]),
                    strides: [3, 3],
                    ..Pool2dOptions::new()
                };
                let m = b.average_pool2d(x, o)?;
                let w = b.constant_f32(&[4, 4, 1, 1], &f[..16])?;
                Ok(vec![b.conv2d(&m, &w, None, Conv2dOptions::new())?])
            },
            2,
        ),
        (
            "padded 3x3 conv",
            |b, x, f| {
                let m = b.average_pool2d(x, Pool2dOptions::new())?;
                let w = b.constant_f32(&[4, 4, 3, 3], f)?;
                let o = Conv2dOptions {
                    padding: [1; 4],
                    ..Conv2dOptions::new()
                };
                Ok(vec![b.conv2d(&m, &w, None, o)?])
            },
            2,
        ),
        (
            "grouped conv",
            |b, x, f| {
                let m = b.average_pool2d(x, Pool2dOptions::new())?;
                let w = b.constant_f32(&[4, 2, 1, 1], &f[..8])?;
                let o = Conv2dOptions {
                    groups: 2,
                    ..Conv2dOptions::new()
                };
                Ok(vec![b.conv2d(&m, &w, None, o)?])
            },
            2,
        ),
    ];
    for (name, chain, nodes) in chains {
        let build = |b: &GraphBuilder, ins: &[Operand]| chain(b, &ins[0], &f);
        Pair::new().check(name, &build, &inputs);
        for (ctx_name, ctx) in Pair::new().both() {
            let ran = ops::run(ctx, &build, &inputs).unwrap();
            assert_eq!(ran.nodes, nodes, "{name} on {ctx_name}");
        }
    }
}

/// A whole block as MobileNetV3 and selfie write it, in float32 and
/// float16: depthwise conv, the chain, its gate as the next conv's input
/// scale, and a residual add: three nodes on both contexts, which agree.
#[test]
fn squeeze_excite_block_fuses_to_three_nodes() {
    for (seed, dt) in [(80, DataType::Float32), (81, DataType::Float16)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let (c, hid, oc, hw) = (12, 5, 7, 9);
        let x = ops::uniform(&mut rng, c * hw * hw, -1.0, 1.0);
        let r = ops::uniform(&mut rng, oc * hw * hw, -1.0, 1.0);
        let dw = ops::uniform(&mut rng, c * 9, -1.0, 1.0);
        let f1 = ops::uniform(&mut rng, hid * c, -1.0, 1.0);
        let f2 = ops::uniform(&mut rng, c * hid, -1.0, 1.0);
        let pw = ops::uniform(&mut rng, oc * c, -1.0, 1.0);
        let bias = ops::uniform(&mut rng, c, -0.5, 0.5);
        let inputs = [
            floats(dt, &[1, hw, hw, c], &x),
            floats(dt, &[1, hw, hw, oc], &r),
        ];
        let nhwc = |filter| Conv2dOptions {
            input_layout: InputLayout::Nhwc,
            filter_layout: filter,
            ..Conv2dOptions::new()
        };
        let build = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
            let k = |shape: &[usize], v: &[f32]| constant(b, dt, shape, v);
            let depthwise = Conv2dOptions {
                padding: [1; 4],
                groups: c,
                ..nhwc(Conv2dFilterLayout::Ihwo)
            };
            let d = b.conv2d(
                &ins[0],
                &k(&[1, 3, 3, c], &dw)?,
                Some(&k(&[c], &bias)?),
                depthwise,
            )?;
            let d = b.hard_swish(&d)?;
            let m = b.average_pool2d(
                &d,
                Pool2dOptions {
                    layout: InputLayout::Nhwc,
                    ..Pool2dOptions::new()
                },
            )?;
            let ohwi = nhwc(Conv2dFilterLayout::Ohwi);
            let v = b.relu(&b.conv2d(&m, &k(&[hid, 1, 1, c], &f1)?, None, ohwi.clone())?)?;
            let g = b.sigmoid(&b.conv2d(&v, &k(&[c, 1, 1, hid], &f2)?, None, ohwi.clone())?)?;
            let y = b.conv2d(&b.mul(&d, &g)?, &k(&[oc, 1, 1, c], &pw)?, None, ohwi)?;
            Ok(vec![b.add(&y, &ins[1])?])
        };
        Pair::new().check(&format!("block {dt}"), &build, &inputs);
        for (ctx_name, ctx) in Pair::new().both() {
            let ran = ops::run(ctx, &build, &inputs).unwrap();
            assert_eq!(ran.nodes, 3, "block {dt} on {ctx_name}");
        }
    }
}

/// A float binary op followed by an add of a same-shaped tensor (the gate
/// times a skip connection, plus another, in selfie's decoder) is one node
/// on both contexts: every op, the residual on either side, broadcasting,
/// an activation after the add, float32 and float16; a pow, an add whose
/// other operand broadcasts, and a product read again stay apart.
#[test]
fn binary_then_add_fuses_to_one_node() {
    type Op2 = fn(&GraphBuilder, &Operand, &Operand) -> wgnn::Result<Operand>;
    let ops: [(&str, Op2); 7] = [
        ("mul", |b, x, y| b.mul(x, y)),
        ("add", |b, x, y| b.add(x, y)),
        ("sub", |b, x, y| b.sub(y, x)),
        ("div", |b, x, y| b.div(x, y)),
        ("max", |b, x, y| b.max(x, y)),
        ("min", |b, x, y| b.min(y, x)),
        ("pow", |b, x, y| b.pow(x, y)),
    ];
    for (seed, dt) in [(90, DataType::Float32), (91, DataType::Float16)] {
        let mut rng = StdRng::seed_from_u64(seed);
        // Positive values: div and pow stay finite.
        let x = ops::uniform(&mut rng, 2 * 5 * 3 * 7, 0.5, 1.5);
        let g = ops::uniform(&mut rng, 7, 0.5, 1.5);
        let r = ops::uniform(&mut rng, 2 * 5 * 3 * 7, -1.0, 1.0);
        let inputs = [
            floats(dt, &[2, 5, 3, 7], &x),
            floats(dt, &[1, 1, 1, 7], &g),
            floats(dt, &[2, 5, 3, 7], &r),
        ];
        for (name, op) in ops {
            for (k, relu) in [false, true].into_iter().enumerate() {
                let build = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
                    let v = op(b, &ins[0], &ins[1])?;
                    let y = if k == 0 {
                        b.add(&v, &ins[2])?
                    } else {
                        b.add(&ins[2], &v)?
                    };
                    Ok(vec![if relu { b.relu(&y)? } else { y }])
                };
                let what = format!("{name} + residual, relu {relu}, {dt}");
                Pair::new().check(&what, &build, &inputs);
                let want = if name == "pow" { 2 } else { 1 };
                for (ctx_name, ctx) in Pair::new().both() {
                    let ran = ops::run(ctx, &build, &inputs).unwrap();
                    assert_eq!(ran.nodes, want, "{what} on {ctx_name}");
                }
            }
        }
        let apart = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
            let v = b.mul(&ins[0], &ins[1])?;
            // The gate broadcasts: not a residual.
            let w = b.add(&ins[0], &ins[1])?;
            let y = b.add(&v, &ins[2])?;
            Ok(vec![b.mul(&y, &v)?, w])
        };
        Pair::new().check("apart", &apart, &inputs);
        for (ctx_name, ctx) in Pair::new().both() {
            let ran = ops::run(ctx, &apart, &inputs).unwrap();
            assert_eq!(ran.nodes, 4, "apart {dt} on {ctx_name}");
        }
    }
}

/// One graph dispatched again and again on new inputs (and profiled, each
/// kernel in its own pass): the many-workgroup kernel empties its scratch at
/// the end of every dispatch, so each result matches the CPU's for its own
/// input; a dirty scratch would hang, or mix in the last input's sums.
#[test]
fn squeeze_excite_repeated_dispatches() {
    let case = Case {
        input: [2, 16, 48, 40],
        hidden: 4,
        ..BASE
    };
    let [n, c, h, w] = case.input;
    let mut rng = StdRng::seed_from_u64(75);
    let f1 = ops::uniform(&mut rng, 4 * c, -1.0, 1.0);
    let f2 = ops::uniform(&mut rng, c * 4, -1.0, 1.0);
    let bias = ops::uniform(&mut rng, c, -0.5, 0.5);
    let dt = DataType::Float32;
    let build = |b: &GraphBuilder, ins: &[Operand]| -> wgnn::Result<Vec<Operand>> {
        let m = mean(b, &ins[0], case.layout, case.pool)?;
        let v = b.relu(&pointwise(b, dt, &case, &m, (4, c), &f1, &bias[..4])?)?;
        Ok(vec![pointwise(b, dt, &case, &v, (c, 4), &f2, &bias)?])
    };
    let pair = Pair::new();
    let [(_, gpu), (_, cpu)] = pair.both();
    let shape = shape(case.layout, case.input);
    let b = GraphBuilder::new(gpu);
    let x = b
        .input("x", OperandDescriptor::new(dt, shape.clone()))
        .unwrap();
    let y = build(&b, &[x]).unwrap().remove(0);
    let graph = b.build(&[("y", &y)]).unwrap();
    assert_eq!(graph.node_count(), 1);
    let xt = gpu
        .create_tensor(TensorDescriptor::new(dt, shape.clone()).writable())
        .unwrap();
    let yt = gpu
        .create_tensor(TensorDescriptor::new(dt, vec![n, 1, 1, c]).readable())
        .unwrap();
    for round in 0..4 {
        // Each round's means differ: a dirty sum from the round before shows.
        let lo = round as f32 - 1.5;
        let x = ops::uniform(&mut rng, n * c * h * w, lo, lo + 2.0);
        let input = floats(dt, &shape, &x);
        gpu.write_tensor(&xt, &input.bytes).unwrap();
        if round == 2 {
            graph.profile(gpu, &[("x", &xt)], &[("y", &yt)]).unwrap();
        } else {
            gpu.dispatch(&graph, &[("x", &xt)], &[("y", &yt)]).unwrap();
        }
        let got = ops::decode(dt, &gpu.read_tensor_blocking(&yt).unwrap());
        let want = ops::run(cpu, &build, &[input]).unwrap().outputs.remove(0);
        ops::assert_close(
            &format!("round {round}"),
            dt,
            &got,
            &want.values,
            ops::tolerance(dt),
        );
    }
}
