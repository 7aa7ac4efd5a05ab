//! Element-wise math (abs .. softplus, pow, int32 arithmetic), comparisons,
//! logicalNot, where and identity, and the resample2d / pool2d options of
//! issue 15 (nearest rounding, the ONNX coordinate transforms,
//! count_include_pad): the GPU context against the CPU reference on seeded
//! random inputs with odd shapes and broadcasting, plus hand-computed values
//! (or onnxruntime 1.32's, where said) on both contexts, edge cases included.
//! Graphs batch several ops each, to keep lavapipe's time small.

use wgnn::ml::{
    CoordinateTransform, DataType, GraphBuilder, InputLayout, InterpolationMode, NearestRounding,
    Operand, OperandDescriptor, Pool2dOptions, Resample2dOptions, RoundingType,
};

use crate::common::ops::{f32s, i32s, random, rng, run, In, Pair};

const FLOAT_TYPES: [DataType; 2] = [DataType::Float32, DataType::Float16];

fn u8s(shape: &[usize], v: &[u8]) -> In {
    assert_eq!(shape.iter().product::<usize>(), v.len());
    In {
        dt: DataType::Uint8,
        shape: shape.to_vec(),
        bytes: v.to_vec(),
    }
}

type Outs = wgnn::Result<Vec<Operand>>;

// ---------------------------------------------------------------- unary

/// Every unary function of one input, then log and sqrt of a second,
/// positive one.
fn unary_graph(g: &GraphBuilder, x: &[Operand]) -> Outs {
    let (v, p) = (&x[0], &x[1]);
    Ok(vec![
        g.abs(v)?,
        g.neg(v)?,
        g.exp(v)?,
        g.log(v)?,
        g.sqrt(v)?,
        g.reciprocal(v)?,
        g.erf(v)?,
        g.elu(v, 0.7)?,
        g.softplus(v)?,
        g.cos(v)?,
        g.sin(v)?,
        g.ceil(v)?,
        g.floor(v)?,
        g.log(p)?,
        g.sqrt(p)?,
        g.reciprocal(p)?,
    ])
}

#[test]
fn unary_functions_match_cpu() {
    let p = Pair::new();
    let mut r = rng(1501);
    // float16's range ends at 65504: e^10 stays inside it. float32 reaches
    // softplus's x > 20 branch. log and sqrt of the negative half are NaN on
    // both contexts.
    for (dt, bound) in [(DataType::Float32, 25.0), (DataType::Float16, 10.0)] {
        let shape = [3, 5, 7];
        let v = random(&mut r, dt, &shape, -bound, bound);
        let positive = random(&mut r, dt, &shape, 0.001, 40.0);
        p.check(&format!("unary {dt}"), &unary_graph, &[v, positive]);
    }
    // Near 0, where erf, elu and softplus bend.
    let v = random(&mut r, DataType::Float32, &[129], -2.0, 2.0);
    let positive = random(&mut r, DataType::Float32, &[129], 1e-6, 1.0);
    p.check("unary near 0", &unary_graph, &[v, positive]);
}

