//! Activations written long-hand, as exporters write them, become one
//! activation (`ml/fuse/activation_patterns.rs`) that folds into the node
//! producing its input: SiLU, GELU (erf and tanh forms), Mish, HardSwish and
//! HardSigmoid after a conv2d, a matmul, a gemm or an add, each in the
//! groupings PyTorch, Hugging Face and TF/Keras write. Each fused graph is
//! checked on both contexts against the same graph kept unfused (the first
//! intermediate is also a graph output, so nothing is replaced), GPU against
//! CPU, float32 and float16; and the cases that must stay as written (an
//! intermediate read elsewhere, a constant off) against the formula.

use rand::rngs::StdRng;
use rand::SeedableRng;
use wgnn::ml::*;

use super::conv_input_fusions::{constant, random};
use crate::common::ops::{assert_close, f32s, floats, run, tolerance, Build, In, Pair};

/// The producer of x: what the activation folds into.
#[derive(Clone, Copy, Debug)]
enum Producer {
    /// 3x3 conv2d with bias, 3 -> 5 channels, NCHW.
    Conv,
    /// [n, 7] x [7, 6].
    Matmul,
    /// gemm [n, 7] x [7, 6] + c.
    Gemm,
    /// x0 + x1.
    Add,
}

/// x (the producer's result), then, with `keep`, the pattern's first
/// intermediate also as a graph output.
type Pattern = fn(&GraphBuilder, &Operand, DataType) -> Vec<Operand>;

fn scalar(b: &GraphBuilder, dt: DataType, v: f32) -> Operand {
    constant(b, dt, &[], &[v])
}

