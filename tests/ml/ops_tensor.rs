//! Tensor ops on the GPU context against the CPU reference: every op on
//! fresh seeded random inputs (odd sizes, single elements, sizes that are not
//! multiples of any workgroup), plus one hand-computed case per op checked on
//! both contexts, so the two cannot agree on a wrong answer. Ends with the
//! buffer renting round trip (graph -> custom WGSL in place -> graph).

use crate::common;

use wgnn::ml::{
    Context, DataType, GemmOptions, Graph, GraphBuilder, Operand, OperandDescriptor, PaddingMode,
    TensorDescriptor,
};

use rand::Rng;

use crate::common::ops::{
    assert_close, f16s, f32s, i32s, random, rng, run, tolerance, Build, In, Pair,
};

const DATA_TYPES: [DataType; 3] = [DataType::Float32, DataType::Float16, DataType::Int32];
const FLOAT_TYPES: [DataType; 2] = [DataType::Float32, DataType::Float16];

// ---------------------------------------------------------------- binary

#[test]
fn binary_ops_match_cpu() {
    let p = Pair::new();
    let mut r = rng(1);
    let shapes: [(&[usize], &[usize]); 5] = [
        (&[3, 5, 7], &[5, 1]),
        (&[1], &[2, 3]),
        (&[4, 1, 3], &[1, 5, 1]),
        (&[257], &[257]),
        (&[2, 1, 3, 1], &[3, 9]),
    ];
    for dt in DATA_TYPES {
        for (i, name) in ["add", "sub", "mul", "div", "max", "min"]
            .iter()
            .enumerate()
        {
            let (sa, sb) = shapes[i % shapes.len()];
            let a = random(&mut r, dt, sa, -3.0, 3.0);
            // int32 division by zero (0 on both contexts) is in range here.
            let b = random(&mut r, dt, sb, -3.0, 3.0);
            let build = |g: &GraphBuilder, x: &[Operand]| -> wgnn::Result<Vec<Operand>> {
                Ok(vec![match *name {
                    "add" => g.add(&x[0], &x[1])?,
                    "sub" => g.sub(&x[0], &x[1])?,
                    "mul" => g.mul(&x[0], &x[1])?,
                    "div" => g.div(&x[0], &x[1])?,
                    "max" => g.max(&x[0], &x[1])?,
                    _ => g.min(&x[0], &x[1])?,
                }])
            };
            p.check(&format!("{name} {sa:?} {sb:?}"), &build, &[a, b]);
        }
    }
}

#[test]
fn binary_known_values() {
    let p = Pair::new();
    // Rank-differing broadcast: [2, 3] with [3].
    p.known(
        "sub int32 broadcast",
        &|g, x| Ok(vec![g.sub(&x[0], &x[1])?]),
        &[
            i32s(&[2, 3], &[1, 2, 3, 4, 5, 6]),
            i32s(&[3], &[10, 20, 30]),
        ],
        &[&[-9.0, -18.0, -27.0, -6.0, -15.0, -24.0]],
    );
    p.known(
        "div int32 truncates, by zero gives 0",
        &|g, x| Ok(vec![g.div(&x[0], &x[1])?]),
        &[i32s(&[4], &[7, -7, 5, 9]), i32s(&[4], &[2, 2, 0, -4])],
        &[&[3.0, -3.0, 0.0, -2.0]],
    );
    p.known(
        "max, min, mul float32 column broadcast",
        &|g, x| {
            Ok(vec![
                g.max(&x[0], &x[1])?,
                g.min(&x[0], &x[1])?,
                g.mul(&x[0], &x[1])?,
            ])
        },
        &[
            f32s(&[2, 2], &[1.0, -2.0, 3.0, 0.5]),
            f32s(&[2, 1], &[0.0, 2.0]),
        ],
        &[
            &[1.0, 0.0, 3.0, 2.0],
            &[0.0, -2.0, 2.0, 0.5],
            &[0.0, -0.0, 6.0, 1.0],
        ],
    );
    p.known(
        "add float16",
        &|g, x| Ok(vec![g.add(&x[0], &x[1])?]),
        &[f16s(&[3], &[0.5, 1.25, -2.0]), f16s(&[1], &[1.5])],
        &[&[2.0, 2.75, -0.5]],
    );
}

// ----------------------------------------------------------------- unary

type UnaryFn = fn(&GraphBuilder, &Operand) -> wgnn::Result<Operand>;