#[test]
fn unary_known_values_and_edges() {
    let p = Pair::new();
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let v = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -1.0,
        -0.0,
        0.0,
        0.5,
        2.0,
    ];
    let e = std::f64::consts::E;
    let ln = |x: f64| x.ln();
    let softplus = |x: f64| (1.0 + x.exp()).ln();
    // erf from the usual tables: erf(1) = 0.8427007929, erf(0.5) =
    // 0.5204998778, erf(2) = 0.9953222650.
    let want: [&[f64]; 9] = [
        &[nan, inf, inf, 1.0, 0.0, 0.0, 0.5, 2.0],
        &[nan, -inf, inf, 1.0, 0.0, -0.0, -0.5, -2.0],
        &[nan, inf, 0.0, 1.0 / e, 1.0, 1.0, e.sqrt(), e * e],
        &[nan, inf, nan, nan, -inf, -inf, ln(0.5), ln(2.0)],
        &[nan, inf, nan, nan, 0.0, 0.0, 0.5f64.sqrt(), 2f64.sqrt()],
        &[nan, 0.0, -0.0, -1.0, -inf, inf, 2.0, 0.5],
        &[
            nan,
            1.0,
            -1.0,
            -0.842_700_792_9,
            0.0,
            0.0,
            0.520_499_877_8,
            0.995_322_265_0,
        ],
        &[nan, inf, -0.7, 0.7 * (1.0 / e - 1.0), 0.0, 0.0, 0.5, 2.0],
        &[
            nan,
            inf,
            0.0,
            softplus(-1.0),
            softplus(0.0),
            softplus(0.0),
            softplus(0.5),
            softplus(2.0),
        ],
    ];
    p.known(
        "unary functions at NaN, ±inf, ±0 and a few values",
        &|g, x| Ok(unary_graph(g, &[x[0].clone(), x[0].clone()])?[..9].to_vec()),
        &[f32s(&[8], &v)],
        &want,
    );
    // softplus past 20 is x itself; far below 0 it is e^x, not 0 (seen
    // through log, since e^-80 is below any absolute tolerance).
    p.known(
        "softplus tails",
        &|g, x| Ok(vec![g.softplus(&x[0])?, g.log(&g.softplus(&x[1])?)?]),
        &[
            f32s(&[2], &[30.0, 88.0]),
            f32s(&[3], &[-20.0, -30.0, -80.0]),
        ],
        &[&[30.0, 88.0], &[-20.0, -30.0, -80.0]],
    );
}

#[test]
fn int32_abs_neg_and_arithmetic() {
    let p = Pair::new();
    let mut r = rng(1502);
    let a = random(&mut r, DataType::Int32, &[3, 1, 5], -50.0, 50.0);
    // Negative divisors and zeros among them.
    let b = random(&mut r, DataType::Int32, &[4, 1], -9.0, 9.0);
    p.check(
        "int32 arithmetic with broadcasting",
        &|g, x| {
            Ok(vec![
                g.add(&x[0], &x[1])?,
                g.sub(&x[0], &x[1])?,
                g.mul(&x[0], &x[1])?,
                g.div(&x[0], &x[1])?,
                g.max(&x[0], &x[1])?,
                g.min(&x[0], &x[1])?,
                g.abs(&x[0])?,
                g.neg(&x[1])?,
            ])
        },
        &[a, b],
    );
    let min = i32::MIN;
    p.known(
        "int32 division truncates toward zero; abs and neg wrap at i32::MIN",
        &|g, x| Ok(vec![g.div(&x[0], &x[1])?, g.abs(&x[0])?, g.neg(&x[0])?]),
        &[
            i32s(&[7], &[7, -7, 7, -7, 5, min, -1]),
            i32s(&[7], &[2, 2, -2, -2, 0, -1, 3]),
        ],
        &[
            &[3.0, -3.0, -3.0, 3.0, 0.0, min as f64, 0.0],
            &[7.0, 7.0, 7.0, 7.0, 5.0, min as f64, 1.0],
            &[-7.0, 7.0, -7.0, 7.0, -5.0, min as f64, 1.0],
        ],
    );
}

#[test]
fn unary_ops_check_their_types() {
    let b = GraphBuilder::shapes_only();
    let i = b
        .input("i", OperandDescriptor::new(DataType::Int32, [2]))
        .unwrap();
    let u = b
        .input("u", OperandDescriptor::new(DataType::Uint8, [2]))
        .unwrap();
    let f = b.input("f", OperandDescriptor::f32([2])).unwrap();
    assert_eq!(b.abs(&i).unwrap().data_type(), DataType::Int32);
    for (e, want) in [
        (
            b.exp(&i).unwrap_err(),
            "exp: needs a float32 or float16 operand",
        ),
        (
            b.abs(&u).unwrap_err(),
            "abs: needs a float32, float16 or int32",
        ),
        (
            b.pow(&i, &i).unwrap_err(),
            "pow: needs a float32 or float16",
        ),
        (b.pow(&f, &i).unwrap_err(), "pow: data types differ"),
        (
            b.logical_not(&f).unwrap_err(),
            "logicalNot: needs a uint8 operand",
        ),
        (
            b.equal(&u, &u).unwrap_err(),
            "equal: uint8 operands are not supported",
        ),
        (
            b.where_(&f, &f, &f).unwrap_err(),
            "where: the condition must be uint8",
        ),
        (
            b.where_(&u, &f, &i).unwrap_err(),
            "where: data types differ",
        ),
    ] {
        assert!(e.to_string().contains(want), "{e}");
    }
    let c = b
        .input("c", OperandDescriptor::new(DataType::Uint8, [3, 1]))
        .unwrap();
    let t = b.input("t", OperandDescriptor::f32([4])).unwrap();
    let e = b.where_(&c, &t, &f).unwrap_err().to_string();
    assert!(
        e.contains("where: shapes [3, 1] (condition), [4] and [2] do not broadcast"),
        "{e}"
    );
}