/// Each pattern: its name, its long-hand form (the output first, then the
/// intermediate that `keep` exposes).
const PATTERNS: [(&str, Pattern); 12] = [
    ("silu: mul(x, sigmoid(x))", |b, x, _| {
        let s = b.sigmoid(x).unwrap();
        vec![b.mul(x, &s).unwrap(), s]
    }),
    ("silu: mul(sigmoid(x), x)", |b, x, _| {
        let s = b.sigmoid(x).unwrap();
        vec![b.mul(&s, x).unwrap(), s]
    }),
    // torch.onnx before opset 20: Div, Erf, Add, Mul(x), Mul(0.5).
    ("gelu: torch", |b, x, dt| {
        let d = b.div(x, &scalar(b, dt, std::f32::consts::SQRT_2)).unwrap();
        let e = b.add(&b.erf(&d).unwrap(), &scalar(b, dt, 1.0)).unwrap();
        let y = b.mul(&b.mul(x, &e).unwrap(), &scalar(b, dt, 0.5)).unwrap();
        vec![y, d]
    }),
    // Hugging Face: x * 0.5 * (1.0 + erf(x * 0.7071)).
    ("gelu: x * 0.5 * (1 + erf(x * 0.7071))", |b, x, dt| {
        let half = b.mul(x, &scalar(b, dt, 0.5)).unwrap();
        let d = b
            .mul(&scalar(b, dt, std::f32::consts::FRAC_1_SQRT_2), x)
            .unwrap();
        let e = b.add(&scalar(b, dt, 1.0), &b.erf(&d).unwrap()).unwrap();
        vec![b.mul(&half, &e).unwrap(), half]
    }),
    // torch's approximate="tanh" before opset 20.
    ("gelu tanh: torch", |b, x, dt| {
        let x3 = b.mul(x, &b.mul(x, x).unwrap()).unwrap();
        let inner = b
            .add(x, &b.mul(&scalar(b, dt, 0.044_715), &x3).unwrap())
            .unwrap();
        let inner = b.mul(&scalar(b, dt, 0.797_884_6), &inner).unwrap();
        let t = b
            .add(&scalar(b, dt, 1.0), &b.tanh(&inner).unwrap())
            .unwrap();
        let y = b.mul(&scalar(b, dt, 0.5), &b.mul(x, &t).unwrap()).unwrap();
        vec![y, x3]
    }),
    // Megatron's: x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x))).
    ("gelu tanh: x * (1 + c x^2) grouping, pow", |b, x, dt| {
        let x2 = b.pow(x, &scalar(b, dt, 2.0)).unwrap();
        let c = b.mul(&x2, &scalar(b, dt, 0.044_715)).unwrap();
        let c = b.add(&c, &scalar(b, dt, 1.0)).unwrap();
        let inner = b
            .mul(&b.mul(x, &scalar(b, dt, 0.797_884_5)).unwrap(), &c)
            .unwrap();
        let t = b
            .add(&b.tanh(&inner).unwrap(), &scalar(b, dt, 1.0))
            .unwrap();
        let y = b.mul(&b.mul(x, &scalar(b, dt, 0.5)).unwrap(), &t).unwrap();
        vec![y, x2]
    }),
    ("mish: x * tanh(softplus(x))", |b, x, _| {
        let s = b.softplus(x).unwrap();
        vec![b.mul(&b.tanh(&s).unwrap(), x).unwrap(), s]
    }),
    // torch's hardswish before opset 14: x * clip(x + 3, 0, 6) / 6.
    ("hardswish: x * clip(x + 3, 0, 6) / 6", |b, x, dt| {
        let a = b.add(x, &scalar(b, dt, 3.0)).unwrap();
        let c = b.clamp(&a, 0.0, 6.0).unwrap();
        let y = b.div(&b.mul(x, &c).unwrap(), &scalar(b, dt, 6.0)).unwrap();
        vec![y, a]
    }),
    // TF/Keras: x * relu6(x + 3) * (1/6), relu6 as max then min.
    ("hardswish: x * min(max(x + 3, 0), 6) * 1/6", |b, x, dt| {
        let a = b.add(&scalar(b, dt, 3.0), x).unwrap();
        let c = b.max(&a, &scalar(b, dt, 0.0)).unwrap();
        let c = b.min(&scalar(b, dt, 6.0), &c).unwrap();
        let c = b.mul(&c, &scalar(b, dt, 1.0 / 6.0)).unwrap();
        vec![b.mul(&c, x).unwrap(), a]
    }),
    ("hardswish: x * hardSigmoid(x, 1/6, 1/2)", |b, x, _| {
        let h = b.hard_sigmoid(x, 1.0 / 6.0, 0.5).unwrap();
        vec![b.mul(x, &h).unwrap(), h]
    }),
    ("hardsigmoid: clip(x + 3, 0, 6) / 6", |b, x, dt| {
        let a = b.add(x, &scalar(b, dt, 3.0)).unwrap();
        let c = b.clamp(&a, 0.0, 6.0).unwrap();
        vec![b.div(&c, &scalar(b, dt, 6.0)).unwrap(), a]
    }),
    // Keras' hard_sigmoid: clip(0.2 x + 0.5, 0, 1).
    ("hardsigmoid: max(min(0.2 x + 0.5, 1), 0)", |b, x, dt| {
        let a = b.mul(x, &scalar(b, dt, 0.2)).unwrap();
        let a = b.add(&a, &scalar(b, dt, 0.5)).unwrap();
        let c = b.min(&a, &scalar(b, dt, 1.0)).unwrap();
        vec![b.max(&c, &scalar(b, dt, 0.0)).unwrap(), a]
    }),
];

/// The producer's inputs (graph inputs) and its result.
fn produce(b: &GraphBuilder, ins: &[Operand], producer: Producer, dt: DataType) -> Operand {
    let mut rng = StdRng::seed_from_u64(4001);
    let mut c = |shape: &[usize]| {
        let n = shape.iter().product();
        constant(b, dt, shape, &random(&mut rng, n))
    };
    match producer {
        Producer::Conv => {
            let o = Conv2dOptions {
                padding: [1; 4],
                ..Conv2dOptions::new()
            };
            b.conv2d(&ins[0], &c(&[5, 3, 3, 3]), Some(&c(&[5])), o)
                .unwrap()
        }
        Producer::Matmul => b.matmul(&ins[0], &c(&[7, 6])).unwrap(),
        Producer::Gemm => {
            let w = c(&[7, 6]);
            b.gemm(&ins[0], &w, Some(&c(&[6])), GemmOptions::default())
                .unwrap()
        }
        Producer::Add => b.add(&ins[0], &ins[1]).unwrap(),
    }
}