fn unary_ops() -> Vec<(&'static str, UnaryFn)> {
    vec![
        ("relu", |g, x| g.relu(x)),
        ("clamp", |g, x| g.clamp(x, -0.5, 0.75)),
        ("sigmoid", |g, x| g.sigmoid(x)),
        ("tanh", |g, x| g.tanh(x)),
        ("leakyRelu", |g, x| g.leaky_relu(x, 0.1)),
        ("hardSwish", |g, x| g.hard_swish(x)),
        ("hardSigmoid", |g, x| g.hard_sigmoid(x, 0.2, 0.5)),
    ]
}

#[test]
fn unary_activations_match_cpu() {
    let p = Pair::new();
    let mut r = rng(2);
    for dt in FLOAT_TYPES {
        for (i, (name, f)) in unary_ops().into_iter().enumerate() {
            let shape: &[usize] = [&[2, 3, 37][..], &[1], &[67], &[5, 5]][i % 4];
            let x = random(&mut r, dt, shape, -5.0, 5.0);
            p.check(name, &|g, x| Ok(vec![f(g, &x[0])?]), &[x]);
        }
    }
}

#[test]
fn unary_known_values() {
    let p = Pair::new();
    let x = f32s(&[5], &[-4.0, -1.0, 0.0, 0.5, 4.0]);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let xs = [-4.0f64, -1.0, 0.0, 0.5, 4.0];
    let want: Vec<Vec<f64>> = vec![
        vec![0.0, 0.0, 0.0, 0.5, 4.0],
        vec![-0.5, -0.5, 0.0, 0.5, 0.75],
        xs.iter().map(|&v| sig(v)).collect(),
        xs.iter().map(|&v| v.tanh()).collect(),
        vec![-0.4, -0.1, 0.0, 0.5, 4.0],
        // x * relu6(x + 3) / 6
        vec![0.0, -1.0 / 3.0, 0.0, 0.5 * 3.5 / 6.0, 4.0],
        // clamp(0.2 x + 0.5, 0, 1)
        vec![0.0, 0.3, 0.5, 0.6, 1.0],
    ];
    for ((name, f), w) in unary_ops().into_iter().zip(&want) {
        p.known(
            name,
            &|g, x| Ok(vec![f(g, &x[0])?]),
            std::slice::from_ref(&x),
            &[w],
        );
    }
}

// ------------------------------------------------------------------ cast

#[test]
fn cast_matches_cpu() {
    use DataType::*;
    let p = Pair::new();
    let mut r = rng(3);
    let all = [Float32, Float16, Int32, Uint8];
    for (i, from) in all.into_iter().enumerate() {
        for (j, to) in all.into_iter().enumerate() {
            // Odd sizes so uint8 words are partly filled.
            let shape: &[usize] = [&[1][..], &[7], &[3, 5], &[259]][(i + j) % 4];
            // Past uint8's range on both sides, so saturation is exercised;
            // within float16's so every source value is representable.
            let x = random(&mut r, from, shape, -400.0, 400.0);
            p.check(
                &format!("cast {from} -> {to}"),
                &|g, x| Ok(vec![g.cast(&x[0], to)?]),
                &[x],
            );
        }
    }
}

#[test]
fn cast_known_values() {
    use DataType::*;
    let p = Pair::new();
    let x = f32s(&[7], &[-1.7, 2.9, 300.0, -5.0, 3e9, -3e9, 65.5]);
    let cast = |to: DataType| move |g: &GraphBuilder, x: &[Operand]| Ok(vec![g.cast(&x[0], to)?]);
    p.known(
        "float32 -> int32 truncates and saturates",
        &cast(Int32),
        std::slice::from_ref(&x),
        &[&[-1.0, 2.0, 300.0, -5.0, 2147483647.0, -2147483648.0, 65.0]],
    );
    p.known(
        "float32 -> uint8 truncates and saturates",
        &cast(Uint8),
        std::slice::from_ref(&x),
        &[&[0.0, 2.0, 255.0, 0.0, 255.0, 0.0, 65.0]],
    );
    p.known(
        "int32 -> uint8 saturates",
        &cast(Uint8),
        &[i32s(&[5], &[-1, 0, 255, 256, 77])],
        &[&[0.0, 0.0, 255.0, 255.0, 77.0]],
    );
    p.known(
        "uint8 -> int32, float16, float32",
        &|g, x| {
            Ok(vec![
                g.cast(&x[0], Int32)?,
                g.cast(&x[0], Float16)?,
                g.cast(&x[0], Float32)?,
            ])
        },
        &[In {
            dt: Uint8,
            shape: vec![5],
            bytes: vec![0, 1, 128, 254, 255],
        }],
        &[
            &[0.0, 1.0, 128.0, 254.0, 255.0],
            &[0.0, 1.0, 128.0, 254.0, 255.0],
            &[0.0, 1.0, 128.0, 254.0, 255.0],
        ],
    );
    p.known(
        "float32 -> float16 -> float32 rounds to half precision",
        &|g, x| Ok(vec![g.cast(&g.cast(&x[0], Float16)?, Float32)?]),
        &[f32s(&[3], &[1.0 + 1.0 / 4096.0, 2049.0, -0.1])],
        // 1 + 2^-12 and 2049 are ties that round to even in half precision.
        &[&[1.0, 2048.0, -0.0999755859375]],
    );
}