// ---------------------------------------------------------------- pow

#[test]
fn pow_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(1503);
    for dt in FLOAT_TYPES {
        // Positive bases, any exponent, broadcast.
        let base = random(&mut r, dt, &[2, 3, 5], 0.05, 4.0);
        let exponent = random(&mut r, dt, &[3, 1], -3.0, 3.0);
        p.check(
            &format!("pow {dt}"),
            &|g, x| Ok(vec![g.pow(&x[0], &x[1])?]),
            &[base, exponent],
        );
    }
    // Negative bases with integral exponents: the signed result. Half the
    // exponents are not integral: NaN on both contexts.
    let base = random(&mut r, DataType::Float32, &[1, 9], -4.0, 4.0);
    let ints = random(&mut r, DataType::Int32, &[6, 1], -4.0, 4.0);
    let exponents: Vec<f32> = bytemuck::cast_slice::<u8, i32>(&ints.bytes)
        .iter()
        .enumerate()
        .map(|(k, &e)| e as f32 + if k % 2 == 0 { 0.0 } else { 0.5 })
        .collect();
    p.check(
        "pow of negative bases",
        &|g, x| Ok(vec![g.pow(&x[0], &x[1])?]),
        &[base, f32s(&[6, 1], &exponents)],
    );
}

#[test]
fn pow_known_values() {
    let p = Pair::new();
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    // C's powf: the sign of a negative base survives odd integral exponents,
    // other exponents of a negative base give NaN; x^0 and 1^y are 1 even
    // for NaN; 0 to a negative power is inf, -0 to an odd one -inf.
    p.known(
        "pow edge cases",
        &|g, x| Ok(vec![g.pow(&x[0], &x[1])?]),
        &[
            f32s(
                &[12],
                &[-2., -2., -2., -8., 0., 0., -0., 4., nan, 1., -1., 3.],
            ),
            f32s(
                &[12],
                &[3., 2., 0.5, 1. / 3., -1., 2., -1., 0.5, 0., nan, inf, -2.],
            ),
        ],
        &[&[
            -8.,
            4.,
            f64::NAN,
            f64::NAN,
            f64::INFINITY,
            0.,
            f64::NEG_INFINITY,
            2.,
            1.,
            1.,
            1.,
            1. / 9.,
        ]],
    );
}

// ---------------------------------------------------------------- comparisons

/// The five comparisons of x0 with x1, then logicalNot of the first.
fn comparisons(g: &GraphBuilder, x: &[Operand]) -> Outs {
    let (a, b) = (&x[0], &x[1]);
    let equal = g.equal(a, b)?;
    Ok(vec![
        g.logical_not(&equal)?,
        equal,
        g.greater(a, b)?,
        g.greater_or_equal(a, b)?,
        g.lesser(a, b)?,
        g.lesser_or_equal(a, b)?,
    ])
}

#[test]
fn comparisons_match_cpu() {
    let p = Pair::new();
    let mut r = rng(1504);
    // Few distinct values, so equality happens; 7 x 5 x 3 = 105 outputs end
    // in a partly filled uint8 word.
    for dt in [DataType::Float32, DataType::Float16, DataType::Int32] {
        let a = random(&mut r, dt, &[7, 5, 3], -3.0, 3.0);
        let b = random(&mut r, dt, &[5, 1], -3.0, 3.0);
        let (a, b) = match dt {
            DataType::Int32 => (a, b),
            _ => (round(&a), round(&b)),
        };
        p.check(&format!("comparisons {dt}"), &comparisons, &[a, b]);
    }
}

/// Float values rounded to integers (so that random pairs are often equal).
fn round(x: &In) -> In {
    let v: Vec<f32> = crate::common::ops::decode(x.dt, &x.bytes)
        .iter()
        .map(|v| v.round() as f32)
        .collect();
    crate::common::ops::floats(x.dt, &x.shape, &v)
}

