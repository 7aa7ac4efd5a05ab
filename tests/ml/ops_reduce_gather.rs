//! Reductions, argMin/argMax, gather, expand/tile, the normalizations and
//! logSoftmax on the GPU context against the CPU reference: seeded random
//! inputs of odd shapes (rank 1 to 5, reducing first, middle, last, all and
//! no axes, dimensions kept and dropped), edge cases (0-D, negative and
//! out-of-range indices, ties, NaN, expanding a scalar, tiling by ones,
//! uint8 packed four to a word), hand-computed values on both contexts, and
//! onnxruntime's results for the normalizations on data with large offsets
//! (`tests/data/ops/`).

use wgnn::ml::{DataType, GraphBuilder, InputLayout, Operand, OperandDescriptor};

use crate::common::ops::{f16s, f32s, i32s, random, rng, run, uniform, Build, In, Pair};

type Reduce = fn(&GraphBuilder, &Operand, Option<&[usize]>, bool) -> wgnn::Result<Operand>;

/// Every reduction, with whether it takes int32.
const REDUCTIONS: [(&str, Reduce, bool); 8] = [
    ("reduceMean", |b, x, a, k| b.reduce_mean(x, a, k), false),
    ("reduceSum", |b, x, a, k| b.reduce_sum(x, a, k), true),
    ("reduceMax", |b, x, a, k| b.reduce_max(x, a, k), true),
    ("reduceMin", |b, x, a, k| b.reduce_min(x, a, k), true),
    (
        "reduceProduct",
        |b, x, a, k| b.reduce_product(x, a, k),
        true,
    ),
    (
        "reduceSumSquare",
        |b, x, a, k| b.reduce_sum_square(x, a, k),
        false,
    ),
    ("reduceL2", |b, x, a, k| b.reduce_l2(x, a, k), false),
    (
        "reduceLogSumExp",
        |b, x, a, k| b.reduce_log_sum_exp(x, a, k),
        false,
    ),
];

fn u8s(shape: &[usize], v: &[u8]) -> In {
    assert_eq!(shape.iter().product::<usize>(), v.len());
    In {
        dt: DataType::Uint8,
        shape: shape.to_vec(),
        bytes: v.to_vec(),
    }
}

/// (shape, axes, keep_dimensions): rank 1 to 5; first, middle, last, all,
/// none, gapped; and one reduction longer than a workgroup.
type ReduceCase = (&'static [usize], Option<&'static [usize]>, bool);
const REDUCE_CASES: [ReduceCase; 12] = [
    (&[7], Some(&[0]), false),
    (&[7], Some(&[]), true),
    (&[5, 6], Some(&[0]), true),
    (&[5, 6], Some(&[1]), false),
    (&[3, 4, 5], Some(&[1]), true),
    (&[3, 4, 5], Some(&[0, 2]), false),
    (&[2, 3, 4, 5], Some(&[0]), false),
    (&[2, 3, 4, 5], Some(&[1, 2]), true),
    (&[2, 3, 4, 5], Some(&[3]), false),
    (&[2, 3, 1, 4, 3], Some(&[0, 3, 4]), true),
    (&[2, 3, 1, 4, 3], None, false),
    (&[1, 19, 23, 3], Some(&[1, 2]), true),
];

#[test]
fn reductions_match_cpu() {
    let p = Pair::new();
    let mut r = rng(150);
    for (shape, axes, keep) in REDUCE_CASES {
        for dt in [DataType::Float32, DataType::Float16, DataType::Int32] {
            // Offset floats so means are not all near zero; products of
            // values near 1 stay in range over hundreds of elements.
            let x = random(&mut r, dt, shape, -0.75, 1.25);
            let near_one = if dt == DataType::Int32 {
                random(&mut r, dt, shape, -3.0, 3.0)
            } else {
                random(&mut r, dt, shape, 0.9, 1.1)
            };
            let build = |b: &GraphBuilder, x: &[Operand]| -> wgnn::Result<Vec<Operand>> {
                REDUCTIONS
                    .iter()
                    .filter(|(_, _, int)| dt != DataType::Int32 || *int)
                    .map(|(name, f, _)| {
                        let input = if *name == "reduceProduct" {
                            &x[1]
                        } else {
                            &x[0]
                        };
                        f(b, input, axes, keep)
                    })
                    .collect()
            };
            p.check(
                &format!("reductions of {dt} {shape:?} over {axes:?} keep {keep}"),
                &build,
                &[x, near_one],
            );
        }
    }
}