// ---------------------------------------------------------------- concat

#[test]
fn concat_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(4);
    // One kernel copies up to 8 operands: 9 take two.
    for dt in DATA_TYPES {
        for axis in 0..3 {
            for count in [2, 3, 5, 9] {
                let inputs: Vec<In> = (0..count)
                    .map(|k| {
                        let mut shape = vec![3, 5, 7];
                        shape[axis] = [1, 4, 3][k % 3];
                        random(&mut r, dt, &shape, -100.0, 100.0)
                    })
                    .collect();
                p.check(
                    &format!("concat of {count} along axis {axis}"),
                    &move |g, x| Ok(vec![g.concat(&x.iter().collect::<Vec<_>>(), axis)?]),
                    &inputs,
                );
            }
        }
    }
    // A concat of a whole split reads the split's input; the split copies
    // only the part the relu reads (`ml::fuse::whole_split`).
    let x = random(&mut r, DataType::Float16, &[2, 6, 3], -100.0, 100.0);
    let z = random(&mut r, DataType::Float16, &[2, 1, 3], -100.0, 100.0);
    p.check(
        "concat of a whole split and another operand",
        &|g, x| {
            let parts = g.split_sizes(&x[0], &[2, 1, 3], 1)?;
            let cat = g.concat(&[&x[1], &parts[0], &parts[1], &parts[2], &x[1]], 1)?;
            Ok(vec![cat, g.relu(&parts[1])?])
        },
        &[x, z],
    );
    // A single input, and a single element each.
    let one = random(&mut r, DataType::Float32, &[1], -1.0, 1.0);
    p.check(
        "concat one input",
        &|g, x| Ok(vec![g.concat(&[&x[0]], 0)?]),
        std::slice::from_ref(&one),
    );
    p.check(
        "concat scalars",
        &|g, x| Ok(vec![g.concat(&[&x[0], &x[1]], 0)?]),
        &[one.clone(), one],
    );
}

#[test]
fn concat_known_values() {
    let p = Pair::new();
    p.known(
        "concat axis 1",
        &|g, x| Ok(vec![g.concat(&[&x[0], &x[1], &x[2]], 1)?]),
        &[
            i32s(&[2, 1], &[1, 2]),
            i32s(&[2, 2], &[3, 4, 5, 6]),
            i32s(&[2, 1], &[7, 8]),
        ],
        &[&[1.0, 3.0, 4.0, 7.0, 2.0, 5.0, 6.0, 8.0]],
    );
    p.known(
        "concat axis 0 float16",
        &|g, x| Ok(vec![g.concat(&[&x[0], &x[1]], 0)?]),
        &[f16s(&[1, 2], &[1.5, 2.5]), f16s(&[1, 2], &[-3.0, 4.0])],
        &[&[1.5, 2.5, -3.0, 4.0]],
    );
}

// ------------------------------------------------------------- transpose

#[test]
fn transpose_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(5);
    let cases: [(&[usize], Option<&[usize]>); 6] = [
        (&[1], None),
        (&[7, 3], None),
        (&[2, 3, 5], Some(&[1, 2, 0])),
        (&[2, 3, 5], Some(&[2, 0, 1])),
        (&[2, 1, 3, 5], Some(&[0, 2, 3, 1])),
        (&[2, 3, 1, 2, 3], Some(&[4, 2, 0, 3, 1])),
    ];
    for dt in DATA_TYPES {
        for (shape, perm) in cases {
            let x = random(&mut r, dt, shape, -1000.0, 1000.0);
            p.check(
                &format!("transpose {shape:?} {perm:?}"),
                &|g, x| Ok(vec![g.transpose(&x[0], perm)?]),
                &[x],
            );
        }
    }
}

