//! `wgnn-bench interop`: the WebNN/WebGPU interop experiment (WebNN issue 33,
//! "buffer sharing between GPU and ML accelerator", 2019) on our stack. conv2d of an NHWC [1, 100, 100, 100] input with a 3x3 filter,
//! 100 -> 100 channels ("same" padding), then add (a per-channel bias) and
//! relu, four ways:
//!
//! 1. all in custom WGSL (a direct convolution, then add + relu);
//! 2. the conv2d in a wgnn graph, its output read back to the CPU and
//!    uploaded to custom WGSL for add + relu (the seed's ArrayBufferView);
//! 3. the same, but the graph's output tensor is rented to the custom WGSL
//!    with `export_to_gpu` (the seed's shared WebGPUBuffer);
//! 4. all in one graph (conv2d -> add -> relu; relu is fused into add).
//!
//! Wall ms is host time per iteration, waiting for the GPU each time (the
//! seed's numbers are such times, on its 2019 hardware). GPU ms is the sum of
//! the kernels' timestamps. Every variant's output is checked against the
//! CPU context running graph 4.

use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use wgnn::gpu::{Checks, Gpu, Specialization, TransferStats};
use wgnn::ml::*;

use crate::cli::{fail, timed_gpu, Json, Quick, QUICK_RUNS};
use crate::stamps::{encoder, max_abs_diff, median_min, submit, Stamps};

/// Seed 002's interop experiment: conv2d [1,100,100,100], 3x3 100->100,
/// then add + relu, in custom WGSL, through the CPU, through a rented
/// buffer, and all in the graph.
#[derive(clap::Args)]
#[command(mut_arg("quick", |a| a.help(quick_help())))]
pub struct Args {
    #[command(flatten)]
    quick: Quick,
    #[arg(long, default_value_t = 50)]
    iterations: usize,
    #[command(flatten)]
    json: Json,
}

/// `--quick`'s help, from the input it runs.
fn quick_help() -> String {
    let s = Shape::new(true);
    format!("A {}x{}x{} input", s.h, s.w, s.c)
}

impl Args {
    pub fn run(self) -> ExitCode {
        let iterations = self.quick.count(self.iterations, QUICK_RUNS);
        let gpu = match timed_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        let shape = Shape::new(self.quick.quick);
        let rows = match measure(&gpu, &shape, iterations) {
            Ok(r) => r,
            Err(e) => return fail("interop", e),
        };
        let ratio_wall = rows[2].wall_ms / rows[3].wall_ms;
        let ratio_gpu = rows[2].gpu_ms / rows[3].gpu_ms;
        if self.json.json {
            println!(
                "{}",
                json!({
                    "device": gpu.describe(),
                    "shape": shape.describe(),
                    "iterations": iterations,
                    "variants": rows.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                    "ratio_3_over_4_wall": ratio_wall,
                    "ratio_3_over_4_gpu": ratio_gpu,
                })
            );
            return ExitCode::SUCCESS;
        }
        println!("device: {}", gpu.describe());
        println!("{}, {iterations} iterations", shape.describe());
        println!(
            "{:<38} {:>9} {:>9} {:>9} {:>12} {:>12} {:>10}",
            "variant", "wall ms", "GPU ms", "seed ms", "up B/iter", "down B/iter", "max|diff|"
        );
        for r in &rows {
            let per = |v: u64| v as f64 / r.iterations as f64;
            println!(
                "{:<38} {:>9.3} {:>9.3} {:>9.2} {:>12.0} {:>12.0} {:>10.2e}",
                r.name,
                r.wall_ms,
                r.gpu_ms,
                r.seed_ms,
                per(r.moved.upload_bytes),
                per(r.moved.download_bytes),
                r.max_abs_diff
            );
        }
        println!("(3) / (4): wall {ratio_wall:.2}x, GPU {ratio_gpu:.2}x");
        ExitCode::SUCCESS
    }
}

/// The seed's times (ms), in variant order.
pub const SEED_MS: [f64; 4] = [37.93, 27.04, 9.18, 7.58];

pub const NAMES: [&str; 4] = [
    "(1) custom WGSL conv2d + add/relu",
    "(2) graph -> CPU -> custom add/relu",
    "(3) graph -> rented buffer -> custom",
    "(4) graph conv2d + add + relu",
];

#[derive(Clone, Debug)]
pub struct VariantResult {
    pub name: &'static str,
    pub wall_ms: f64,
    pub gpu_ms: f64,
    pub seed_ms: f64,
    /// Transfers per iteration.
    pub moved: TransferStats,
    pub iterations: usize,
    pub max_abs_diff: f32,
}