#[test]
fn reductions_known_values() {
    let p = Pair::new();
    let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let all = |b: &GraphBuilder, x: &[Operand]| -> wgnn::Result<Vec<Operand>> {
        REDUCTIONS
            .iter()
            .map(|(_, f, _)| f(b, &x[0], Some(&[1]), false))
            .collect()
    };
    let lse = |m: f64| m + (1.0 + (-1f64).exp() + (-2f64).exp()).ln();
    p.known(
        "reductions along axis 1",
        &all,
        std::slice::from_ref(&x),
        &[
            &[2., 5.],
            &[6., 15.],
            &[3., 6.],
            &[1., 4.],
            &[6., 120.],
            &[14., 77.],
            &[14f64.sqrt(), 77f64.sqrt()],
            &[lse(3.), lse(6.)],
        ],
    );
    // Empty axes reduce each element alone; None reduces everything.
    p.known(
        "empty and absent axes",
        &|b, x| {
            Ok(vec![
                b.reduce_sum_square(&x[0], Some(&[]), false)?,
                b.reduce_l2(&x[0], Some(&[]), true)?,
                b.reduce_mean(&x[0], None, false)?,
                b.reduce_max(&x[0], None, true)?,
            ])
        },
        &[f32s(&[3], &[-2., 0.5, 3.])],
        &[&[4., 0.25, 9.], &[2., 0.5, 3.], &[0.5], &[3.]],
    );
    // int32 sums and products wrap; max and min of negatives.
    p.known(
        "int32 reductions",
        &|b, x| {
            Ok(vec![
                b.reduce_sum(&x[0], Some(&[0]), false)?,
                b.reduce_product(&x[0], Some(&[0]), false)?,
                b.reduce_max(&x[0], Some(&[0]), true)?,
                b.reduce_min(&x[0], None, false)?,
            ])
        },
        &[i32s(&[2, 2], &[i32::MAX, -7, 2, -3])],
        &[
            &[i32::MIN as f64 + 1.0, -10.0],
            &[-2.0, 21.0],
            &[i32::MAX as f64, -3.0],
            &[-7.0],
        ],
    );
    // logSumExp of large logits (exp alone would overflow) and of -inf.
    p.known(
        "reduceLogSumExp, large and infinite",
        &|b, x| Ok(vec![b.reduce_log_sum_exp(&x[0], Some(&[1]), false)?]),
        &[f32s(
            &[2, 2],
            &[1000., 1000., f32::NEG_INFINITY, f32::NEG_INFINITY],
        )],
        &[&[1000. + 2f64.ln(), f64::NEG_INFINITY]],
    );
    p.known(
        "reduceMean float16",
        &|b, x| Ok(vec![b.reduce_mean(&x[0], Some(&[0, 1]), false)?]),
        &[f16s(&[2, 2, 2], &[1., 2., 3., 4., 5., 6., 7., 8.])],
        &[&[4., 5.]],
    );
}

#[test]
fn reductions_refuse_bad_types_and_axes() {
    let b = GraphBuilder::shapes_only();
    let i = b
        .input("i", OperandDescriptor::new(DataType::Int32, [2, 3]))
        .unwrap();
    let e = b.reduce_mean(&i, None, false).unwrap_err().to_string();
    assert!(
        e.contains("reduceMean: needs a float32 or float16 operand"),
        "{e}"
    );
    let u = b
        .input("u", OperandDescriptor::new(DataType::Uint8, [2]))
        .unwrap();
    let e = b.reduce_sum(&u, None, false).unwrap_err().to_string();
    assert!(
        e.contains("reduceSum: needs a float32, float16 or int32"),
        "{e}"
    );
    let e = b.reduce_max(&i, Some(&[2]), false).unwrap_err().to_string();
    assert!(e.contains("reduceMax: axis 2 out of range"), "{e}");
}

// ------------------------------------------------------------ argMin/Max

