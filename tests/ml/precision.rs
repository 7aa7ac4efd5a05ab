//! `Precision::F16` (`GraphBuilder::build_with`): a float32 graph computed in
//! float16 on the GPU against the same graph in float32 on the CPU context,
//! for every op kind the bundled models use and the ones that keep float32;
//! the caller's tensors stay float32.

use wgnn::ml::{
    BuildOptions, Conv2dFilterLayout, Conv2dOptions, ConvTranspose2dOptions, DataType, GemmOptions,
    GraphBuilder, InputLayout, InterpolationMode, Operand, OperandDescriptor, PaddingMode,
    Pool2dOptions, Precision, Resample2dOptions,
};

use crate::common::ops::{self, random, rng, run_with, Build, In, Pair};

const F16: BuildOptions = BuildOptions {
    precision: Precision::F16,
};
const F32: BuildOptions = BuildOptions {
    precision: Precision::F32,
};

/// float16 between nodes keeps about 3 decimal digits; a few nodes in a
/// row stay within 1% of the output's largest value.
const TOLERANCE: f64 = 1e-2;

/// The graph in float16 on the GPU and on the CPU context, against float32
/// on the CPU: the same output types (float32 stays float32), float outputs
/// within [`TOLERANCE`] of the largest float32 value, integer ones equal.
fn check(what: &str, build: &Build<'_>, inputs: &[In]) {
    let pair = Pair::new();
    let want =
        run_with(&pair.cpu, build, inputs, F32).unwrap_or_else(|e| panic!("{what} f32: {e}"));
    for (name, ctx) in pair.both() {
        let got = run_with(ctx, build, inputs, F16)
            .unwrap_or_else(|e| panic!("{what} f16 on {name}: {e}"));
        assert_eq!(got.outputs.len(), want.outputs.len());
        for (k, (g, w)) in got.outputs.iter().zip(&want.outputs).enumerate() {
            assert_eq!(g.dt, w.dt, "{what} output {k} on {name}: data type");
            let scale = w.values.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            let tol = if g.dt.is_float() {
                TOLERANCE * scale
            } else {
                0.0
            };
            for (i, (a, b)) in g.values.iter().zip(&w.values).enumerate() {
                assert!(
                    (a - b).abs() <= tol,
                    "{what} output {k} on {name} in f16: element {i}: got {a}, f32 gives {b} \
                     (tolerance {tol})"
                );
            }
        }
    }
}

fn x(seed: u64, shape: &[usize]) -> In {
    random(&mut rng(seed), DataType::Float32, shape, -1.0, 1.0)
}

fn weights(b: &GraphBuilder, seed: u64, shape: &[usize], scale: f32) -> Operand {
    let n = shape.iter().product();
    let v: Vec<f32> = ops::uniform(&mut rng(seed), n, -scale, scale);
    b.constant_f32(shape, &v).unwrap()
}

#[test]
fn convolutions_as_tflite_writes_them() {
    // NHWC input, OHWI filter, bias, hard-swish: selfie's blocks; then a
    // depthwise stride-2 conv with relu6 and a residual add.
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let mut o = Conv2dOptions::new();
        o.input_layout = InputLayout::Nhwc;
        o.filter_layout = Conv2dFilterLayout::Ohwi;
        o.padding = [1, 1, 1, 1];
        let w = weights(b, 1, &[6, 3, 3, 5], 0.3);
        let bias = weights(b, 2, &[6], 0.5);
        let c = b.hard_swish(&b.conv2d(&x[0], &w, Some(&bias), o.clone())?)?;
        let mut d = o.clone();
        d.groups = 6;
        d.strides = [2, 2];
        d.filter_layout = Conv2dFilterLayout::Ihwo;
        let dw = weights(b, 3, &[1, 3, 3, 6], 0.5);
        let e = b.clamp(&b.conv2d(&c, &dw, None, d)?, 0.0, 6.0)?;
        let mut p = o;
        p.padding = [0; 4];
        let pw = weights(b, 4, &[6, 1, 1, 6], 0.5);
        let f = b.conv2d(&e, &pw, None, p)?;
        Ok(vec![b.add(&f, &e)?, c])
    };
    check("conv2d chain", &build, &[x(10, &[1, 9, 7, 5])]);
}

#[test]
fn transposed_conv_pools_and_resampling() {
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let mut t = ConvTranspose2dOptions::new();
        t.strides = [2, 2];
        let w = weights(b, 5, &[3, 2, 2, 2], 0.5);
        let bias = weights(b, 6, &[2], 0.5);
        let up = b.conv_transpose2d(&x[0], &w, Some(&bias), t)?;
        let mut avg = Pool2dOptions::new();
        avg.window_dimensions = Some([3, 3]);
        let pooled = b.average_pool2d(&up, avg.clone())?;
        let maxed = b.max_pool2d(&up, avg)?;
        let global = b.average_pool2d(&x[0], Pool2dOptions::new())?;
        let linear = b.resample2d(
            &x[0],
            Resample2dOptions {
                mode: InterpolationMode::Linear,
                scales: [2.0, 2.0],
                ..Default::default()
            },
        )?;
        let nearest = b.resample2d(
            &x[0],
            Resample2dOptions {
                scales: [2.0, 3.0],
                ..Default::default()
            },
        )?;
        Ok(vec![pooled, maxed, global, linear, nearest])
    };
    check("spatial", &build, &[x(11, &[1, 3, 5, 7])]);
}