#[test]
fn comparison_known_values() {
    let p = Pair::new();
    let nan = f32::NAN;
    // NaN compares false with everything, itself included.
    p.known(
        "comparisons with NaN and infinities",
        &comparisons,
        &[
            f32s(&[6], &[1., 2., nan, 3., f32::INFINITY, -0.]),
            f32s(&[6], &[1., 1., nan, 4., f32::INFINITY, 0.]),
        ],
        &[
            &[0., 1., 1., 1., 0., 0.],
            &[1., 0., 0., 0., 1., 1.],
            &[0., 1., 0., 0., 0., 0.],
            &[1., 1., 0., 0., 1., 1.],
            &[0., 0., 0., 1., 0., 0.],
            &[1., 0., 0., 1., 1., 1.],
        ],
    );
    // All equal, across word boundaries (9 values: three words).
    let same = [-5, 0, 7, i32::MAX, i32::MIN, 1, 1, 2, 3];
    let ones = [1.0; 9];
    let zeros = [0.0; 9];
    p.known(
        "all-equal int32 comparisons",
        &comparisons,
        &[i32s(&[9], &same), i32s(&[9], &same)],
        &[&zeros, &ones, &zeros, &ones, &zeros, &ones],
    );
}

// ---------------------------------------------------------------- where

#[test]
fn where_and_identity_match_cpu() {
    let p = Pair::new();
    let mut r = rng(1505);
    for dt in [
        DataType::Float32,
        DataType::Float16,
        DataType::Int32,
        DataType::Uint8,
    ] {
        // Conditions of 0 and several non-zero bytes.
        let cond: Vec<u8> = (0..6)
            .map(|k| [0, 1, 7, 255, 0][(k * 7 + dt as usize) % 5])
            .collect();
        // Three ways: [2, 3, 1], [3, 5] and [2, 1, 5] make [2, 3, 5].
        let t = random(&mut r, dt, &[3, 5], -9.0, 9.0);
        let f = random(&mut r, dt, &[2, 1, 5], -9.0, 9.0);
        p.check(
            &format!("where, identity {dt}"),
            &|g, x| Ok(vec![g.where_(&x[0], &x[1], &x[2])?, g.identity(&x[1])?]),
            &[u8s(&[2, 3, 1], &cond), t, f],
        );
    }
}

#[test]
fn where_known_values() {
    let p = Pair::new();
    p.known(
        "where float32, condition broadcast along rows",
        &|g, x| Ok(vec![g.where_(&x[0], &x[1], &x[2])?]),
        &[
            u8s(&[2, 1], &[0, 9]),
            f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]),
            f32s(&[3], &[10., 20., 30.]),
        ],
        &[&[10., 20., 30., 4., 5., 6.]],
    );
    // uint8 values, 5 outputs: two words, the last one partly used.
    p.known(
        "where uint8 values",
        &|g, x| Ok(vec![g.where_(&x[0], &x[1], &x[2])?, g.identity(&x[0])?]),
        &[
            u8s(&[5], &[1, 0, 1, 0, 200]),
            u8s(&[5], &[11, 12, 13, 14, 15]),
            u8s(&[1], &[250]),
        ],
        &[&[11., 250., 13., 250., 15.], &[1., 0., 1., 0., 200.]],
    );
    // A graph output equal to an input: identity copies it.
    p.known(
        "identity int32",
        &|g, x| Ok(vec![g.identity(&x[0])?]),
        &[i32s(&[3], &[-1, 0, i32::MAX])],
        &[&[-1., 0., i32::MAX as f64]],
    );
}

// ---------------------------------------------------------------- fusion