#[test]
fn arg_min_max_match_cpu() {
    let p = Pair::new();
    let mut r = rng(151);
    let cases: [(&[usize], usize); 6] = [
        (&[9], 0),
        (&[4, 7], 0),
        (&[4, 7], 1),
        (&[3, 5, 6], 1),
        (&[2, 3, 4, 5], 3),
        (&[2, 1, 3, 2, 70], 4),
    ];
    for (shape, axis) in cases {
        for dt in [
            DataType::Float32,
            DataType::Float16,
            DataType::Int32,
            DataType::Uint8,
        ] {
            // Few distinct int32 values: many ties.
            let x = random(&mut r, dt, shape, -2.0, 2.0);
            let build = |b: &GraphBuilder, x: &[Operand]| -> wgnn::Result<Vec<Operand>> {
                Ok(vec![
                    b.arg_max(&x[0], axis, false, false)?,
                    b.arg_max(&x[0], axis, true, true)?,
                    b.arg_min(&x[0], axis, true, false)?,
                    b.arg_min(&x[0], axis, false, true)?,
                ])
            };
            p.check(
                &format!("argMin/argMax {dt} {shape:?} axis {axis}"),
                &build,
                &[x],
            );
        }
    }
}

#[test]
fn arg_min_max_known_values() {
    let p = Pair::new();
    let all = |b: &GraphBuilder, x: &[Operand]| -> wgnn::Result<Vec<Operand>> {
        Ok(vec![
            b.arg_max(&x[0], 0, false, false)?,
            b.arg_max(&x[0], 0, false, true)?,
            b.arg_min(&x[0], 0, false, false)?,
            b.arg_min(&x[0], 0, false, true)?,
        ])
    };
    // Ties: first index, or last with select_last_index (onnxruntime's).
    p.known(
        "ties",
        &all,
        &[f32s(&[4], &[1., 3., 3., 1.])],
        &[&[1.], &[2.], &[0.], &[3.]],
    );
    p.known(
        "ties int32",
        &all,
        &[i32s(&[5], &[-4, 9, -4, 9, 0])],
        &[&[1.], &[3.], &[0.], &[2.]],
    );
    p.known(
        "uint8",
        &all,
        &[u8s(&[6], &[7, 200, 3, 200, 3, 9])],
        &[&[1.], &[3.], &[2.], &[4.]],
    );
    p.known(
        "along the last axis, kept",
        &|b, x| Ok(vec![b.arg_max(&x[0], 1, true, false)?]),
        &[f32s(&[2, 3], &[0.5, -1., 2., 7., 7., -3.])],
        &[&[2., 0.]],
    );
    // NaN, as onnxruntime 1.32's ArgMax/ArgMin (one-node models, run by
    // hand) return it. On the CPU context only: WGSL lets a GPU assume there
    // are no NaNs.
    let nan = f32::NAN;
    for (x, want) in [
        ([1., nan, 3., 2.], [2., 2., 0., 0.]),
        ([nan, 1., 3., 2.], [0., 0., 0., 0.]),
        ([3., 1., 3., nan], [0., 2., 1., 1.]),
    ] {
        let ran = run(&p.cpu, &all, &[f32s(&[4], &x)]).unwrap();
        let got: Vec<f64> = ran.outputs.iter().map(|o| o.values[0]).collect();
        assert_eq!(got, want, "NaN in {x:?}");
    }
}

// ---------------------------------------------------------------- gather

#[test]
fn gather_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(152);
    // (input shape, axis, indices shape)
    let cases: [(&[usize], usize, &[usize]); 6] = [
        (&[9], 0, &[]),
        (&[9], 0, &[5]),
        (&[5, 7], 1, &[2, 3]),
        (&[5, 7], 0, &[4]),
        (&[3, 4, 5], 1, &[]),
        (&[2, 3, 2, 3, 5], 3, &[2, 1, 3]),
    ];
    for (shape, axis, ishape) in cases {
        let dim = shape[axis] as i32;
        let n: usize = ishape.iter().product();
        // In range, negative, and out of range on both sides.
        let idx: Vec<i32> = (0..n)
            .map(|k| match k % 4 {
                0 | 1 => rand::Rng::random_range(&mut r, -dim..dim),
                2 => dim + 3,
                _ => -dim - 2,
            })
            .collect();
        for dt in [
            DataType::Float32,
            DataType::Float16,
            DataType::Int32,
            DataType::Uint8,
        ] {
            let x = random(&mut r, dt, shape, -5.0, 5.0);
            p.check(
                &format!("gather {dt} {shape:?} axis {axis} indices {ishape:?}"),
                &|b, x| Ok(vec![b.gather(&x[0], &x[1], axis)?]),
                &[x, i32s(ishape, &idx)],
            );
        }
    }
}