#[test]
fn elementwise_and_activations() {
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let (a, c) = (&x[0], &x[1]);
        let s = b.sigmoid(&b.mul(a, c)?)?;
        let t = b.tanh(&b.sub(a, c)?)?;
        let l = b.leaky_relu(&b.add(a, c)?, 0.2)?;
        let slope = weights(b, 7, &[1, 1, 5], 0.5);
        let p = b.prelu(a, &slope)?;
        let d = b.div(a, &b.add(&b.abs(c)?, &b.constant_f32(&[1], &[1.0])?)?)?;
        let m = b.max(&b.min(a, c)?, &b.exp(&b.neg(c)?)?)?;
        Ok(vec![s, t, l, p, d, m])
    };
    check("elementwise", &build, &[x(12, &[2, 3, 5]), x(13, &[3, 5])]);
}

#[test]
fn data_movement_as_depth_to_space() {
    // ESRGAN-slim's pixel shuffle (reshape, transpose, reshape) and the
    // other copies.
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let r = b.reshape(&x[0], &[1, 3, 5, 2, 2, 3])?;
        let t = b.transpose(&r, Some(&[0, 1, 3, 2, 4, 5]))?;
        let s = b.reshape(&t, &[1, 6, 10, 3])?;
        let cat = b.concat(&[&s, &b.relu(&s)?], 3)?;
        let sl = b.slice(&cat, &[0, 1, 2, 1], &[1, 4, 4, 4], Some(&[1, 1, 2, 1]))?;
        let pad = b.pad(
            &sl,
            &[0, 1, 0, 2],
            &[0, 2, 1, 0],
            PaddingMode::Reflection,
            0.0,
        )?;
        let parts = b.split(&x[0], 2, 3)?;
        Ok(vec![pad, parts[0].clone(), parts[1].clone()])
    };
    check("data movement", &build, &[x(14, &[1, 3, 5, 12])]);
}

#[test]
fn matrix_products_softmax_and_normalizations() {
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let w = weights(b, 8, &[7, 9], 0.4);
        let m = b.matmul(&x[0], &w)?;
        let c = weights(b, 9, &[9], 0.4);
        let g = b.gemm(&x[0], &w, Some(&c), GemmOptions::default())?;
        let s = b.softmax(&g, 1)?;
        let scale = weights(b, 10, &[9], 1.0);
        let ln = b.layer_normalization(&m, Some(&scale), None, &[1], 1e-5)?;
        let img = b.reshape(&m, &[1, 3, 3, 5])?;
        let inorm = b.instance_normalization(&img, None, None, 1e-5, InputLayout::Nchw)?;
        let mean = b.reduce_mean(&img, Some(&[2, 3]), true)?;
        Ok(vec![m, s, ln, inorm, mean])
    };
    check("products", &build, &[x(15, &[5, 7])]);
}

#[test]
fn index_and_range_ops_keep_float32() {
    // argMax, comparisons and sums read float32: the results are exact
    // where f16 would round (ties, sums beyond 65504).
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let big = b.mul(&x[0], &b.constant_f32(&[1], &[3000.0])?)?;
        let sum = b.reduce_sum(&b.abs(&big)?, None, false)?;
        let arg = b.arg_max(&x[0], 1, false, false)?;
        let flag = b.greater(&x[0], &b.constant_f32(&[1], &[0.25])?)?;
        let w = b.where_(&flag, &x[0], &b.neg(&x[0])?)?;
        let idx = b.constant(
            OperandDescriptor::new(DataType::Int32, [3]),
            bytemuck::cast_slice(&[2i32, 0, 1]),
        )?;
        let gathered = b.gather(&x[0], &idx, 0)?;
        let as_float = b.cast(&arg, DataType::Float32)?;
        let to_int = b.cast(&x[0], DataType::Int32)?;
        Ok(vec![sum, arg, w, gathered, as_float, to_int])
    };
    check("kept float32", &build, &[x(16, &[3, 40])]);
}

#[test]
fn float16_graphs_are_left_as_written() {
    // A graph already in float16 has nothing to rewrite: the same outputs
    // with either option.
    let build = |b: &GraphBuilder, x: &[Operand]| Ok(vec![b.sigmoid(&b.add(&x[0], &x[0])?)?]);
    let input = random(&mut rng(17), DataType::Float16, &[4, 6], -2.0, 2.0);
    let pair = Pair::new();
    let a = run_with(&pair.gpu, &build, std::slice::from_ref(&input), F16).unwrap();
    let b = run_with(&pair.gpu, &build, &[input], F32).unwrap();
    assert_eq!(a.nodes, b.nodes);
    assert_eq!(a.outputs[0].dt, DataType::Float16);
    assert_eq!(a.outputs[0].values, b.outputs[0].values);
}