#[test]
fn new_activations_fuse_into_conv_and_match_cpu() {
    let p = Pair::new();
    let mut r = rng(1506);
    let x = random(&mut r, DataType::Float32, &[1, 3, 7, 6], -1.0, 1.0);
    let filter = random(&mut r, DataType::Float32, &[4, 3, 3, 3], -0.5, 0.5);
    let filter: Vec<f32> = bytemuck::cast_slice(&filter.bytes).to_vec();
    let conv = |g: &GraphBuilder, x: &Operand| -> wgnn::Result<Operand> {
        let f = g.constant_f32(&[4, 3, 3, 3], &filter)?;
        g.conv2d(x, &f, None, wgnn::ml::Conv2dOptions::new())
    };
    let erf = |g: &GraphBuilder, x: &[Operand]| -> Outs { Ok(vec![g.erf(&conv(g, &x[0])?)?]) };
    let exp_chain = |g: &GraphBuilder, x: &[Operand]| -> Outs {
        let y = g.elu(&conv(g, &x[0])?, 0.3)?;
        Ok(vec![g.softplus(&g.exp(&y)?)?])
    };
    for (what, build) in [
        (
            "conv2d + erf",
            &erf as &dyn Fn(&GraphBuilder, &[Operand]) -> Outs,
        ),
        ("conv2d + elu + exp + softplus", &exp_chain),
    ] {
        for (name, ctx) in p.both() {
            let ran = run(ctx, build, std::slice::from_ref(&x)).unwrap();
            assert_eq!(ran.nodes, 1, "{what} on {name}: the activations fuse");
        }
        p.check(what, build, std::slice::from_ref(&x));
    }
}

// ---------------------------------------------------------------- resample

fn nearest(
    t: CoordinateTransform,
    r: NearestRounding,
    scale: f32,
    sizes: Option<[usize; 2]>,
) -> Resample2dOptions {
    Resample2dOptions {
        mode: InterpolationMode::NearestNeighbor,
        scales: [1.0, scale],
        sizes,
        coordinate_transform: t,
        nearest_rounding: r,
        ..Default::default()
    }
}

#[test]
fn resample2d_roundings_and_transforms_known_values() {
    use CoordinateTransform::*;
    use NearestRounding::*;
    let p = Pair::new();
    let x = f32s(&[1, 1, 1, 4], &[10., 20., 30., 40.]);
    // 4 -> 6 by scale 1.5, and 4 -> 1 by size, as onnxruntime 1.32's Resize
    // gives them (nearest_mode x coordinate_transformation_mode). Sources at
    // scale 1.5: half-pixel -1/6, 0.5, 7/6, 11/6, 2.5, 19/6; tf_half_pixel_
    // for_nn 1/3, 1, 5/3, 7/3, 3, 11/3; align corners 0, 0.6, 1.2, 1.8, 2.4,
    // 3; asymmetric 0, 2/3, 4/3, 2, 8/3, 10/3.
    let cases: [(CoordinateTransform, NearestRounding, [f64; 6], f64); 20] = [
        (
            HalfPixel,
            RoundPreferFloor,
            [10., 10., 20., 30., 30., 40.],
            20.,
        ),
        (
            HalfPixel,
            RoundPreferCeil,
            [10., 20., 20., 30., 40., 40.],
            30.,
        ),
        (HalfPixel, Floor, [10., 10., 20., 20., 30., 40.], 20.),
        (HalfPixel, Ceil, [10., 20., 30., 30., 40., 40.], 30.),
        (
            PytorchHalfPixel,
            RoundPreferFloor,
            [10., 10., 20., 30., 30., 40.],
            10.,
        ),
        (
            PytorchHalfPixel,
            RoundPreferCeil,
            [10., 20., 20., 30., 40., 40.],
            10.,
        ),
        (PytorchHalfPixel, Floor, [10., 10., 20., 20., 30., 40.], 10.),
        (PytorchHalfPixel, Ceil, [10., 20., 30., 30., 40., 40.], 10.),
        (
            TfHalfPixelForNn,
            RoundPreferFloor,
            [10., 20., 30., 30., 40., 40.],
            30.,
        ),
        (
            TfHalfPixelForNn,
            RoundPreferCeil,
            [10., 20., 30., 30., 40., 40.],
            30.,
        ),
        (TfHalfPixelForNn, Floor, [10., 20., 20., 30., 40., 40.], 30.),
        (TfHalfPixelForNn, Ceil, [20., 20., 30., 40., 40., 40.], 30.),
        (
            AlignCorners,
            RoundPreferFloor,
            [10., 20., 20., 30., 30., 40.],
            10.,
        ),
        (
            AlignCorners,
            RoundPreferCeil,
            [10., 20., 20., 30., 30., 40.],
            10.,
        ),
        (AlignCorners, Floor, [10., 10., 20., 20., 30., 40.], 10.),
        (AlignCorners, Ceil, [10., 20., 30., 30., 40., 40.], 10.),
        (
            Asymmetric,
            RoundPreferFloor,
            [10., 20., 20., 30., 40., 40.],
            10.,
        ),
        (
            Asymmetric,
            RoundPreferCeil,
            [10., 20., 20., 30., 40., 40.],
            10.,
        ),
        (Asymmetric, Floor, [10., 10., 20., 30., 30., 40.], 10.),
        (Asymmetric, Ceil, [10., 20., 30., 30., 40., 40.], 10.),
    ];
    // One graph per transform: its four roundings, by scale and by size.
    for t in [
        HalfPixel,
        PytorchHalfPixel,
        TfHalfPixelForNn,
        AlignCorners,
        Asymmetric,
    ] {
        let mine: Vec<_> = cases.iter().filter(|c| c.0 == t).collect();
        let mut want: Vec<Vec<f64>> = mine.iter().map(|c| c.2.to_vec()).collect();
        want.extend(mine.iter().map(|c| vec![c.3]));
        let want: Vec<&[f64]> = want.iter().map(Vec::as_slice).collect();
        p.known(
            &format!("resample2d nearest {t:?}"),
            &|g, x| {
                let mut outs = Vec::new();
                for c in &mine {
                    outs.push(g.resample2d(&x[0], nearest(t, c.1, 1.5, None))?);
                }
                for c in &mine {
                    outs.push(g.resample2d(&x[0], nearest(t, c.1, 1.0, Some([1, 1])))?);
                }
                Ok(outs)
            },
            std::slice::from_ref(&x),
            &want,
        );
    }
    // Linear with the two new transforms (onnxruntime 1.32 again): the scale
    // as given (1.5), not 6 / 4.
    let linear = |t| Resample2dOptions {
        mode: InterpolationMode::Linear,
        scales: [1.0, 1.5],
        coordinate_transform: t,
        ..Default::default()
    };
    p.known(
        "resample2d linear pytorch_half_pixel, tf_half_pixel_for_nn",
        &|g, x| {
            Ok(vec![
                g.resample2d(&x[0], linear(PytorchHalfPixel))?,
                g.resample2d(&x[0], linear(TfHalfPixelForNn))?,
            ])
        },
        std::slice::from_ref(&x),
        &[
            &[10., 15., 65. / 3., 85. / 3., 35., 40.],
            &[40. / 3., 20., 80. / 3., 100. / 3., 40., 40.],
        ],
    );
}

