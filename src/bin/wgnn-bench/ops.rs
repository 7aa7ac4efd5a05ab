//! `wgnn-bench ops`: GPU time per operator (timestamp queries), median of
//! many dispatches, with the arithmetic or memory rate it implies.

use std::process::ExitCode;

use wgnn::gpu::Gpu;
use wgnn::ml::*;

use crate::cli::{timed_gpu, Json, Quick, EXIT_FAILED};

/// GPU time per operator (median of timestamped dispatches).
#[derive(clap::Args)]
#[command(mut_arg("quick", |a| a.help("Shrink every shape (for software adapters and smoke tests)")))]
pub struct Args {
    #[command(flatten)]
    quick: Quick,
    /// Timed dispatches per case, after 200 ms of warm-up (at least two).
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    #[command(flatten)]
    json: Json,
    /// Only cases whose name contains this.
    #[arg(long)]
    filter: Option<String>,
}

impl Args {
    pub fn run(self) -> ExitCode {
        let iterations = self.iterations.max(1);
        let gpu = match timed_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        let f16 = gpu.has(wgpu::Features::SHADER_F16);
        let cases: Vec<_> = cases(self.quick.quick, f16)
            .into_iter()
            .filter(|c| {
                self.filter
                    .as_deref()
                    .is_none_or(|f| c.name.contains(f) || c.shape.contains(f))
            })
            .collect();
        if !self.json.json {
            println!("device: {}", gpu.describe());
            println!(
                "{:<28} {:<34} {:>10} {:>10} {:>10} {:>9} {:>10}",
                "op", "shape", "median ms", "min ms", "GFLOP/s", "GB/s", "rel diff"
            );
        }
        let mut rows = Vec::new();
        for case in &cases {
            match measure(&gpu, case, iterations) {
                Ok(r) => {
                    if !self.json.json {
                        println!(
                            "{:<28} {:<34} {:>10.4} {:>10.4} {:>10} {:>9.1} {:>10.2e}",
                            r.name,
                            r.shape,
                            r.median_ms,
                            r.min_ms,
                            r.gflops.map_or("-".into(), |g| format!("{g:.0}")),
                            r.gbps,
                            r.rel_diff
                        );
                    }
                    rows.push(r);
                }
                Err(e) => {
                    eprintln!("error: {} {}: {e}", case.name, case.shape);
                    return ExitCode::from(EXIT_FAILED);
                }
            }
        }
        if self.json.json {
            let items: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "{{\"op\":{:?},\"shape\":{:?},\"median_ms\":{},\"min_ms\":{},\"gflops\":{},\"gbps\":{},\"rel_diff\":{}}}",
                        r.name,
                        r.shape,
                        r.median_ms,
                        r.min_ms,
                        r.gflops.map_or("null".into(), |g| g.to_string()),
                        r.gbps,
                        r.rel_diff
                    )
                })
                .collect();
            println!(
                "{{\"device\":{:?},\"ops\":[{}]}}",
                gpu.describe(),
                items.join(",")
            );
        }
        ExitCode::SUCCESS
    }
}

/// Adds the benchmarked op to a graph whose input is `x`.
type BuildFn = Box<dyn Fn(&GraphBuilder, &Operand) -> wgnn::Result<Operand>>;

pub struct OpCase {
    pub name: String,
    pub shape: String,
    /// Floating-point operations of one run (0 for data movement).
    pub flops: f64,
    /// Bytes read and written by one run (minimum traffic).
    pub bytes: f64,
    build: BuildFn,
    input: OperandDescriptor,
}

pub struct OpResult {
    pub name: String,
    pub shape: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub gflops: Option<f64>,
    pub gbps: f64,
    /// max |GPU - CPU context| over max |CPU context|, same input.
    pub rel_diff: f32,
}

fn random(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32) - 0.5
        })
        .collect()
}

fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], seed: u32) -> wgnn::Result<Operand> {
    let n: usize = shape.iter().product();
    let v = random(n, seed);
    match dt {
        DataType::Float16 => {
            let h: Vec<half::f16> = v.iter().map(|&x| half::f16::from_f32(x * 0.1)).collect();
            b.constant(OperandDescriptor::new(dt, shape), bytemuck::cast_slice(&h))
        }
        _ => b.constant(OperandDescriptor::new(dt, shape), bytemuck::cast_slice(&v)),
    }
}

/// A conv2d case: NHWC/OHWI (TFLite's layout, else NCHW/OIHW), input
/// height and width, input and output channels, kernel size, stride,
/// groups, and what the shape is from.
type Conv = (
    bool,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    &'static str,
);