#[test]
fn gather_known_values() {
    let p = Pair::new();
    let x = f32s(&[3, 2], &[1., 2., 3., 4., 5., 6.]);
    // ONNX's Gather example (axis 0), and along axis 1.
    p.known(
        "gather rows",
        &|b, x| Ok(vec![b.gather(&x[0], &x[1], 0)?]),
        &[x.clone(), i32s(&[2, 2], &[0, 1, 1, 2])],
        &[&[1., 2., 3., 4., 3., 4., 5., 6.]],
    );
    p.known(
        "gather columns, negative",
        &|b, x| Ok(vec![b.gather(&x[0], &x[1], 1)?]),
        &[x.clone(), i32s(&[3], &[-1, 0, -2])],
        &[&[2., 1., 1., 4., 3., 3., 6., 5., 5.]],
    );
    // A 0-D index drops the axis; out of range clamps to the ends.
    p.known(
        "gather 0-D and clamped",
        &|b, x| {
            let gathered = [
                b.gather(&x[0], &x[1], 0)?,
                b.gather(&x[0], &x[2], 0)?,
                b.gather(&x[0], &x[3], 0)?,
            ];
            assert_eq!(gathered[0].shape(), [2]);
            Ok(gathered.to_vec())
        },
        &[x, i32s(&[], &[-1]), i32s(&[], &[7]), i32s(&[], &[-9])],
        &[&[5., 6.], &[5., 6.], &[1., 2.]],
    );
    // uint8 words: five elements per row, gathered to odd lengths.
    p.known(
        "gather uint8",
        &|b, x| Ok(vec![b.gather(&x[0], &x[1], 1)?]),
        &[
            u8s(&[2, 5], &[10, 11, 12, 13, 14, 20, 21, 22, 23, 255]),
            i32s(&[3], &[4, 0, 2]),
        ],
        &[&[14., 10., 12., 255., 20., 22.]],
    );
    let b = GraphBuilder::shapes_only();
    let x = b.input("x", OperandDescriptor::f32([2, 3])).unwrap();
    let f = b.input("f", OperandDescriptor::f32([2])).unwrap();
    let e = b.gather(&x, &f, 0).unwrap_err().to_string();
    assert!(e.contains("gather: indices must be int32"), "{e}");
}

// ----------------------------------------------------------- expand, tile

#[test]
fn expand_and_tile_match_cpu() {
    let p = Pair::new();
    let mut r = rng(153);
    // (input shape, expanded shape, repetitions)
    let cases: [(&[usize], &[usize], &[usize]); 5] = [
        (&[1], &[7], &[5]),
        (&[3, 1], &[2, 3, 5], &[2, 3]),
        (&[1, 4, 1], &[3, 4, 5], &[1, 1, 1]),
        (&[2, 1, 3, 1], &[2, 5, 3, 2], &[1, 3, 1, 2]),
        (&[1, 2, 1, 3, 1], &[2, 2, 3, 3, 3], &[3, 1, 1, 2, 3]),
    ];
    for (shape, to, reps) in cases {
        for dt in [
            DataType::Float32,
            DataType::Float16,
            DataType::Int32,
            DataType::Uint8,
        ] {
            let x = random(&mut r, dt, shape, -5.0, 5.0);
            p.check(
                &format!("expand {dt} {shape:?} to {to:?}, tile by {reps:?}"),
                &|b, x| Ok(vec![b.expand(&x[0], to)?, b.tile(&x[0], reps)?]),
                &[x],
            );
        }
    }
}

#[test]
fn expand_and_tile_known_values() {
    let p = Pair::new();
    p.known(
        "expand a scalar",
        &|b, x| Ok(vec![b.expand(&x[0], &[2, 3])?]),
        &[f32s(&[], &[2.5])],
        &[&[2.5; 6]],
    );
    p.known(
        "expand a column",
        &|b, x| Ok(vec![b.expand(&x[0], &[2, 3, 2])?]),
        &[i32s(&[3, 1], &[1, 2, 3])],
        &[&[1., 1., 2., 2., 3., 3., 1., 1., 2., 2., 3., 3.]],
    );
    p.known(
        "tile by ones, and numpy's tile",
        &|b, x| Ok(vec![b.tile(&x[0], &[1, 1])?, b.tile(&x[0], &[2, 3])?]),
        &[f32s(&[2, 2], &[1., 2., 3., 4.])],
        &[
            &[1., 2., 3., 4.],
            &[
                1., 2., 1., 2., 1., 2., 3., 4., 3., 4., 3., 4., //
                1., 2., 1., 2., 1., 2., 3., 4., 3., 4., 3., 4.,
            ],
        ],
    );
    p.known(
        "uint8 tile and expand",
        &|b, x| Ok(vec![b.tile(&x[0], &[3])?, b.expand(&x[0], &[2, 3])?]),
        &[u8s(&[3], &[7, 8, 255])],
        &[
            &[7., 8., 255., 7., 8., 255., 7., 8., 255.],
            &[7., 8., 255., 7., 8., 255.],
        ],
    );
    let b = GraphBuilder::shapes_only();
    let x = b.input("x", OperandDescriptor::f32([2, 3])).unwrap();
    let e = b.expand(&x, &[4, 3]).unwrap_err().to_string();
    assert!(
        e.contains("expand: float32 [2, 3] does not broadcast to [4, 3]"),
        "{e}"
    );
    let e = b.tile(&x, &[2]).unwrap_err().to_string();
    assert!(e.contains("tile: 1 repetitions"), "{e}");
}

