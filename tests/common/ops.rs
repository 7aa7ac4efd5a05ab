//! Ops on the GPU context against the CPU reference: graph inputs from values
//! or seeded random data, one graph built and run on a context, and the
//! comparison of the two contexts' outputs (or of both with hand-computed
//! values) within a tolerance that follows the data type.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wgnn::ml::{
    BuildOptions, Context, DataType, Graph, GraphBuilder, Operand, OperandDescriptor, Tensor,
    TensorDescriptor,
};

/// What a test graph is: operands for the inputs in, outputs out.
pub type Build<'a> = dyn Fn(&GraphBuilder, &[Operand]) -> wgnn::Result<Vec<Operand>> + 'a;

/// A graph with one output built without `?` (the op unwraps), as the
/// spatial op tests write them, in the form [`run`] and [`Pair`] take.
pub fn one<'a>(
    build: &'a dyn Fn(&GraphBuilder, &[Operand]) -> Operand,
) -> impl Fn(&GraphBuilder, &[Operand]) -> wgnn::Result<Vec<Operand>> + 'a {
    move |b, x| Ok(vec![build(b, x)])
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// One graph input: type, shape and little-endian bytes.
#[derive(Clone)]
pub struct In {
    pub dt: DataType,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

/// Float values as the bytes of `dt` (float32, or float16 rounded).
pub fn float_bytes(dt: DataType, v: &[f32]) -> Vec<u8> {
    match dt {
        DataType::Float32 => bytemuck::cast_slice(v).to_vec(),
        DataType::Float16 => v
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
            .collect(),
        other => panic!("float data only, got {other}"),
    }
}

/// An input of float type `dt` holding `v` (rounded to float16 if asked).
pub fn floats(dt: DataType, shape: &[usize], v: &[f32]) -> In {
    assert_eq!(shape.iter().product::<usize>(), v.len());
    In {
        dt,
        shape: shape.to_vec(),
        bytes: float_bytes(dt, v),
    }
}

pub fn f32s(shape: &[usize], v: &[f32]) -> In {
    floats(DataType::Float32, shape, v)
}

pub fn f16s(shape: &[usize], v: &[f32]) -> In {
    floats(DataType::Float16, shape, v)
}

pub fn i32s(shape: &[usize], v: &[i32]) -> In {
    assert_eq!(shape.iter().product::<usize>(), v.len());
    In {
        dt: DataType::Int32,
        shape: shape.to_vec(),
        bytes: bytemuck::cast_slice(v).to_vec(),
    }
}

/// `n` floats drawn uniformly from [lo, hi).
pub fn uniform(rng: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

/// Random values: floats in [lo, hi), int32 in [lo, hi], uint8 anywhere.
pub fn random(rng: &mut StdRng, dt: DataType, shape: &[usize], lo: f32, hi: f32) -> In {
    let n: usize = shape.iter().product();
    let floats = uniform(rng, n, lo, hi);
    match dt {
        DataType::Float32 => f32s(shape, &floats),
        DataType::Float16 => f16s(shape, &floats),
        DataType::Int32 => {
            let v: Vec<i32> = (0..n)
                .map(|_| rng.random_range(lo as i32..=hi as i32))
                .collect();
            i32s(shape, &v)
        }
        DataType::Uint8 => In {
            dt,
            shape: shape.to_vec(),
            bytes: (0..n).map(|_| rng.random::<u8>()).collect(),
        },
    }
}

/// Little-endian values of type `dt`, exactly, as f64.
pub fn decode(dt: DataType, bytes: &[u8]) -> Vec<f64> {
    match dt {
        DataType::Float32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        DataType::Float16 => bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        DataType::Int32 => bytes
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        DataType::Uint8 => bytes.iter().map(|&b| b as f64).collect(),
    }
}

/// One output of a run: its type and its values.
pub struct Output {
    pub dt: DataType,
    pub values: Vec<f64>,
}

/// What [`run`] gives back: every output, and the graph's node count (to
/// see what fused).
pub struct Ran {
    pub outputs: Vec<Output>,
    pub nodes: usize,
}

/// Builds the graph on `ctx` (inputs "x0", "x1", ...; outputs "y0", ...),
/// writes the inputs, dispatches, reads every output and checks that the GPU
/// (if it is one) recorded no error.
pub fn run(ctx: &Context, build: &Build<'_>, inputs: &[In]) -> wgnn::Result<Ran> {
    run_with(ctx, build, inputs, BuildOptions::default())
}

/// A graph built on a context with its input tensors written and its
/// output tensors made, named as [`run`] names them.
struct Prepared {
    graph: Graph,
    names: Vec<String>,
    inputs: Vec<(String, Tensor)>,
    outputs: Vec<(String, Tensor)>,
}

impl Prepared {
    fn new(
        ctx: &Context,
        build: &Build<'_>,
        inputs: &[In],
        options: BuildOptions,
    ) -> wgnn::Result<Prepared> {
        let b = GraphBuilder::new(ctx);
        let operands = inputs
            .iter()
            .enumerate()
            .map(|(i, x)| {
                b.input(
                    &format!("x{i}"),
                    OperandDescriptor::new(x.dt, x.shape.clone()),
                )
            })
            .collect::<wgnn::Result<Vec<_>>>()?;
        let outs = build(&b, &operands)?;
        let names: Vec<String> = (0..outs.len()).map(|i| format!("y{i}")).collect();
        let named: Vec<(&str, &Operand)> = names.iter().map(|n| n.as_str()).zip(&outs).collect();
        let graph: Graph = b.build_with(&named, options)?;
        let mut in_tensors = Vec::new();
        for (i, x) in inputs.iter().enumerate() {
            let t = ctx.create_tensor(TensorDescriptor::new(x.dt, x.shape.clone()).writable())?;
            ctx.write_tensor(&t, &x.bytes)?;
            in_tensors.push((format!("x{i}"), t));
        }
        let out_tensors = graph
            .outputs()
            .into_iter()
            .map(|(name, d)| {
                let t =
                    ctx.create_tensor(TensorDescriptor::new(d.data_type, d.shape).readable())?;
                Ok((name, t))
            })
            .collect::<wgnn::Result<Vec<_>>>()?;
        Ok(Prepared {
            graph,
            names,
            inputs: in_tensors,
            outputs: out_tensors,
        })
    }

    fn bindings(list: &[(String, Tensor)]) -> Vec<(&str, &Tensor)> {
        list.iter().map(|(n, t)| (n.as_str(), t)).collect()
    }
}

/// [`run`], built with `options` (a precision).
pub fn run_with(
    ctx: &Context,
    build: &Build<'_>,
    inputs: &[In],
    options: BuildOptions,
) -> wgnn::Result<Ran> {
    let p = Prepared::new(ctx, build, inputs, options)?;
    let (ins, outs) = (
        Prepared::bindings(&p.inputs),
        Prepared::bindings(&p.outputs),
    );
    ctx.dispatch(&p.graph, &ins, &outs)?;
    let outputs = p
        .names
        .iter()
        .map(|n| {
            let (_, t) = p.outputs.iter().find(|(m, _)| m == n).unwrap();
            let bytes = ctx.read_tensor_blocking(t)?;
            Ok(Output {
                dt: t.data_type(),
                values: decode(t.data_type(), &bytes),
            })
        })
        .collect::<wgnn::Result<Vec<_>>>()?;
    if let Some(gpu) = ctx.gpu_handle() {
        gpu.check()?;
    }
    Ok(Ran {
        outputs,
        nodes: p.graph.node_count(),
    })
}

/// The label of every kernel `build`'s graph runs on `ctx`, in order, from
/// its profile.
pub fn gpu_kernels(ctx: &Context, build: &Build<'_>, inputs: &[In]) -> Vec<String> {
    let p = Prepared::new(ctx, build, inputs, BuildOptions::default()).unwrap();
    let (ins, outs) = (
        Prepared::bindings(&p.inputs),
        Prepared::bindings(&p.outputs),
    );
    let profile = p.graph.profile(ctx, &ins, &outs).unwrap();
    profile
        .kernels
        .into_iter()
        .map(|(label, _)| label)
        .collect()
}

/// How far the GPU may be from the CPU reference, relative to the value
/// (absolute below 1).
pub fn tolerance(dt: DataType) -> f64 {
    match dt {
        DataType::Float32 => 1e-4,
        DataType::Float16 => 1e-2,
        DataType::Int32 | DataType::Uint8 => 0.0,
    }
}

/// Every element of `got` within `tol` of `want` (relative, absolute below
/// 1); where `want` is not finite, `got` must be the same.
pub fn assert_close(what: &str, dt: DataType, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (&g, &c)) in got.iter().zip(want).enumerate() {
        let ok = if c.is_finite() {
            (g - c).abs() <= tol * c.abs().max(1.0)
        } else {
            g == c || (g.is_nan() && c.is_nan())
        };
        assert!(
            ok,
            "{what} ({dt}): element {i}: got {g}, want {c} (tolerance {tol})"
        );
    }
}

/// A GPU context on the shared GPU and a CPU context.
pub struct Pair {
    pub gpu: Context,
    pub cpu: Context,
}

impl Pair {
    pub fn new() -> Pair {
        Pair {
            gpu: Context::gpu(&super::gpu()),
            cpu: Context::cpu(),
        }
    }