#[test]
fn transpose_known_values() {
    let p = Pair::new();
    p.known(
        "transpose 2x3",
        &|g, x| Ok(vec![g.transpose(&x[0], None)?]),
        &[i32s(&[2, 3], &[1, 2, 3, 4, 5, 6])],
        &[&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]],
    );
    // [2, 2, 2] with permutation [2, 0, 1]: y[i][j][k] = x[j][k][i].
    p.known(
        "transpose 2x2x2",
        &|g, x| Ok(vec![g.transpose(&x[0], Some(&[2, 0, 1]))?]),
        &[f32s(&[2, 2, 2], &[0., 1., 2., 3., 4., 5., 6., 7.])],
        &[&[0., 2., 4., 6., 1., 3., 5., 7.]],
    );
}

// ----------------------------------------------------------------- slice

#[test]
fn slice_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(6);
    type Case<'a> = (&'a [usize], &'a [usize], &'a [usize], Option<&'a [usize]>);
    let cases: [Case; 5] = [
        (&[1], &[0], &[1], None),
        (&[17], &[3], &[5], Some(&[3])),
        (&[4, 9], &[1, 2], &[3, 4], None),
        (&[3, 7, 11], &[0, 1, 2], &[2, 3, 4], Some(&[2, 2, 2])),
        (
            &[2, 3, 4, 5],
            &[1, 0, 1, 4],
            &[1, 3, 2, 1],
            Some(&[1, 1, 2, 1]),
        ),
    ];
    for dt in DATA_TYPES {
        for (shape, starts, sizes, strides) in cases {
            let x = random(&mut r, dt, shape, -1000.0, 1000.0);
            p.check(
                &format!("slice {shape:?} {starts:?} {sizes:?} {strides:?}"),
                &|g, x| Ok(vec![g.slice(&x[0], starts, sizes, strides)?]),
                &[x],
            );
        }
    }
}

#[test]
fn slice_known_values() {
    let p = Pair::new();
    let x = i32s(&[3, 4], &[0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]);
    p.known(
        "slice rows 1..3, columns 1..3",
        &|g, x| Ok(vec![g.slice(&x[0], &[1, 1], &[2, 2], None)?]),
        std::slice::from_ref(&x),
        &[&[11.0, 12.0, 21.0, 22.0]],
    );
    p.known(
        "slice with strides",
        &|g, x| Ok(vec![g.slice(&x[0], &[0, 1], &[2, 2], Some(&[2, 2]))?]),
        &[x],
        &[&[1.0, 3.0, 21.0, 23.0]],
    );
}

// ------------------------------------------------------------------- pad

#[test]
fn pad_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(7);
    type Case<'a> = (&'a [usize], &'a [usize], &'a [usize]);
    let cases: [Case; 4] = [
        (&[1], &[0], &[0]),
        (&[5], &[2], &[3]),
        (&[3, 4], &[1, 2], &[2, 0]),
        (&[2, 3, 4, 5], &[0, 1, 3, 2], &[1, 2, 1, 4]),
    ];
    for dt in DATA_TYPES {
        for mode in [
            PaddingMode::Constant,
            PaddingMode::Edge,
            PaddingMode::Reflection,
        ] {
            for (shape, begin, end) in cases {
                // Reflection needs padding smaller than the dimension.
                if mode == PaddingMode::Reflection
                    && (0..shape.len()).any(|k| begin[k] >= shape[k] || end[k] >= shape[k])
                {
                    continue;
                }
                let x = random(&mut r, dt, shape, -1000.0, 1000.0);
                p.check(
                    &format!("pad {mode:?} {shape:?} {begin:?} {end:?}"),
                    &|g, x| Ok(vec![g.pad(&x[0], begin, end, mode, -7.0)?]),
                    &[x],
                );
            }
        }
    }
}

#[test]
fn pad_known_values() {
    let p = Pair::new();
    let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let pad = |mode| {
        move |g: &GraphBuilder, x: &[Operand]| {
            Ok(vec![g.pad(&x[0], &[1, 2], &[0, 1], mode, 9.5)?])
        }
    };
    #[rustfmt::skip]
    p.known(
        "pad constant",
        &pad(PaddingMode::Constant),
        std::slice::from_ref(&x),
        &[&[
            9.5, 9.5, 9.5, 9.5, 9.5, 9.5,
            9.5, 9.5, 1.0, 2.0, 3.0, 9.5,
            9.5, 9.5, 4.0, 5.0, 6.0, 9.5,
        ]],
    );
    #[rustfmt::skip]
    p.known(
        "pad edge",
        &pad(PaddingMode::Edge),
        std::slice::from_ref(&x),
        &[&[
            1.0, 1.0, 1.0, 2.0, 3.0, 3.0,
            1.0, 1.0, 1.0, 2.0, 3.0, 3.0,
            4.0, 4.0, 4.0, 5.0, 6.0, 6.0,
        ]],
    );
    #[rustfmt::skip]
    p.known(
        "pad reflection",
        &pad(PaddingMode::Reflection),
        std::slice::from_ref(&x),
        &[&[
            6.0, 5.0, 4.0, 5.0, 6.0, 5.0,
            3.0, 2.0, 1.0, 2.0, 3.0, 2.0,
            6.0, 5.0, 4.0, 5.0, 6.0, 5.0,
        ]],
    );
    p.known(
        "pad int32 constant",
        &|g, x| {
            Ok(vec![g.pad(
                &x[0],
                &[1],
                &[2],
                PaddingMode::Constant,
                -3.0,
            )?])
        },
        &[i32s(&[2], &[5, 6])],
        &[&[-3.0, 5.0, 6.0, -3.0, -3.0]],
    );
}