// ------------------------------------------------------- normalizations

#[test]
fn normalizations_match_cpu() {
    let p = Pair::new();
    let mut r = rng(154);
    for dt in [DataType::Float32, DataType::Float16] {
        let mut floats = |shape: &[usize], lo, hi| -> In {
            let n = shape.iter().product();
            crate::common::ops::floats(dt, shape, &uniform(&mut r, n, lo, hi))
        };
        // Offset inputs, positive variances.
        let inputs = [
            floats(&[2, 3, 5, 7], 3.0, 9.0),
            floats(&[3], 0.5, 1.5),
            floats(&[3], 0.5, 2.0),
            floats(&[7, 5], 0.5, 1.5),
            floats(&[1, 4, 3, 5], -2.0, 4.0),
            floats(&[5], -1.0, 1.0),
            floats(&[5], 0.5, 2.0),
        ];
        let build = |b: &GraphBuilder, x: &[Operand]| -> wgnn::Result<Vec<Operand>> {
            let nchw = InputLayout::Nchw;
            Ok(vec![
                b.layer_normalization(&x[0], Some(&x[3]), Some(&x[3]), &[3, 2], 1e-5)?,
                b.layer_normalization(&x[0], None, None, &[1, 2, 3], 1e-3)?,
                b.instance_normalization(&x[0], Some(&x[1]), Some(&x[2]), 1e-5, nchw)?,
                b.instance_normalization(&x[4], Some(&x[5]), None, 1e-5, InputLayout::Nhwc)?,
                // A relu fused into the normalization kernel.
                b.relu(&b.batch_normalization(&x[0], &x[1], &x[2], None, None, 1, 1e-3)?)?,
                b.batch_normalization(&x[0], &x[1], &x[2], Some(&x[1]), Some(&x[2]), 1, 1e-3)?,
                b.batch_normalization(&x[4], &x[5], &x[6], None, Some(&x[5]), 3, 1e-3)?,
                b.log_softmax(&x[0], 1)?,
                b.log_softmax(&x[4], 3)?,
            ])
        };
        p.check(&format!("normalizations {dt}"), &build, &inputs);
    }
}

#[test]
fn normalizations_known_values() {
    let p = Pair::new();
    // mean 2.5, variance 1.25.
    let z = |v: f64| (v - 2.5) / 1.25f64.sqrt();
    p.known(
        "layerNormalization",
        &|b, x| {
            Ok(vec![
                b.layer_normalization(&x[0], None, None, &[0], 0.0)?,
                b.layer_normalization(&x[0], Some(&x[1]), Some(&x[2]), &[0], 0.0)?,
            ])
        },
        &[
            f32s(&[4], &[1., 2., 3., 4.]),
            f32s(&[4], &[1., 2., 1., 1.]),
            f32s(&[4], &[0., 0., 0., 1.]),
        ],
        &[
            &[z(1.), z(2.), z(3.), z(4.)],
            &[z(1.), 2. * z(2.), z(3.), z(4.) + 1.],
        ],
    );
    // Two channels of two pixels: [1, 3] and [10, 10].
    p.known(
        "instanceNormalization",
        &|b, x| {
            Ok(vec![b.instance_normalization(
                &x[0],
                Some(&x[1]),
                Some(&x[2]),
                0.5,
                InputLayout::Nchw,
            )?])
        },
        &[
            f32s(&[1, 2, 1, 2], &[1., 3., 10., 10.]),
            f32s(&[2], &[2., 1.]),
            f32s(&[2], &[0., 5.]),
        ],
        &[&[-2. / 1.5f64.sqrt(), 2. / 1.5f64.sqrt(), 5., 5.]],
    );
    p.known(
        "batchNormalization",
        &|b, x| {
            Ok(vec![b.batch_normalization(
                &x[0],
                &x[1],
                &x[2],
                Some(&x[3]),
                Some(&x[4]),
                1,
                0.0,
            )?])
        },
        &[
            f32s(&[1, 2, 2], &[1., 2., 3., 5.]),
            f32s(&[2], &[1., 1.]),
            f32s(&[2], &[4., 16.]),
            f32s(&[2], &[2., 1.]),
            f32s(&[2], &[0., 1.]),
        ],
        &[&[0., 1., 1.5, 2.]],
    );
    p.known(
        "logSoftmax",
        &|b, x| Ok(vec![b.log_softmax(&x[0], 0)?]),
        &[f32s(&[3], &[1., 2., 3.])],
        &[&[
            -2.4076059644443806,
            -1.4076059644443806,
            -0.4076059644443806,
        ]],
    );
    let b = GraphBuilder::shapes_only();
    let x = b.input("x", OperandDescriptor::f32([2, 3])).unwrap();
    let s = b.input("s", OperandDescriptor::f32([2])).unwrap();
    let e = b
        .layer_normalization(&x, Some(&s), None, &[1], 1e-5)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("layerNormalization: scale must be float32 [3]"),
        "{e}"
    );
    let e = b
        .batch_normalization(&x, &s, &s, None, None, 1, 1e-5)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("batchNormalization: mean must be float32 [3]"),
        "{e}"
    );
}