    /// Both contexts, named.
    pub fn both(&self) -> [(&'static str, &Context); 2] {
        [("gpu", &self.gpu), ("cpu", &self.cpu)]
    }

    /// The GPU result matches the CPU reference on these inputs, within
    /// [`tolerance`] of each output's type; returns the CPU outputs.
    pub fn check(&self, what: &str, build: &Build<'_>, inputs: &[In]) -> Vec<Output> {
        let g = run(&self.gpu, build, inputs).unwrap_or_else(|e| panic!("{what} on gpu: {e}"));
        let c = run(&self.cpu, build, inputs).unwrap_or_else(|e| panic!("{what} on cpu: {e}"));
        assert_eq!(g.outputs.len(), c.outputs.len());
        for (k, (go, co)) in g.outputs.iter().zip(&c.outputs).enumerate() {
            assert_close(
                &format!("{what} output {k}"),
                go.dt,
                &go.values,
                &co.values,
                tolerance(go.dt),
            );
        }
        c.outputs
    }

    /// Both contexts give these hand-computed outputs, within [`tolerance`].
    pub fn known(&self, what: &str, build: &Build<'_>, inputs: &[In], want: &[&[f64]]) {
        self.known_within(what, build, inputs, want, None);
    }

    /// Both contexts give these hand-computed outputs, within `tol` where
    /// given, else within [`tolerance`] of each output's type.
    pub fn known_within(
        &self,
        what: &str,
        build: &Build<'_>,
        inputs: &[In],
        want: &[&[f64]],
        tol: Option<f64>,
    ) {
        for (name, ctx) in self.both() {
            let ran = run(ctx, build, inputs).unwrap_or_else(|e| panic!("{what} on {name}: {e}"));
            assert_eq!(
                ran.outputs.len(),
                want.len(),
                "{what} on {name}: output count"
            );
            for (k, (out, w)) in ran.outputs.iter().zip(want).enumerate() {
                assert_close(
                    &format!("{what} on {name}, output {k}"),
                    out.dt,
                    &out.values,
                    w,
                    tol.unwrap_or_else(|| tolerance(out.dt)),
                );
            }
        }
    }
}