// ----------------------------------------------------------------- split

#[test]
fn split_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(8);
    for dt in DATA_TYPES {
        let x = random(&mut r, dt, &[3, 7, 5], -1000.0, 1000.0);
        p.check(
            "split axis 1 into 2, 4, 1",
            &|g, x| g.split_sizes(&x[0], &[2, 4, 1], 1),
            std::slice::from_ref(&x),
        );
        p.check(
            "split axis 0 into 3",
            &|g, x| g.split(&x[0], 3, 0),
            std::slice::from_ref(&x),
        );
        p.check(
            "split axis 2 into 5",
            &|g, x| g.split(&x[0], 5, 2),
            std::slice::from_ref(&x),
        );
        // Only one part used by anything else: the rest are still outputs.
        p.check(
            "split one part into 1",
            &|g, x| g.split(&x[0], 1, 2),
            std::slice::from_ref(&x),
        );
    }
}

#[test]
fn split_known_values() {
    let p = Pair::new();
    p.known(
        "split [2, 3] axis 1 into 1, 2",
        &|g, x| g.split_sizes(&x[0], &[1, 2], 1),
        &[i32s(&[2, 3], &[1, 2, 3, 4, 5, 6])],
        &[&[1.0, 4.0], &[2.0, 3.0, 5.0, 6.0]],
    );
}

// ----------------------------------------------------------------- prelu

#[test]
fn prelu_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(9);
    let slopes: [&[usize]; 5] = [&[1], &[5], &[3, 1, 1], &[2, 3, 4, 5], &[4, 1]];
    for dt in FLOAT_TYPES {
        for s in slopes {
            let x = random(&mut r, dt, &[2, 3, 4, 5], -3.0, 3.0);
            let slope = random(&mut r, dt, s, -1.0, 1.0);
            p.check(
                &format!("prelu slope {s:?}"),
                &|g, x| Ok(vec![g.prelu(&x[0], &x[1])?]),
                &[x, slope],
            );
        }
    }
}

#[test]
fn prelu_known_values() {
    let p = Pair::new();
    p.known(
        "prelu per-row slope",
        &|g, x| Ok(vec![g.prelu(&x[0], &x[1])?]),
        &[
            f32s(&[2, 3], &[-1.0, 0.0, 2.0, -4.0, 3.0, -0.5]),
            f32s(&[2, 1], &[0.5, -2.0]),
        ],
        &[&[-0.5, 0.0, 2.0, 8.0, 3.0, 1.0]],
    );
}

// --------------------------------------------------------------- softmax

#[test]
fn softmax_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(10);
    // The last two: short rows side by side, one invocation a row (as
    // YOLOv8n's DFL softmax over 16 bins of 4 x 8400 boxes).
    let cases: [(&[usize], usize); 9] = [
        (&[1], 0),
        (&[3, 5], 1),
        (&[7, 1], 1),
        (&[4, 130], 1),
        (&[2, 100, 3], 1),
        (&[5, 3, 2], 0),
        (&[2, 3, 33], 2),
        (&[2, 5, 70], 1),
        (&[1, 16, 3, 33], 1),
    ];
    for dt in FLOAT_TYPES {
        for (shape, axis) in cases {
            let x = random(&mut r, dt, shape, -8.0, 8.0);
            p.check(
                &format!("softmax {shape:?} axis {axis}"),
                &|g, x| Ok(vec![g.softmax(&x[0], axis)?]),
                &[x],
            );
        }
    }
}