fn inputs(producer: Producer, dt: DataType, rng: &mut StdRng) -> Vec<In> {
    // Values in [-4, 4): every pattern's bends (hardswish's at -3 and 3).
    let mut input = |shape: &[usize]| {
        let n = shape.iter().product();
        let v: Vec<f32> = random(rng, n).iter().map(|v| v * 4.0).collect();
        floats(dt, shape, &v)
    };
    match producer {
        Producer::Conv => vec![input(&[2, 3, 5, 7])],
        Producer::Matmul | Producer::Gemm => vec![input(&[3, 7])],
        Producer::Add => vec![input(&[3, 5, 7]), input(&[3, 5, 7])],
    }
}

/// The pattern after the producer is one kernel on both contexts (the
/// producer's), and gives the unfused graph's values; GPU agrees with CPU.
fn check(what: &str, producer: Producer, dt: DataType, pattern: Pattern, seed: u64) {
    let ins = inputs(producer, dt, &mut StdRng::seed_from_u64(seed));
    let build = |keep: bool| {
        move |b: &GraphBuilder, x: &[Operand]| {
            let mut ys = pattern(b, &produce(b, x, producer, dt), dt);
            ys.truncate(if keep { 2 } else { 1 });
            Ok(ys)
        }
    };
    let (fused, unfused) = (build(false), build(true));
    let what = format!("{what} after {producer:?} ({dt})");
    let p = Pair::new();
    p.check(&what, &fused, &ins);
    for (name, ctx) in p.both() {
        let f = run(ctx, &fused, &ins).unwrap_or_else(|e| panic!("{what} on {name}: {e}"));
        let u = run(ctx, &unfused, &ins).unwrap_or_else(|e| panic!("{what} on {name}: {e}"));
        assert_eq!(f.nodes, 1, "{what} on {name}: one kernel");
        assert!(u.nodes > 2, "{what} on {name}: {} nodes unfused", u.nodes);
        let (f, u) = (&f.outputs[0], &u.outputs[0]);
        assert!(u.values.iter().any(|&v| v != 0.0), "{what}: degenerate");
        let what = format!("{what} on {name}, fused against unfused");
        assert_close(&what, f.dt, &f.values, &u.values, tolerance(f.dt));
    }
}

#[test]
fn long_hand_activations_fold_into_their_producer() {
    use Producer::*;
    let mut ran = 0;
    for (i, (what, pattern)) in PATTERNS.iter().enumerate() {
        // Every pattern after a conv in both types; the producers in turn.
        for dt in [DataType::Float32, DataType::Float16] {
            check(what, Conv, dt, *pattern, i as u64);
            ran += 1;
        }
        let other = [Matmul, Gemm, Add][i % 3];
        check(what, other, DataType::Float32, *pattern, 100 + i as u64);
        ran += 1;
    }
    assert_eq!(ran, 36);
}