fn conv(dt: DataType, case: Conv) -> OpCase {
    let (nhwc, h, w, ic, oc, k, stride, groups, tag) = case;
    let pad = k / 2;
    let oh = (h + 2 * pad - k) / stride + 1;
    let ow = (w + 2 * pad - k) / stride + 1;
    let input = if nhwc {
        OperandDescriptor::new(dt, [1, h, w, ic])
    } else {
        OperandDescriptor::new(dt, [1, ic, h, w])
    };
    let flops = 2.0 * (oh * ow * oc * (ic / groups) * k * k) as f64;
    let es = dt.byte_size() as f64;
    let bytes = es * ((h * w * ic) + (oh * ow * oc) + (oc * (ic / groups) * k * k)) as f64;
    OpCase {
        name: format!(
            "conv2d {k}x{k}{} {tag}",
            if stride > 1 { " s2" } else { "" }
        ),
        shape: format!(
            "{}x{}x{ic}->{oc} {} {}",
            h,
            w,
            if nhwc { "nhwc" } else { "nchw" },
            dt
        ),
        flops,
        bytes,
        input,
        build: Box::new(move |b, x| {
            let mut o = Conv2dOptions::new();
            o.padding = [pad; 4];
            o.strides = [stride; 2];
            o.groups = groups;
            let filter = if nhwc {
                o.input_layout = InputLayout::Nhwc;
                o.filter_layout = Conv2dFilterLayout::Ohwi;
                constant(b, dt, &[oc, k, k, ic / groups], 1)?
            } else {
                constant(b, dt, &[oc, ic / groups, k, k], 1)?
            };
            let bias = constant(b, dt, &[oc], 2)?;
            b.conv2d(x, &filter, Some(&bias), o)
        }),
    }
}

/// `case` (an NHWC conv2d of `dt` onto `out` = [h, w, c]) plus a residual
/// read from memory, which fusion folds into the convolution's epilogue
/// (ESRGAN-slim's residual blocks).
fn with_residual(case: OpCase, dt: DataType, out: [usize; 3]) -> OpCase {
    let [h, w, c] = out;
    let OpCase {
        name,
        shape,
        flops,
        bytes,
        build,
        input,
    } = case;
    OpCase {
        name: format!("{name} res"),
        shape,
        flops,
        bytes: bytes + (dt.byte_size() * h * w * c) as f64,
        input,
        build: Box::new(move |b, x| {
            let y = build(b, x)?;
            let r = constant(b, dt, &[1, h, w, c], 3)?;
            b.add(&y, &r)
        }),
    }
}

/// A batched product x[batch, m, k] x w[k, n] of `dt` (an attention's or a
/// transformer MLP's matmul; float16 takes the tensor cores where the
/// adapter has them), or x times its own transpose (`self_t`: Q K^T, B
/// read in place through its strides).
fn matmul(dt: DataType, [batch, m, k, n]: [usize; 4], self_t: bool) -> OpCase {
    let n = if self_t { m } else { n };
    let e = dt.byte_size() as f64;
    OpCase {
        name: if self_t { "matmul x x^T" } else { "matmul" }.into(),
        shape: format!("{batch}x{m}x{k} * {k}x{n} {dt}"),
        flops: 2.0 * (batch * m * n * k) as f64,
        bytes: e * (batch * m * k + if self_t { 0 } else { k * n } + batch * m * n) as f64,
        input: OperandDescriptor::new(dt, [batch, m, k]),
        build: Box::new(move |b, x| {
            if self_t {
                return b.matmul(x, &b.transpose(x, Some(&[0, 2, 1]))?);
            }
            let w = constant(b, dt, &[k, n], 4)?;
            b.matmul(x, &w)
        }),
    }
}

fn elementwise(h: usize, w: usize, c: usize) -> OpCase {
    let n = h * w * c;
    OpCase {
        name: "add + relu".into(),
        shape: format!("{h}x{w}x{c} float32"),
        flops: 0.0,
        bytes: 12.0 * n as f64,
        input: OperandDescriptor::f32([1, h, w, c]),
        build: Box::new(move |b, x| {
            let other = constant(b, DataType::Float32, &[1, h, w, c], 3)?;
            let s = b.add(x, &other)?;
            b.relu(&s)
        }),
    }
}

fn resample(h: usize, w: usize, c: usize) -> OpCase {
    OpCase {
        name: "resample2d linear x2".into(),
        shape: format!("{h}x{w}x{c} nhwc float32"),
        flops: 0.0,
        bytes: 4.0 * (h * w * c + 4 * h * w * c) as f64,
        input: OperandDescriptor::f32([1, h, w, c]),
        build: Box::new(|b, x| {
            b.resample2d(
                x,
                Resample2dOptions {
                    mode: InterpolationMode::Linear,
                    scales: [2.0, 2.0],
                    axes: [1, 2],
                    ..Default::default()
                },
            )
        }),
    }
}