#[test]
fn softmax_known_values() {
    let p = Pair::new();
    let ln3 = 3f32.ln();
    // Rows [0, ln 3] and [1000, 1000] (overflows exp without the max shift).
    p.known(
        "softmax last axis",
        &|g, x| Ok(vec![g.softmax(&x[0], 1)?]),
        &[f32s(&[2, 2], &[0.0, ln3, 1000.0, 1000.0])],
        &[&[0.25, 0.75, 0.5, 0.5]],
    );
    p.known(
        "softmax axis 0",
        &|g, x| Ok(vec![g.softmax(&x[0], 0)?]),
        &[f32s(&[2, 2], &[0.0, 5.0, ln3, 5.0])],
        &[&[0.25, 0.5, 0.75, 0.5]],
    );
}

// ---------------------------------------------------------------- matmul

#[test]
fn matmul_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(11);
    let cases: [(&[usize], &[usize]); 6] = [
        (&[1, 1], &[1, 1]),
        (&[5, 7], &[7, 3]),
        (&[2, 33, 17], &[17, 40]),
        (&[3, 1, 4, 5], &[2, 5, 6]),
        (&[4, 5], &[2, 5, 3]),
        (&[1, 70], &[70, 65]),
    ];
    for dt in FLOAT_TYPES {
        for (sa, sb) in cases {
            let a = random(&mut r, dt, sa, -1.0, 1.0);
            let b = random(&mut r, dt, sb, -1.0, 1.0);
            p.check(
                &format!("matmul {sa:?} x {sb:?}"),
                &|g, x| Ok(vec![g.matmul(&x[0], &x[1])?]),
                &[a.clone(), b.clone()],
            );
        }
    }
    // A following activation is fused into the kernel's epilogue.
    let a = random(&mut r, DataType::Float32, &[9, 11], -1.0, 1.0);
    let b = random(&mut r, DataType::Float32, &[11, 13], -1.0, 1.0);
    p.check(
        "matmul + relu + clamp",
        &|g, x| {
            let y = g.relu(&g.matmul(&x[0], &x[1])?)?;
            Ok(vec![g.clamp(&y, 0.0, 0.5)?])
        },
        &[a, b],
    );
}

#[test]
fn matmul_known_values() {
    let p = Pair::new();
    p.known(
        "matmul 2x2",
        &|g, x| Ok(vec![g.matmul(&x[0], &x[1])?]),
        &[
            f32s(&[2, 2], &[1., 2., 3., 4.]),
            f32s(&[2, 2], &[5., 6., 7., 8.]),
        ],
        &[&[19., 22., 43., 50.]],
    );
    // b's batch of 2 broadcast against a single a; then relu fused.
    p.known(
        "matmul broadcast batch + relu",
        &|g, x| Ok(vec![g.relu(&g.matmul(&x[0], &x[1])?)?]),
        &[
            f32s(&[1, 2], &[1., -1.]),
            f32s(&[2, 2, 2], &[1., 2., 3., 4., 5., 0., 1., 1.]),
        ],
        &[&[0., 0., 4., 0.]],
    );
}

// ------------------------------------------------------------------ gemm

#[test]
fn gemm_matches_cpu() {
    let p = Pair::new();
    let mut r = rng(12);
    // Past one 32x32 output tile in M, past half of one in N (matmul.wgsl);
    // then one, three and 13 rows over a long K (matvec.wgsl: a
    // classifier's row, or a batch of them on few tiles, K split over a
    // workgroup), columns past a multiple of its 4 and 64.
    for (m, k, n) in [(35, 21, 18), (1, 300, 70), (3, 129, 66), (13, 129, 70)] {
        gemm_cases(&p, &mut r, m, k, n);
    }
}

fn gemm_cases(p: &Pair, r: &mut rand::rngs::StdRng, m: usize, k: usize, n: usize) {
    let c_shapes: [Option<Vec<usize>>; 5] = [
        None,
        Some(vec![n]),
        Some(vec![m, 1]),
        Some(vec![m, n]),
        Some(vec![1]),
    ];
    for dt in FLOAT_TYPES {
        for (i, c_shape) in c_shapes.iter().enumerate() {
            for (at, bt) in [(false, false), (true, false), (false, true), (true, true)] {
                let a_shape = if at { [k, m] } else { [m, k] };
                let b_shape = if bt { [n, k] } else { [k, n] };
                let mut inputs = vec![
                    random(r, dt, &a_shape, -1.0, 1.0),
                    random(r, dt, &b_shape, -1.0, 1.0),
                ];
                inputs.extend(c_shape.as_ref().map(|s| random(r, dt, s, -1.0, 1.0)));
                let options = GemmOptions {
                    alpha: [1.0, 0.5, -2.0][i % 3],
                    beta: [1.0, 3.0][i % 2],
                    a_transpose: at,
                    b_transpose: bt,
                };
                p.check(
                    &format!("gemm {m}x{k}x{n} c {c_shape:?} {options:?}"),
                    &|g, x| Ok(vec![g.gemm(&x[0], &x[1], x.get(2), options.clone())?]),
                    &inputs,
                );
            }
        }
    }
}