/// GELU on the transformer's matmul + bias: one matmul kernel and one add
/// that takes the activation.
#[test]
fn gelu_after_a_biased_matmul_is_two_kernels() {
    let mut rng = StdRng::seed_from_u64(4002);
    let ins = vec![floats(DataType::Float32, &[4, 7], &random(&mut rng, 28))];
    let w = random(&mut rng, 42);
    let bias = random(&mut rng, 6);
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let dt = DataType::Float32;
        let m = b.matmul(&x[0], &constant(b, dt, &[7, 6], &w))?;
        let y = b.add(&m, &constant(b, dt, &[6], &bias))?;
        Ok(vec![PATTERNS[2].1(b, &y, dt).remove(0)])
    };
    let p = Pair::new();
    p.check("gelu(matmul + bias)", &build, &ins);
    for (name, ctx) in p.both() {
        assert_eq!(run(ctx, &build, &ins).unwrap().nodes, 2, "{name}");
    }
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// What must stay as written: a sigmoid also read by another node, a
/// constant off by more than the tolerance (1e-6 in float32), a swish with
/// a scale inside, hardsigmoid(x) * tanh(x) (two functions of x, no
/// activation). Each keeps its nodes and gives its formula.
#[test]
fn near_misses_stay_as_written_and_correct() {
    let p = Pair::new();
    let v: Vec<f32> = (0..23).map(|i| i as f32 * 0.37 - 4.1).collect();
    let xs: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
    let input = [f32s(&[23], &v)];
    let dt = DataType::Float32;
    let s = |b: &GraphBuilder, v: f32| scalar(b, dt, v);
    let erf = |x: f64| libm::erf(x);
    type Case<'a> = (&'a str, usize, &'a Build<'a>, Vec<Vec<f64>>);
    let read_twice = |b: &GraphBuilder, x: &[Operand]| {
        let sg = b.sigmoid(&x[0])?;
        Ok(vec![b.mul(&x[0], &sg)?, b.add(&sg, &s(b, 1.0))?])
    };
    // 1.41423 is 1.2e-5 away from sqrt 2.
    let gelu_off = |b: &GraphBuilder, x: &[Operand]| {
        let e = b.erf(&b.div(&x[0], &s(b, 1.41423))?)?;
        let e = b.add(&e, &s(b, 1.0))?;
        Ok(vec![b.mul(&b.mul(&x[0], &e)?, &s(b, 0.5))?])
    };
    let hardswish_off = |b: &GraphBuilder, x: &[Operand]| {
        let c = b.clamp(&b.add(&x[0], &s(b, 3.0))?, 0.0, 6.0)?;
        Ok(vec![b.div(&b.mul(&x[0], &c)?, &s(b, 6.1))?])
    };
    let swish_scaled = |b: &GraphBuilder, x: &[Operand]| {
        let sg = b.sigmoid(&b.mul(&x[0], &s(b, 1.5))?)?;
        Ok(vec![b.mul(&x[0], &sg)?])
    };
    let two_functions = |b: &GraphBuilder, x: &[Operand]| {
        let h = b.hard_sigmoid(&x[0], 0.2, 0.5)?;
        Ok(vec![b.mul(&h, &b.tanh(&x[0])?)?])
    };
    let map = |f: &dyn Fn(f64) -> f64| xs.iter().map(|&x| f(x)).collect::<Vec<f64>>();
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let cases: [Case; 5] = [
        (
            "sigmoid read twice",
            3,
            &read_twice,
            vec![map(&silu), map(&|x| sigmoid(x) + 1.0)],
        ),
        (
            "gelu, 1.41423",
            4,
            &gelu_off,
            vec![map(&|x| x * (1.0 + erf(x / 1.41423)) * 0.5)],
        ),
        (
            "hardswish, / 6.1",
            3,
            &hardswish_off,
            vec![map(&|x| x * (x + 3.0).clamp(0.0, 6.0) / 6.1)],
        ),
        (
            "x * sigmoid(1.5 x)",
            2,
            &swish_scaled,
            vec![map(&|x| x * sigmoid(1.5 * x))],
        ),
        (
            "hardsigmoid(x) * tanh(x)",
            3,
            &two_functions,
            vec![map(&|x| (0.2 * x + 0.5).clamp(0.0, 1.0) * x.tanh())],
        ),
    ];
    for (what, nodes, build, want) in &cases {
        for (name, ctx) in p.both() {
            let ran = run(ctx, build, &input).unwrap();
            assert_eq!(ran.nodes, *nodes, "{what} on {name}: nothing replaced");
        }
        let want: Vec<&[f64]> = want.iter().map(Vec::as_slice).collect();
        p.known(what, build, &input, &want);
    }
}