impl VariantResult {
    pub fn to_json(&self) -> serde_json::Value {
        let per = |v: u64| v as f64 / self.iterations as f64;
        json!({
            "variant": self.name,
            "wall_ms": self.wall_ms,
            "gpu_ms": self.gpu_ms,
            "seed_ms": self.seed_ms,
            "upload_bytes_per_iteration": per(self.moved.upload_bytes),
            "download_bytes_per_iteration": per(self.moved.download_bytes),
            "max_abs_diff_vs_cpu": self.max_abs_diff,
        })
    }
}

fn random(n: usize, seed: u32, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            ((s as f32 / u32::MAX as f32) - 0.5) * 2.0 * scale
        })
        .collect()
}

pub struct Shape {
    pub h: usize,
    pub w: usize,
    pub c: usize,
}

impl Shape {
    pub fn new(quick: bool) -> Shape {
        if quick {
            Shape {
                h: 12,
                w: 12,
                c: 16,
            }
        } else {
            Shape {
                h: 100,
                w: 100,
                c: 100,
            }
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "input [1,{},{},{}] nhwc, filter 3x3 {}->{}, float32",
            self.h, self.w, self.c, self.c, self.c
        )
    }
}

/// The experiment's input and weights (filter in OHWI, as the graphs take it).
struct Data {
    input: Vec<f32>,
    filter_ohwi: Vec<f32>,
    bias: Vec<f32>,
}

struct Setup {
    gpu: Gpu,
    ctx: Context,
    conv_only: Graph,
    fused: Graph,
    x: Tensor,
    conv_out: Tensor,
    fused_out: Tensor,
    conv_pipe: wgnn::gpu::live::ComputePipeline,
    add_pipe: wgnn::gpu::live::ComputePipeline,
    conv_bind: wgpu::BindGroup,
    /// (1): conv -> tmp -> add_relu -> out[0]; (2): staging -> out[1]; (3): rented -> out[2].
    tmp: wgpu::Buffer,
    staging: wgpu::Buffer,
    bias_buf: wgnn::gpu::live::Buffer,
    outs: [wgpu::Buffer; 3],
    add_binds: [wgpu::BindGroup; 2],
    groups: (u32, u32),
    stamps: Stamps,
}

fn graph(
    ctx: &Context,
    s: &Shape,
    filter_ohwi: &[f32],
    bias: Option<&[f32]>,
) -> wgnn::Result<Graph> {
    let b = GraphBuilder::new(ctx);
    let x = b.input("x", OperandDescriptor::f32([1, s.h, s.w, s.c]))?;
    let f = b.constant_f32(&[s.c, 3, 3, s.c], filter_ohwi)?;
    let mut o = Conv2dOptions::new();
    o.padding = [1; 4];
    o.input_layout = InputLayout::Nhwc;
    o.filter_layout = Conv2dFilterLayout::Ohwi;
    let mut y = b.conv2d(&x, &f, None, o)?;
    if let Some(bias) = bias {
        let bias = b.constant_f32(&[s.c], bias)?;
        y = b.add(&y, &bias)?;
        y = b.relu(&y)?;
    }
    b.build(&[("y", &y)])
}