/// The float32 conv2d cases, at the sizes --quick shrinks.
const F32_CONVS: [Conv; 16] = [
    (false, 512, 512, 64, 64, 3, 1, 1, "64->64"),
    (true, 512, 512, 64, 64, 3, 1, 1, "64->64"),
    // selfie segmentation (MobileNetV3-like, NHWC, 256x256 input)
    (true, 256, 256, 3, 16, 3, 2, 1, "selfie stem"),
    (true, 128, 128, 16, 16, 3, 1, 16, "selfie depthwise"),
    (true, 64, 64, 16, 72, 1, 1, 1, "selfie 1x1 expand"),
    (true, 32, 32, 96, 96, 5, 1, 96, "selfie depthwise 5x5"),
    // ESRGAN-slim (NHWC, 64 channels) at 960x540
    (true, 540, 960, 64, 64, 3, 1, 1, "esrgan body"),
    (true, 540, 960, 3, 64, 3, 1, 1, "esrgan head"),
    // Its narrow convolutions: 64 -> 4 in each block (conv2d_split),
    // the upsampler's 64 -> 32 (the vec4 GEMM's 32-channel tile) and
    // 32 -> 12 (conv2d_split), the last (SR) 12 -> 3 at the x2 output
    // size (conv2d_narrow).
    (true, 540, 960, 64, 4, 3, 1, 1, "esrgan 64->4"),
    (true, 540, 960, 64, 32, 3, 1, 1, "esrgan 64->32"),
    (true, 540, 960, 32, 12, 3, 1, 1, "esrgan 32->12"),
    (true, 1080, 1920, 12, 3, 3, 1, 1, "esrgan sr"),
    // ResNet-50's last stage (ONNX models come in NCHW): a 7x7 map,
    // one tile of pixels over a long reduction (conv2d/gemm_split.rs).
    (false, 7, 7, 512, 512, 3, 1, 1, "resnet 7x7"),
    (true, 7, 7, 512, 512, 3, 1, 1, "resnet 7x7"),
    (false, 7, 7, 2048, 512, 1, 1, 1, "resnet 7x7"),
    (true, 7, 7, 2048, 512, 1, 1, 1, "resnet 7x7"),
];

/// The float16 conv2d cases after ESRGAN-slim's body, at the sizes --quick
/// shrinks.
const F16_CONVS: [Conv; 5] = [
    (true, 540, 960, 64, 64, 5, 1, 1, "esrgan 5x5"),
    (true, 1080, 1920, 12, 3, 3, 1, 1, "esrgan sr"),
    // The narrow ones in float16: conv2d_split before the tensor cores
    // for 64 -> 4 and 32 -> 12, the tensor cores for 64 -> 32.
    (true, 540, 960, 64, 4, 3, 1, 1, "esrgan 64->4"),
    (true, 540, 960, 64, 32, 3, 1, 1, "esrgan 64->32"),
    (true, 540, 960, 32, 12, 3, 1, 1, "esrgan 32->12"),
];

/// Odd shapes, so that `rel diff` checks the tensor-core kernels' edges:
/// rows that are not whole 32-pixel runs, stride 2, two groups, output
/// channels that pad a 64-channel tile; then two small maps whose rows'
/// reductions the staged kernel splits over 4 subgroups (27x45, and 41x39
/// at stride 2 onto 21x20), and a 1x1 whose tiles' reductions the direct
/// kernel splits over 8 (13x37, 80 outputs). Their sizes stay with --quick.
const ODD_F16_CONVS: [Conv; 5] = [
    (true, 37, 45, 32, 96, 3, 2, 2, "odd"),
    (true, 29, 71, 48, 48, 5, 1, 1, "odd"),
    (true, 27, 45, 64, 96, 3, 1, 1, "odd split"),
    (true, 41, 39, 128, 112, 3, 2, 1, "odd split"),
    (true, 13, 37, 256, 80, 1, 1, 1, "odd split"),
];