/// The new activations' kernels against the CPU formula and known values,
/// away from any producer: on a graph input, NaN and infinities included.
#[test]
fn new_activations_match_their_formulas() {
    let p = Pair::new();
    let v = [
        -30.0, -8.0, -3.0, -1.5, -0.5, -0.0, 0.0, 0.25, 1.0, 2.5, 3.0, 7.0, 30.0,
    ];
    let xs: Vec<f64> = v.iter().map(|&x: &f32| f64::from(x)).collect();
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let x = &x[0];
        Ok(vec![
            PATTERNS[0].1(b, x, DataType::Float32).remove(0),
            b.gelu(x)?,
            b.gelu_tanh(x)?,
            b.mish(x)?,
        ])
    };
    let softplus = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
    let gelu_tanh =
        |x: f64| 0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh());
    let map = |f: &dyn Fn(f64) -> f64| xs.iter().map(|&x| f(x)).collect::<Vec<f64>>();
    let want = [
        map(&silu),
        map(&|x| 0.5 * x * (1.0 + libm::erf(x / 2f64.sqrt()))),
        map(&gelu_tanh),
        map(&|x| x * softplus(x).tanh()),
    ];
    let want: Vec<&[f64]> = want.iter().map(Vec::as_slice).collect();
    let input = [f32s(&[v.len()], &v)];
    for (name, ctx) in p.both() {
        assert_eq!(run(ctx, &build, &input).unwrap().nodes, 4, "{name}");
    }
    p.known("silu, gelu, geluTanh, mish", &build, &input, &want);
    let edges = [f32s(&[3], &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY])];
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    p.known(
        "silu, gelu, geluTanh, mish at NaN and infinities",
        &|b, x| Ok(build(b, x)?[1..].to_vec()),
        &edges,
        &[&[nan, inf, nan], &[nan, inf, nan], &[nan, inf, nan]],
    );
    // Odd shapes, both types, against the CPU context.
    let mut rng = StdRng::seed_from_u64(4003);
    for dt in [DataType::Float32, DataType::Float16] {
        let v: Vec<f32> = random(&mut rng, 3 * 5 * 7)
            .iter()
            .map(|v| v * 6.0)
            .collect();
        p.check(
            &format!("new activations {dt}"),
            &build,
            &[floats(dt, &[3, 5, 7], &v)],
        );
    }
}

/// YOLOv8's C2f block as its ONNX export leaves it (every conv followed by
/// Sigmoid and Mul): cv1 (1x1), split in two, one bottleneck (two 3x3 and
/// its residual add), concat of the three, cv2 (1x1); 15 nodes written.
/// Without this fusion 15 kernels ran (each SiLU two of its own, the
/// bottleneck's add a residual of its last mul, the concat a chain of three
/// convs); now 6: one per conv, the split's copy of the half the bottleneck
/// reads, and cv2 as a chain of two convs (the concat of both halves reads
/// cv1's result whole, `fuse/whole_split.rs`; the bottleneck's add, which
/// comes after its conv's activation, is that conv's late residual); on the
/// CPU context two more, the transposes at the edges of the
/// block, which the layout pass (`ml/layout`) runs there in NHWC (four
/// convolutions, two crossings; on the GPU only float16 convolutions the
/// tensor cores take move to NHWC).
#[test]
fn a_yolov8_c2f_block_runs_its_silus_in_its_convs() {
    let mut rng = StdRng::seed_from_u64(4004);
    let dt = DataType::Float32;
    let ins = vec![floats(dt, &[1, 8, 9, 11], &random(&mut rng, 8 * 99))];
    let mut weights = Vec::new();
    for (o, i, k) in [(8, 8, 1), (4, 4, 3), (4, 4, 3), (8, 12, 1)] {
        weights.push((
            [o, i, k, k],
            random(&mut rng, o * i * k * k),
            random(&mut rng, o),
        ));
    }
    let build = |b: &GraphBuilder, x: &[Operand]| {
        let conv_silu = |x: &Operand, n: usize| {
            let (shape, w, bias) = &weights[n];
            let o = Conv2dOptions {
                padding: [shape[2] / 2; 4],
                ..Conv2dOptions::new()
            };
            let w = constant(b, dt, shape, w);
            let y = b.conv2d(x, &w, Some(&constant(b, dt, &[shape[0]], bias)), o)?;
            b.mul(&y, &b.sigmoid(&y)?)
        };
        let halves = b.split(&conv_silu(&x[0], 0)?, 2, 1)?;
        let m = conv_silu(&conv_silu(&halves[1], 1)?, 2)?;
        let m = b.add(&halves[1], &m)?;
        let cat = b.concat(&[&halves[0], &halves[1], &m], 1)?;
        Ok(vec![conv_silu(&cat, 3)?])
    };
    let p = Pair::new();
    p.check("C2f", &build, &ins);
    for ((name, ctx), nodes) in p.both().into_iter().zip([6, 8]) {
        assert_eq!(
            run(ctx, &build, &ins).unwrap().nodes,
            nodes,
            "C2f on {name}"
        );
    }
}