/// onnxruntime's LayerNormalization, InstanceNormalization,
/// BatchNormalization, LogSoftmax and ReduceLogSumExp on data with large
/// offsets, on both contexts, to 1e-4 relative.
#[test]
fn normalizations_match_onnxruntime() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/ops/norm_reference.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let p = Pair::new();
    let cases = json["cases"].as_array().unwrap();
    // One case per op: layer, instance and batch normalization, logSoftmax,
    // reduceLogSumExp, and a second layerNormalization.
    assert!(cases.len() >= 6, "{path} holds {} cases", cases.len());
    for case in cases {
        let op = case["op"].as_str().unwrap();
        let usizes = |k: &str| -> Vec<usize> {
            case[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect()
        };
        let floats = |k: &str| -> Vec<f32> {
            case[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect()
        };
        let shape = usizes("shape");
        let epsilon = case["epsilon"].as_f64().unwrap_or(0.0) as f32;
        let mut inputs = vec![f32s(&shape, &floats("x"))];
        let build: Box<Build<'_>> = match op {
            "layerNormalization" => {
                let axes = usizes("axes");
                let along: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
                inputs.push(f32s(&along, &floats("scale")));
                inputs.push(f32s(&along, &floats("bias")));
                Box::new(move |b, x| {
                    Ok(vec![b.layer_normalization(
                        &x[0],
                        Some(&x[1]),
                        Some(&x[2]),
                        &axes,
                        epsilon,
                    )?])
                })
            }
            "instanceNormalization" => {
                inputs.push(f32s(&[shape[1]], &floats("scale")));
                inputs.push(f32s(&[shape[1]], &floats("bias")));
                Box::new(move |b, x| {
                    Ok(vec![b.instance_normalization(
                        &x[0],
                        Some(&x[1]),
                        Some(&x[2]),
                        epsilon,
                        InputLayout::Nchw,
                    )?])
                })
            }
            "batchNormalization" => {
                let axis = case["axis"].as_u64().unwrap() as usize;
                for k in ["mean", "variance", "scale", "bias"] {
                    inputs.push(f32s(&[shape[axis]], &floats(k)));
                }
                Box::new(move |b, x| {
                    Ok(vec![b.batch_normalization(
                        &x[0],
                        &x[1],
                        &x[2],
                        Some(&x[3]),
                        Some(&x[4]),
                        axis,
                        epsilon,
                    )?])
                })
            }
            "logSoftmax" => {
                let axis = case["axis"].as_u64().unwrap() as usize;
                Box::new(move |b, x| Ok(vec![b.log_softmax(&x[0], axis)?]))
            }
            "reduceLogSumExp" => {
                let axes = usizes("axes");
                Box::new(move |b, x| Ok(vec![b.reduce_log_sum_exp(&x[0], Some(&axes), false)?]))
            }
            other => panic!("unknown op {other} in {path}"),
        };
        let want: Vec<f64> = floats("y").into_iter().map(f64::from).collect();
        p.known_within(
            &format!("{op} {shape:?} against onnxruntime"),
            &*build,
            &inputs,
            &[&want],
            Some(1e-4),
        );
    }
}