#[test]
fn resample2d_new_options_match_cpu() {
    use CoordinateTransform::*;
    let p = Pair::new();
    let mut r = rng(1507);
    let x = random(&mut r, DataType::Float32, &[1, 7, 5, 3], -1.0, 1.0);
    for t in [PytorchHalfPixel, TfHalfPixelForNn] {
        p.check(
            &format!("resample2d {t:?}"),
            &|g, x| {
                let o = |mode, r, scales, sizes| Resample2dOptions {
                    mode,
                    scales,
                    sizes,
                    axes: [1, 2],
                    coordinate_transform: t,
                    nearest_rounding: r,
                };
                Ok(vec![
                    g.resample2d(
                        &x[0],
                        o(
                            InterpolationMode::Linear,
                            NearestRounding::Floor,
                            [1.7, 2.5],
                            None,
                        ),
                    )?,
                    g.resample2d(
                        &x[0],
                        o(
                            InterpolationMode::NearestNeighbor,
                            NearestRounding::Ceil,
                            [1.0, 1.0],
                            Some([3, 11]),
                        ),
                    )?,
                    g.resample2d(
                        &x[0],
                        o(
                            InterpolationMode::NearestNeighbor,
                            NearestRounding::RoundPreferFloor,
                            [0.5, 3.0],
                            None,
                        ),
                    )?,
                ])
            },
            std::slice::from_ref(&x),
        );
    }
}

// ---------------------------------------------------------------- pool

fn average(
    window: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    padding: [usize; 4],
    include: bool,
) -> Pool2dOptions {
    Pool2dOptions {
        window_dimensions: Some(window),
        padding,
        strides,
        dilations,
        rounding_type: RoundingType::Ceil,
        count_include_pad: include,
        ..Pool2dOptions::new()
    }
}

