//! `wgnn-bench tensor-cores`: the throughput wgpu's cooperative matrices
//! (16x16x16 float16 products into float32 sums, the tensor cores) reach on
//! this adapter, as ceilings for the tensor-core conv2d. Each subgroup keeps
//! NA x NB accumulators and runs a fixed number of steps of NA x NB products,
//! its operands either kept in registers (the products alone), loaded every
//! step from a small, cache-resident buffer as contiguous 16 x 16 blocks, or
//! loaded with rows 64 elements apart (an NHWC tensor of 64 channels: what the
//! conv2d reads its A blocks from), or with A from workgroup memory, rows 24
//! or 16 elements apart (how the staged conv2d reads it). Times are GPU timestamps around one
//! dispatch of 16 workgroups per multiprocessor-sized batch.

use std::process::ExitCode;

use wgnn::gpu::Gpu;

use crate::cli::{open_gpu, verdict};
use crate::stamps::{encoder, median_min, submit, Stamps};

/// Ceilings of the tensor cores (cooperative matrices, 16x16x16 float16
/// into float32) through wgpu: products alone, and with operands loaded
/// contiguously or with an NHWC tensor's row stride (GPU timestamps).
#[derive(clap::Args)]
pub struct Args {
    /// Timed dispatches per variant, after two warm-ups.
    #[arg(long, default_value_t = 10)]
    iterations: u32,
}

impl Args {
    pub fn run(self) -> ExitCode {
        let gpu = match open_gpu() {
            Ok(g) => g,
            Err(code) => return code,
        };
        verdict(ceilings(&gpu, self.iterations.max(1)).map(|()| true))
    }
}

const STEPS: u32 = 256;
const WORKGROUPS: u32 = 2112;

/// How a variant gets its operands each step.
#[derive(Clone, Copy)]
enum Operands {
    Registers,
    Contiguous,
    RowStride64,
    Workgroup,
    Workgroup16,
}

impl Operands {
    fn name(self) -> &'static str {
        match self {
            Operands::Registers => "registers",
            Operands::Contiguous => "contiguous loads",
            Operands::RowStride64 => "A rows 64 apart",
            Operands::Workgroup => "A from workgroup",
            Operands::Workgroup16 => "A workgroup, 16",
        }
    }

    fn workgroup(self) -> bool {
        matches!(self, Operands::Workgroup | Operands::Workgroup16)
    }
}

fn shader(na: usize, nb: usize, operands: Operands, wg: u32) -> String {
    // 2 x 64 rows of 24 (what the subgroups of a workgroup read),
    // zero-initialised: only the loads' speed matters.
    let shared = match operands.workgroup() {
        true => "var<workgroup> wa: array<f16, 3072>;\n",
        false => "",
    };
    let blocks = || (0..na).flat_map(move |i| (0..nb).map(move |j| (i, j)));
    let sums: String = blocks()
        .map(|(i, j)| {
            let at = (i * nb + j) * 256;
            format!("    var c{i}{j} = coopLoadT<coop_mat16x16<f32, C>>(&out[{at}u], 16u);\n")
        })
        .collect();
    let products: String = blocks()
        .map(|(i, j)| format!("        c{i}{j} = coopMultiplyAdd(a{i}, b{j}, c{i}{j});\n"))
        .collect();
    let stores: String = blocks()
        .map(|(i, j)| {
            let n = i * nb + j;
            format!("    coopStoreT(c{i}{j}, &out[(wid.x * 64u + sg * 16u + {n}u) % 4096u * 256u], 16u);\n")
        })
        .collect();
    let (before, each_step) = match operands {
        Operands::Registers => (loads(na, nb, operands, "    ", "base"), String::new()),
        _ => (
            String::new(),
            "        let o = (it % 16u) * 1024u + base;\n".to_string()
                + &loads(na, nb, operands, "        ", "o"),
        ),
    };
    format!(
        "enable f16;\nenable wgpu_cooperative_matrix;\n\
         @group(0) @binding(0) var<storage, read> ab: array<f16>;\n\
         @group(0) @binding(1) var<storage, read_write> out: array<f32>;\n\
         {shared}@compute @workgroup_size({wg})\n\
         fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{\n\
         \x20   let sg = lid / 32u;\n    let base = (sg * 7u) % 64u * 256u;\n\
         {sums}{before}\
         \x20   for (var it = 0u; it < {STEPS}u; it++) {{\n{each_step}{products}    }}\n\
         {stores}}}\n"
    )
}