/// The benchmark's cases; `quick` shrinks every shape so that the table can
/// be produced on a software adapter in seconds.
pub fn cases(quick: bool, f16: bool) -> Vec<OpCase> {
    let s = |n: usize| if quick { (n / 16).max(3) } else { n };
    let shrunk = |(nhwc, h, w, ic, oc, k, stride, groups, tag): Conv| {
        (nhwc, s(h), s(w), ic, oc, k, stride, groups, tag)
    };
    let mut v: Vec<OpCase> = F32_CONVS
        .into_iter()
        .map(|c| conv(DataType::Float32, shrunk(c)))
        .collect();
    v.push(elementwise(s(1080), s(1920), 4));
    v.push(resample(s(128), s(128), 16));
    if f16 {
        let dt = DataType::Float16;
        v.push(conv(
            dt,
            shrunk((false, 512, 512, 64, 64, 3, 1, 1, "64->64")),
        ));
        v.push(conv(
            dt,
            shrunk((true, 512, 512, 64, 64, 3, 1, 1, "64->64")),
        ));
        let body = || conv(dt, shrunk((true, 540, 960, 64, 64, 3, 1, 1, "esrgan body")));
        v.push(body());
        v.push(with_residual(body(), dt, [s(540), s(960), 64]));
        v.extend(F16_CONVS.into_iter().map(|c| conv(dt, shrunk(c))));
        v.extend(ODD_F16_CONVS.into_iter().map(|c| conv(dt, c)));
    }
    // YOLO11's C2PSA attention at 640 (400 tokens, 2 heads of 64), a ViT-B
    // MLP's first matmul (197 tokens, 768 -> 3072), and odd edges.
    let products = [
        ([2, s(400), 64, 0], true),
        ([1, s(197), s(768), s(3072)], false),
        ([3, 67, 33, 65], false),
        ([2, 37, 19, 0], true),
    ];
    for dt in [DataType::Float32, DataType::Float16]
        .into_iter()
        .filter(|&d| f16 || d == DataType::Float32)
    {
        v.extend(
            products
                .iter()
                .map(|&(shape, self_t)| matmul(dt, shape, self_t)),
        );
    }
    v
}

/// The case's graph on `ctx`, with its input tensor written and an output
/// tensor to dispatch into.
fn prepare(ctx: &Context, case: &OpCase) -> wgnn::Result<(Graph, Tensor, Tensor)> {
    let b = GraphBuilder::new(ctx);
    let x = b.input("x", case.input.clone())?;
    let y = (case.build)(&b, &x)?;
    let out_desc = y.descriptor().clone();
    let graph = b.build(&[("y", &y)])?;
    let input = ctx.create_tensor(
        TensorDescriptor::new(case.input.data_type, case.input.shape.clone()).writable(),
    )?;
    let output = ctx.create_tensor(
        TensorDescriptor::new(out_desc.data_type, out_desc.shape.clone()).readable(),
    )?;
    let n = case.input.element_count();
    let data: Vec<u8> = match case.input.data_type {
        DataType::Float16 => random(n, 7)
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
            .collect(),
        _ => bytemuck::cast_slice(&random(n, 7)).to_vec(),
    };
    ctx.write_tensor(&input, &data)?;
    Ok((graph, input, output))
}

/// The output of one dispatch, as f32 (float16 widened).
fn output_values(
    ctx: &Context,
    graph: &Graph,
    input: &Tensor,
    output: &Tensor,
) -> wgnn::Result<Vec<f32>> {
    ctx.dispatch(graph, &[("x", input)], &[("y", output)])?;
    let bytes = ctx.read_tensor_blocking(output)?;
    Ok(match output.data_type() {
        DataType::Float16 => bytemuck::pod_collect_to_vec::<u8, half::f16>(&bytes)
            .iter()
            .map(|v| v.to_f32())
            .collect(),
        _ => bytemuck::pod_collect_to_vec(&bytes),
    })
}

fn measure(gpu: &Gpu, case: &OpCase, iterations: usize) -> wgnn::Result<OpResult> {
    let ctx = Context::gpu(gpu);
    let (graph, input, output) = prepare(&ctx, case)?;
    // Warm up for a fixed time, not a count: after the CPU-side work of the
    // previous case the GPU has clocked down, and two runs of a 0.07 ms
    // kernel do not bring it back (add + relu read 3.4x slower so).
    let warm = std::time::Instant::now();
    let mut warmups = 0;
    while warmups < 2 || warm.elapsed() < std::time::Duration::from_millis(200) {
        graph.profile(&ctx, &[("x", &input)], &[("y", &output)])?;
        warmups += 1;
    }
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let p = graph.profile(&ctx, &[("x", &input)], &[("y", &output)])?;
        times.push(p.total_ms);
    }
    // Every timed kernel is also checked: a fast wrong kernel shows here.
    // After the timing, so that the GPU does not idle (and clock down)
    // while the CPU computes the reference.
    let cpu = Context::cpu();
    let (cpu_graph, cpu_input, cpu_output) = prepare(&cpu, case)?;
    let want = output_values(&cpu, &cpu_graph, &cpu_input, &cpu_output)?;
    let got = output_values(&ctx, &graph, &input, &output)?;
    let (diff, scale) = crate::stamps::max_abs_diff(&got, &want);
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    Ok(OpResult {
        name: case.name.clone(),
        shape: case.shape.clone(),
        median_ms: median,
        min_ms: times[0],
        gflops: (case.flops > 0.0).then(|| case.flops / median / 1e6),
        gbps: case.bytes / median / 1e6,
        rel_diff: diff / scale.max(f32::MIN_POSITIVE),
    })
}