#[test]
fn gemm_known_values() {
    let p = Pair::new();
    let options = GemmOptions {
        alpha: 2.0,
        beta: 3.0,
        a_transpose: true,
        b_transpose: false,
    };
    // 2 * A^T B + 3 * c, A^T B = [[26, 30], [38, 44]].
    p.known(
        "gemm aTranspose, alpha, beta, row c",
        &|g, x| Ok(vec![g.gemm(&x[0], &x[1], Some(&x[2]), options.clone())?]),
        &[
            f32s(&[2, 2], &[1., 2., 3., 4.]),
            f32s(&[2, 2], &[5., 6., 7., 8.]),
            f32s(&[2], &[1., -1.]),
        ],
        &[&[55., 57., 79., 85.]],
    );
    let options = GemmOptions {
        b_transpose: true,
        ..GemmOptions::default()
    };
    // [1, 2, 3] . rows of B = [[1, 0, 1], [0, 1, 0]]: [4, 2].
    p.known(
        "gemm bTranspose, no c",
        &|g, x| Ok(vec![g.gemm(&x[0], &x[1], None, options.clone())?]),
        &[
            f32s(&[1, 3], &[1., 2., 3.]),
            f32s(&[2, 3], &[1., 0., 1., 0., 1., 0.]),
        ],
        &[&[4., 2.]],
    );
}

// ------------------------------------------------------------------ uint8

#[test]
fn uint8_data_movement_is_refused_on_the_gpu() {
    let p = Pair::new();
    let x = In {
        dt: DataType::Uint8,
        shape: vec![2, 3],
        bytes: vec![1, 2, 3, 4, 5, 6],
    };
    let ops: [(&str, &Build<'_>); 5] = [
        ("concat", &|g, x| Ok(vec![g.concat(&[&x[0], &x[0]], 0)?])),
        ("transpose", &|g, x| Ok(vec![g.transpose(&x[0], None)?])),
        ("slice", &|g, x| {
            Ok(vec![g.slice(&x[0], &[0, 1], &[2, 2], None)?])
        }),
        ("pad", &|g, x| {
            Ok(vec![g.pad(
                &x[0],
                &[1, 0],
                &[0, 0],
                PaddingMode::Edge,
                0.0,
            )?])
        }),
        ("split", &|g, x| g.split(&x[0], 3, 1)),
    ];
    for (name, build) in ops {
        let e = run(&p.gpu, build, std::slice::from_ref(&x))
            .err()
            .unwrap_or_else(|| panic!("{name} on uint8 should be refused on the GPU"))
            .to_string();
        assert!(
            e.contains(&format!(
                "{name} does not support uint8 on the GPU; cast first"
            )),
            "{name}: {e}"
        );
        run(&p.cpu, build, std::slice::from_ref(&x)).unwrap();
    }
    // The way out the message names works.
    p.known(
        "cast, transpose, cast back",
        &|g, x| {
            let t = g.transpose(&g.cast(&x[0], DataType::Int32)?, None)?;
            Ok(vec![g.cast(&t, DataType::Uint8)?])
        },
        &[x],
        &[&[1., 4., 2., 5., 3., 6.]],
    );
}

// ---------------------------------------------------------------- renting

const BIAS_RELU_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read_write> h: array<f32>;
const BIAS = array<f32, 6>(0.5, -1.0, 2.0, -3.0, 0.25, -0.75);

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x < arrayLength(&h) {
        h[gid.x] = max(h[gid.x] + BIAS[gid.x % 6u], 0.0);
    }
}
"#;
const BIAS: [f32; 6] = [0.5, -1.0, 2.0, -3.0, 0.25, -0.75];

fn layer_graphs(ctx: &Context, w: &[f32]) -> (Graph, Graph) {
    let b = GraphBuilder::new(ctx);
    let x = b.input("x", OperandDescriptor::f32([4, 8])).unwrap();
    let wc = b.constant_f32(&[8, 6], w).unwrap();
    let y = b.matmul(&x, &wc).unwrap();
    let g1 = b.build(&[("y", &y)]).unwrap();
    let b = GraphBuilder::new(ctx);
    let h = b.input("h", OperandDescriptor::f32([4, 6])).unwrap();
    let k = b.constant_f32(&[1], &[-1.5]).unwrap();
    let z = b.mul(&h, &k).unwrap();
    let g2 = b.build(&[("z", &z)]).unwrap();
    (g1, g2)
}