/// The statements that load the A and B blocks at `at` (A from workgroup
/// memory for the workgroup variants), one per line after `indent`.
fn loads(na: usize, nb: usize, operands: Operands, indent: &str, at: &str) -> String {
    let (a_rows, a_stride) = match operands {
        Operands::RowStride64 => (64, "64u"),
        Operands::Workgroup => (24, "24u"),
        _ => (16, "16u"),
    };
    let (buffer, a_at) = match operands.workgroup() {
        true => ("wa", "(it % 2u) * 1536u"),
        false => ("ab", at),
    };
    let a = (0..na).map(|i| {
        let offset = i * 16 * a_rows;
        format!(
            "{indent}let a{i} = coopLoadT<coop_mat16x16<f16, A>>(&{buffer}[{a_at} + {offset}u], {a_stride});\n"
        )
    });
    let b = (0..nb).map(|j| {
        let offset = 65536 + j * 256;
        format!(
            "{indent}let b{j} = coopLoadT<coop_mat16x16<f16, B>>(&ab[{at} + {offset}u], 16u);\n"
        )
    });
    a.chain(b).collect()
}

fn ceilings(gpu: &Gpu, iterations: u32) -> wgnn::Result<()> {
    if !gpu.has_f16_tensor_cores() {
        return Err(wgnn::Error::Invalid(format!(
            "{} offers no 16x16x16 float16 cooperative matrices (tensor cores) to wgpu",
            gpu.info().name
        )));
    }
    let device = gpu.device();
    let buffer = |size: u64, label: &str| {
        gpu.scoped(label, || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        })
    };
    // Operands: 128 K float16 (A blocks, then B blocks from 64 K); sums:
    // 4096 blocks of 16 x 16 float32, written once at the end.
    let ab = buffer(2 * 131072, "tensor-core operands")?;
    let out = buffer(4 * 4096 * 256, "tensor-core sums")?;
    println!("{}", gpu.info().name);
    println!(
        "{:<8} {:<18} {:>9} {:>10} {:>10} {:>9}",
        "blocks", "operands", "subgroups", "median ms", "min ms", "TFLOP/s"
    );
    for (na, nb, operands, wg) in [
        (4, 4, Operands::Registers, 32),
        (4, 4, Operands::Registers, 128),
        (4, 4, Operands::Contiguous, 32),
        (4, 4, Operands::Contiguous, 128),
        (4, 4, Operands::RowStride64, 32),
        (4, 4, Operands::RowStride64, 128),
        (4, 4, Operands::Workgroup, 32),
        (4, 4, Operands::Workgroup, 128),
        (4, 4, Operands::Workgroup16, 32),
        (4, 4, Operands::Workgroup16, 128),
    ] {
        let source = shader(na, nb, operands, wg);
        let pipeline = gpu.scoped("tensor-core pipeline", || {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("wgnn-bench tensor cores"),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("wgnn-bench tensor cores"),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        })?;
        let group = gpu.scoped("tensor-core bind group", || {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipeline.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: ab.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: out.as_entire_binding(),
                    },
                ],
            })
        })?;
        // Two warm-ups, then the timed dispatches, one pair each.
        let stamps = Stamps::new(gpu, iterations + 2)?;
        let mut enc = encoder(gpu);
        for pair in 0..iterations + 2 {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn-bench tensor cores"),
                timestamp_writes: Some(stamps.pass_writes(pair)),
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(WORKGROUPS, 1, 1);
        }
        submit(gpu, enc)?;
        let ms = stamps.read_ms()?;
        let (median, min) = median_min(&ms[2..]);
        let subgroups = WORKGROUPS * wg / 32;
        let flops = 2.0 * 4096.0 * (na * nb) as f64 * f64::from(STEPS) * f64::from(subgroups);
        println!(
            "{:<8} {:<18} {:>9} {:>10.4} {:>10.4} {:>9.0}",
            format!("{na}x{nb}"),
            operands.name(),
            format!("{} per wg", wg / 32),
            median,
            min,
            flops / (median * 1e-3) / 1e12
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{shader, Operands};
    use wgpu::naga;

    /// No CI adapter has cooperative matrices, so the variants are checked
    /// the way the library's kernels are: naga's validator and SPIR-V writer.
    #[test]
    fn every_variant_validates_and_translates_to_spirv() {
        let caps = naga::valid::Capabilities::SHADER_FLOAT16
            | naga::valid::Capabilities::COOPERATIVE_MATRIX;
        for operands in [
            Operands::Registers,
            Operands::Contiguous,
            Operands::RowStride64,
            Operands::Workgroup,
            Operands::Workgroup16,
        ] {
            for wg in [32, 128] {
                let source = shader(4, 4, operands, wg);
                let module = naga::front::wgsl::parse_str(&source)
                    .unwrap_or_else(|e| panic!("{}\n{source}", e.emit_to_string(&source)));
                let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                    .validate(&module)
                    .unwrap_or_else(|e| panic!("{e:?}\n{source}"));
                naga::back::spv::write_vec(&module, &info, &Default::default(), None)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