#[test]
fn average_pool_count_include_pad_known_values() {
    let p = Pair::new();
    // Values as onnxruntime 1.32's AveragePool (ceil_mode 1) gives them; a
    // window that would start in the end padding is dropped, one that runs
    // past it is clipped, and the divisor counts the taps left inside input
    // + padding.
    let row6 = f32s(&[1, 1, 1, 6], &[1., 2., 3., 4., 5., 6.]);
    // (what, window width, stride, [start, end] padding, averages without
    // and with the padding counted)
    type Case<'a> = (&'a str, usize, usize, [usize; 2], [&'a [f64]; 2]);
    let cases: [Case; 4] = [
        (
            "k3 s2, the last window clipped at the input's end",
            3,
            2,
            [0, 0],
            [&[2., 4., 5.5], &[2., 4., 5.5]],
        ),
        (
            "k3 s2, start padding 1",
            3,
            2,
            [1, 0],
            [&[1.5, 3., 5.], &[1., 3., 5.]],
        ),
        (
            "k4 s3, end padding 1",
            4,
            3,
            [0, 1],
            [&[2.5, 5.], &[2.5, 3.75]],
        ),
        (
            "k2 s3, end padding 1: a third window would start in it",
            2,
            3,
            [0, 1],
            [&[1.5, 4.5], &[1.5, 4.5]],
        ),
    ];
    for (what, k, stride, [p0, p1], want) in cases {
        let o = |include| average([1, k], [1, stride], [1, 1], [0, 0, p0, p1], include);
        p.known(
            &format!("averagePool2d ceil {what}"),
            &|g, x| {
                Ok(vec![
                    g.average_pool2d(&x[0], o(false))?,
                    g.average_pool2d(&x[0], o(true))?,
                ])
            },
            std::slice::from_ref(&row6),
            &want,
        );
    }
    // Dilated windows: taps past input + padding are not counted.
    p.known(
        "averagePool2d ceil, dilated, count_include_pad",
        &|g, x| {
            Ok(vec![
                g.average_pool2d(&x[0], average([1, 2], [1, 3], [1, 3], [0, 0, 0, 1], true))?,
                g.average_pool2d(&x[0], average([1, 3], [1, 3], [1, 2], [0, 0, 0, 1], true))?,
            ])
        },
        &[f32s(&[1, 1, 1, 7], &[1., 2., 3., 4., 5., 6., 7.])],
        &[&[2.5, 5.5, 7.], &[3., 10. / 3.]],
    );
    // 2-D, padding 1 all round, 5 x 5 of 1..25.
    let x: Vec<f32> = (1..=25).map(|v| v as f32).collect();
    p.known(
        "averagePool2d 3x3 s2 padding 1, count_include_pad",
        &|g, x| {
            Ok(vec![g.average_pool2d(
                &x[0],
                average([3, 3], [2, 2], [1, 1], [1; 4], true),
            )?])
        },
        &[f32s(&[1, 1, 5, 5], &x)],
        &[&[
            16. / 9.,
            33. / 9.,
            28. / 9.,
            69. / 9.,
            13.,
            87. / 9.,
            76. / 9.,
            123. / 9.,
            88. / 9.,
        ]],
    );
}

#[test]
fn average_pool_count_include_pad_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(1508);
    for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
        let shape = match layout {
            InputLayout::Nchw => [2, 3, 9, 7],
            InputLayout::Nhwc => [2, 9, 7, 3],
        };
        for dt in FLOAT_TYPES {
            let x = random(&mut r, dt, &shape, -1.0, 1.0);
            let o = |rounding_type, dilations| Pool2dOptions {
                window_dimensions: Some([3, 2]),
                padding: [1, 2, 0, 1],
                strides: [2, 3],
                dilations,
                layout,
                rounding_type,
                count_include_pad: true,
                ..Pool2dOptions::new()
            };
            p.check(
                &format!("averagePool2d count_include_pad {layout:?} {dt}"),
                &|g, x| {
                    Ok(vec![
                        g.average_pool2d(&x[0], o(RoundingType::Ceil, [1, 1]))?,
                        g.average_pool2d(&x[0], o(RoundingType::Floor, [1, 1]))?,
                        g.average_pool2d(&x[0], o(RoundingType::Ceil, [2, 2]))?,
                    ])
                },
                &[x],
            );
        }
    }
}