impl Setup {
    fn new(gpu: &Gpu, s: &Shape) -> wgnn::Result<(Setup, Data)> {
        let n_out = s.h * s.w * s.c;
        let input = random(s.h * s.w * s.c, 11, 1.0);
        let filter_ohwi = random(s.c * 9 * s.c, 12, 1.0 / ((9 * s.c) as f32).sqrt());
        let bias = random(s.c, 13, 0.5);
        // HWIO for the custom kernel: f[ky][kx][ci][co] = ohwi[co][ky][kx][ci].
        let mut filter_hwio = vec![0.0; filter_ohwi.len()];
        for co in 0..s.c {
            for k in 0..9 {
                for ci in 0..s.c {
                    filter_hwio[(k * s.c + ci) * s.c + co] = filter_ohwi[(co * 9 + k) * s.c + ci];
                }
            }
        }
        let ctx = Context::gpu(gpu);
        let conv_only = graph(&ctx, s, &filter_ohwi, None)?;
        let fused = graph(&ctx, s, &filter_ohwi, Some(&bias))?;
        let desc = TensorDescriptor::new(DataType::Float32, [1, s.h, s.w, s.c]);
        let x = ctx.create_tensor(desc.clone().writable())?;
        ctx.write_tensor(&x, bytemuck::cast_slice(&input))?;
        let conv_out = ctx.create_tensor(desc.clone().readable().exportable_to_gpu())?;
        let fused_out = ctx.create_tensor(desc.readable())?;

        let storage = wgpu::BufferUsages::STORAGE;
        let x_buf = gpu.create_buffer_with_data(
            "interop x",
            bytemuck::cast_slice(&input),
            storage | wgpu::BufferUsages::COPY_DST,
        )?;
        let f_buf = gpu.create_buffer_with_data(
            "interop filter",
            bytemuck::cast_slice(&filter_hwio),
            storage,
        )?;
        let bias_buf =
            gpu.create_buffer_with_data("interop bias", bytemuck::cast_slice(&bias), storage)?;
        let bytes = (n_out * 4) as u64;
        let buffer = |label, usage| {
            gpu.scoped(label, || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes,
                    usage,
                    mapped_at_creation: false,
                })
            })
        };
        let tmp = buffer("interop conv out", storage)?;
        let staging = buffer("interop staging", storage | wgpu::BufferUsages::COPY_DST)?;
        let out_usage = storage | wgpu::BufferUsages::COPY_SRC;
        let outs = [
            buffer("interop out 1", out_usage)?,
            buffer("interop out 2", out_usage)?,
            buffer("interop out 3", out_usage)?,
        ];
        let pipeline = |entry: &str| {
            gpu.compute_pipeline(
                &format!("wgnn-bench interop {entry}"),
                &kernel_source(s, entry),
                Checks::All,
            )
        };
        let conv_pipe = pipeline("conv")?;
        let add_pipe = pipeline("add_relu")?;
        let conv_bind = bind(gpu, &conv_pipe, 0, [&x_buf, &f_buf, &tmp])?;
        let add_binds = [
            bind(gpu, &add_pipe, 3, [&tmp, &bias_buf, &outs[0]])?,
            bind(gpu, &add_pipe, 3, [&staging, &bias_buf, &outs[1]])?,
        ];
        let workgroups = n_out.div_ceil(64) as u32;
        let gx = workgroups.min(65535);
        let groups = (gx, workgroups.div_ceil(gx));
        let setup = Setup {
            gpu: gpu.clone(),
            ctx,
            conv_only,
            fused,
            x,
            conv_out,
            fused_out,
            conv_pipe,
            add_pipe,
            conv_bind,
            tmp,
            staging,
            bias_buf,
            outs,
            add_binds,
            groups,
            stamps: Stamps::new(gpu, 2)?,
        };
        Ok((
            setup,
            Data {
                input,
                filter_ohwi,
                bias,
            },
        ))
    }

    fn pass(
        &self,
        enc: &mut wgpu::CommandEncoder,
        pipe: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        stamp: Option<u32>,
    ) {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgnn-bench interop"),
            timestamp_writes: stamp.map(|p| self.stamps.pass_writes(p)),
        });
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, bind, &[]);
        pass.dispatch_workgroups(self.groups.0, self.groups.1, 1);
    }

    fn run_graph(&self, fused: bool, profile: bool) -> wgnn::Result<f64> {
        let (g, out) = if fused {
            (&self.fused, &self.fused_out)
        } else {
            (&self.conv_only, &self.conv_out)
        };
        if profile {
            Ok(g.profile(&self.ctx, &[("x", &self.x)], &[("y", out)])?
                .total_ms)
        } else {
            self.ctx.dispatch(g, &[("x", &self.x)], &[("y", out)])?;
            Ok(0.0)
        }
    }

    /// One iteration of `variant` (0-based), waiting for the GPU at the end;
    /// with `profile`, returns its kernels' GPU ms.
    fn iteration(&self, variant: usize, profile: bool) -> wgnn::Result<f64> {
        let gpu = &self.gpu;
        let stamp = |p| profile.then_some(p);
        let mut graph_ms = 0.0;
        let mut stamped = 0;
        match variant {
            0 => {
                let mut enc = encoder(gpu);
                self.pass(&mut enc, &self.conv_pipe, &self.conv_bind, stamp(0));
                self.pass(&mut enc, &self.add_pipe, &self.add_binds[0], stamp(1));
                submit(gpu, enc)?;
                stamped = 2;
            }
            1 => {
                graph_ms = self.run_graph(false, profile)?;
                let bytes = self.ctx.read_tensor_blocking(&self.conv_out)?;
                gpu.upload_buffer(&self.staging, 0, &bytes)?;
                let mut enc = encoder(gpu);
                self.pass(&mut enc, &self.add_pipe, &self.add_binds[1], stamp(0));
                submit(gpu, enc)?;
                stamped = 1;
            }
            2 => {
                graph_ms = self.run_graph(false, profile)?;
                let rented = self.ctx.export_to_gpu(&self.conv_out)?;
                let bind = bind(
                    gpu,
                    &self.add_pipe,
                    3,
                    [rented.buffer(), &self.bias_buf, &self.outs[2]],
                )?;
                let mut enc = encoder(gpu);
                self.pass(&mut enc, &self.add_pipe, &bind, stamp(0));
                submit(gpu, enc)?;
                rented.give_back();
                stamped = 1;
            }
            _ => graph_ms = self.run_graph(true, profile)?,
        }
        gpu.wait_idle()?;
        if !profile {
            return Ok(0.0);
        }
        let custom: f64 = if stamped > 0 {
            self.stamps.read_ms()?[..stamped].iter().sum()
        } else {
            0.0
        };
        Ok(graph_ms + custom)
    }

    fn output(&self, variant: usize) -> wgnn::Result<Vec<f32>> {
        if variant == 3 {
            return self.ctx.read_f32(&self.fused_out);
        }
        let b = &self.outs[variant];
        let bytes = self.gpu.download_buffer(b, 0, b.size())?.wait()?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }
}