#[test]
fn rented_buffer_round_trip_without_download() {
    let mut r = rng(13);
    let x: Vec<f32> = (0..32).map(|_| r.random_range(-1.0..1.0)).collect();
    let w: Vec<f32> = (0..48).map(|_| r.random_range(-1.0..1.0)).collect();

    // Reference: graph 1 and graph 2 on the CPU, bias + relu in Rust between.
    let cpu = Context::cpu();
    let (c1, c2) = layer_graphs(&cpu, &w);
    let xt = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4, 8]).writable())
        .unwrap();
    let yt = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4, 6]).readable())
        .unwrap();
    cpu.write_tensor(&xt, bytemuck::cast_slice(&x)).unwrap();
    cpu.dispatch(&c1, &[("x", &xt)], &[("y", &yt)]).unwrap();
    let h: Vec<f32> = cpu
        .read_f32(&yt)
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, v)| (v + BIAS[i % 6]).max(0.0))
        .collect();
    let ht = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4, 6]).writable())
        .unwrap();
    let zt = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4, 6]).readable())
        .unwrap();
    cpu.write_tensor(&ht, bytemuck::cast_slice(&h)).unwrap();
    cpu.dispatch(&c2, &[("h", &ht)], &[("z", &zt)]).unwrap();
    let want = cpu.read_f32(&zt).unwrap();
    assert!(want.iter().any(|&v| v != 0.0) && h.contains(&0.0));
    let e = cpu.export_to_gpu(&yt).err().unwrap().to_string();
    assert!(e.contains("only GPU contexts can lend buffers"), "{e}");

    // The GPU: same graphs, the middle step is custom WGSL on the rented buffer.
    let gpu = common::own_gpu();
    let ctx = Context::gpu(&gpu);
    let (g1, g2) = layer_graphs(&ctx, &w);
    let device = gpu.device();
    let pipeline = common::compute_pipeline(&gpu, "bias + relu", BIAS_RELU_WGSL);
    let xg = ctx
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4, 8]).writable())
        .unwrap();
    let mid = ctx
        .create_tensor(
            TensorDescriptor::new(DataType::Float32, [4, 6])
                .writable()
                .readable()
                .exportable_to_gpu(),
        )
        .unwrap();
    let zg = ctx
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4, 6]).readable())
        .unwrap();
    ctx.write_tensor(&xg, bytemuck::cast_slice(&x)).unwrap();

    let before = gpu.transfers();
    ctx.dispatch(&g1, &[("x", &xg)], &[("y", &mid)]).unwrap();
    let rented = ctx.export_to_gpu(&mid).unwrap();
    assert!(rented.buffer().size() >= 96);
    assert!(rented
        .buffer()
        .usage()
        .contains(wgpu::BufferUsages::STORAGE));
    // While rented, the context refuses the tensor.
    for e in [
        ctx.dispatch(&g2, &[("h", &mid)], &[("z", &zg)])
            .unwrap_err(),
        ctx.read_tensor(&mid).err().unwrap(),
        ctx.write_tensor(&mid, &[0; 96]).unwrap_err(),
    ] {
        assert!(e.to_string().contains("is rented to the GPU"), "{e}");
    }
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("bias + relu"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: rented.buffer(),
                offset: 0,
                size: wgpu::BufferSize::new(96),
            }),
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    gpu.queue().submit([encoder.finish()]);
    rented.give_back();
    ctx.dispatch(&g2, &[("h", &mid)], &[("z", &zg)]).unwrap();
    let between = gpu.transfers().since(&before);
    assert_eq!(between.downloads, 0, "{between}");
    assert_eq!(between.uploads, 0, "{between}");

    let got = ctx.read_f32(&zg).unwrap();
    assert_close(
        "rented round trip",
        DataType::Float32,
        &to64(&got),
        &to64(&want),
        tolerance(DataType::Float32),
    );
    // The in-place edit landed in the tensor itself.
    let mid_now = ctx.read_f32(&mid).unwrap();
    assert_close(
        "rented tensor",
        DataType::Float32,
        &to64(&mid_now),
        &to64(&h),
        tolerance(DataType::Float32),
    );
    // Dropping a rental returns the tensor too.
    drop(ctx.export_to_gpu(&mid).unwrap());
    ctx.read_f32(&mid).unwrap();
    gpu.check().unwrap();
}

fn to64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}