/// The custom kernel `entry` ("conv" or "add_relu") of interop.wgsl for
/// shape `s`. The shape is compiled in, not a uniform: this is the
/// application's own kernel for the experiment's one shape, and variant
/// (1)'s time is compared with the seed's, so its code stays what it was
/// (with pipeline-overridable constants, also compiled in).
fn kernel_source(s: &Shape, entry: &str) -> String {
    let entry_point = format!(
        "@compute @workgroup_size(64)\nfn main(\
         @builtin(global_invocation_id) gid: vec3<u32>, \
         @builtin(num_workgroups) groups: vec3<u32>) {{ {entry}(gid, groups); }}\n"
    );
    Specialization::new()
        .u32("H", s.h as u32)
        .u32("W", s.w as u32)
        .u32("CI", s.c as u32)
        .u32("CO", s.c as u32)
        .code(&entry_point)
        .module(&[], include_str!("interop.wgsl"))
}

/// A bind group of three storage buffers at bindings first..first+3.
fn bind(
    gpu: &Gpu,
    pipe: &wgpu::ComputePipeline,
    first: u32,
    buffers: [&wgpu::Buffer; 3],
) -> wgnn::Result<wgpu::BindGroup> {
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: first + i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    gpu.scoped("interop bind group", || {
        gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("wgnn-bench interop"),
            layout: &pipe.get_bind_group_layout(0),
            entries: &entries,
        })
    })
}

/// Runs the four variants: warm-ups, `iterations` timed on the host (with
/// the transfers counted), `iterations` profiled, then the check.
fn measure(gpu: &Gpu, shape: &Shape, iterations: usize) -> wgnn::Result<Vec<VariantResult>> {
    let (setup, data) = Setup::new(gpu, shape)?;
    // The reference: graph 4 on the CPU context.
    let cpu = Context::cpu();
    let reference = {
        let g = graph(&cpu, shape, &data.filter_ohwi, Some(&data.bias))?;
        let desc = TensorDescriptor::new(DataType::Float32, [1, shape.h, shape.w, shape.c]);
        let x = cpu.create_tensor(desc.clone().writable())?;
        let y = cpu.create_tensor(desc.readable())?;
        cpu.write_tensor(&x, bytemuck::cast_slice(&data.input))?;
        cpu.dispatch(&g, &[("x", &x)], &[("y", &y)])?;
        cpu.read_f32(&y)?
    };
    cpu.destroy();
    let mut results = Vec::new();
    for variant in 0..4 {
        for _ in 0..3 {
            setup.iteration(variant, false)?;
        }
        let before = gpu.transfers();
        let mut walls = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let t = Instant::now();
            setup.iteration(variant, false)?;
            walls.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let moved = gpu.transfers().since(&before);
        let mut gpu_ms = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            gpu_ms.push(setup.iteration(variant, true)?);
        }
        let out = setup.output(variant)?;
        results.push(VariantResult {
            name: NAMES[variant],
            wall_ms: median_min(&walls).0,
            gpu_ms: median_min(&gpu_ms).0,
            seed_ms: SEED_MS[variant],
            moved,
            iterations,
            max_abs_diff: max_abs_diff(&out, &reference).0,
        });
    }
    // Silence "never read" for buffers kept only to stay bound.
    let _ = &setup.tmp;
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::naga;

    #[test]
    fn kernels_validate_and_translate_to_spirv() {
        for quick in [true, false] {
            for entry in ["conv", "add_relu"] {
                let src = kernel_source(&Shape::new(quick), entry);
                let module = naga::front::wgsl::parse_str(&src)
                    .unwrap_or_else(|e| panic!("{entry}: {}", e.emit_to_string(&src)));
                let info = naga::valid::Validator::new(
                    naga::valid::ValidationFlags::all(),
                    naga::valid::Capabilities::empty(),
                )
                .validate(&module)
                .unwrap_or_else(|e| panic!("{entry}: {}", e.emit_to_string(&src)));
                naga::back::spv::write_vec(&module, &info, &Default::default(), None)
                    .unwrap_or_else(|e| panic!("{entry}: {e}"));
                assert!(!src.contains("override"), "{src}");
            }
        }
    }
}
