//! The GPU back end: every op is a WGSL compute kernel (each `.wgsl` beside
//! the Rust file that lowers it). `GpuPlan::compile` does all allocation and
//! shader compilation; a dispatch takes the kernels' command buffer encoded
//! ahead ([`crate::gpu::Ahead`]), encodes the copies in and out around it
//! and submits.

mod arg_min_max;
mod backend;
mod broadcast;
mod compare;
mod concat;
mod concat_writes;
mod conv2d;
mod conv_transpose2d;
mod elementwise;
mod gather;
mod gemm;
mod lower;
mod matmul;
mod normalization;
mod pad;
mod pointwise;
mod pool2d;
mod prelu;
mod reduce;
mod resample2d;
mod slice;
mod slice_reads;
mod softmax;
mod split;
mod squeeze_excite;
mod transpose;

use std::sync::{Arc, Mutex};

pub(crate) use backend::GpuBackend;
pub(crate) use conv2d::{tensor_cores_fill, TC_CHANNELS};
use lower::{Lowering, Slot, Step};

use crate::error::{Error, Result};
use crate::gpu::{Ahead, Commands, Gpu};
use crate::ml::backend::Timing;
use crate::ml::graph_ir::{GraphIr, Node, OperandKind};
use crate::ml::ops::Op;

pub(crate) struct GpuPlan {
    gpu: Gpu,
    steps: Arc<Vec<Step>>,
    /// The steps as one untimed command buffer, encoded ahead.
    body: Ahead,
    inputs: Vec<Slot>,
    outputs: Vec<Slot>,
    buffers: Mutex<Vec<crate::gpu::live::Buffer>>,
}

fn lower_node(l: &mut Lowering, node: &Node) -> Result<()> {
    match &node.op {
        Op::Binary(op) => elementwise::binary(l, node, *op),
        Op::Unary(_) => elementwise::unary(l, node),
        Op::Cast => elementwise::cast(l, node),
        Op::Conv2d(o) => conv2d::conv2d(l, node, o),
        Op::QuantConv2d(o) => conv2d::quant_conv2d(l, node, o),
        Op::ConvTranspose2d(o) => conv_transpose2d::conv_transpose2d(l, node, o),
        Op::Pool2d(kind, o) => pool2d::pool2d(l, node, *kind, o),
        Op::Reduce { kind, axes, .. } => reduce::reduce_kind(l, node, *kind, axes),
        Op::Resample2d(o) => resample2d::resample2d(l, node, o),
        Op::Concat { axis } => concat::concat(l, node, *axis),
        Op::Transpose { permutation } => transpose::transpose(l, node, permutation),
        Op::Slice {
            starts, strides, ..
        } => slice::slice(l, node, starts, strides),
        Op::Pad {
            beginning,
            mode,
            value,
            ..
        } => pad::pad(l, node, beginning, *mode, *value),
        Op::Split { sizes, axis } => split::split(l, node, sizes, *axis),
        Op::Prelu => prelu::prelu(l, node),
        Op::Softmax { axis } => softmax::softmax(l, node, *axis),
        Op::Matmul => matmul::matmul(l, node),
        Op::Gemm(o) => gemm::gemm(l, node, o),
        Op::Reshape => {
            l.copy(node.inputs[0], node.outputs[0]);
            Ok(())
        }
        Op::Compare(op) => compare::compare(l, node, *op),
        Op::LogicalNot => compare::logical_not(l, node),
        Op::Where => compare::where_(l, node),
        Op::Identity => {
            l.copy(node.inputs[0], node.outputs[0]);
            Ok(())
        }
        Op::ArgMinMax {
            max,
            axis,
            select_last_index,
            ..
        } => arg_min_max::arg_min_max(l, node, *max, *axis, *select_last_index),
        Op::Gather { axis } => gather::gather(l, node, *axis),
        Op::Expand | Op::Tile { .. } => broadcast::repeat(l, node),
        Op::BatchNormalization { epsilon } => normalization::normalize(l, node, *epsilon),
        Op::SqueezeExcite(o) => squeeze_excite::squeeze_excite(l, node, o),
        Op::DepthwisePointwise(o) => conv2d::dwpw::depthwise_pointwise(l, node, o),
    }
}

impl GpuPlan {
    pub fn compile(gpu: &Gpu, ir: &GraphIr) -> Result<GpuPlan> {
        let mut l = Lowering::new(gpu, ir);
        // Constants no node reads (a filter fusion replaced with its
        // slices) are not uploaded.
        let uses = ir.use_counts();
        for (id, info) in ir.operands.iter().enumerate() {
            if let (OperandKind::Constant(bytes), true) = (&info.kind, uses[id] > 0) {
                l.constant(id, bytes)?;
            }
        }
        for (_, id) in ir.inputs.iter().chain(&ir.outputs) {
            l.pin(*id)?;
        }
        let writes = concat_writes::plan(ir);
        let reads = slice_reads::plan(ir);
        let groups = pointwise::plan(ir, &writes, &reads);
        let mut last_uses = ir.last_uses();
        // A slice's input lives until the op reading through the slice
        // runs, an element-wise group's reads until its kernel runs.
        for index in 0..ir.nodes.len() {
            let sources = reads.sources(index);
            for source in sources.chain(groups.leaves(ir, &reads, index)) {
                last_uses[source] = last_uses[source].max(Some(index));
            }
        }
        let pinned = |id: usize| {
            !matches!(ir.operands[id].kind, OperandKind::Computed)
                || ir.outputs.iter().any(|(_, o)| *o == id)
        };
        for (index, node) in ir.nodes.iter().enumerate() {
            if writes.skipped[index] || reads.skipped[index] || groups.skipped[index] {
                continue;
            }
            if let Some(g) = groups.runs[index] {
                let members = &groups.groups[g];
                for (o, into) in pointwise::stored(ir, &writes, members) {
                    match into {
                        Some(y) => l.alias(o, y)?,
                        None => l.allocate(o)?,
                    }
                }
                pointwise::lower(&mut l, &writes, &reads, members)?;
                for i in groups.leaves(ir, &reads, index) {
                    if last_uses[i] == Some(index) && !pinned(i) {
                        l.release(i);
                    }
                }
                continue;
            }
            let into = writes.into[index];
            for &o in &node.outputs {
                match into {
                    Some((y, _)) => l.alias(o, y)?,
                    None => l.allocate(o)?,
                }
            }
            l.placement = into.map(|(_, p)| p);
            l.written.clone_from(&writes.written[index]);
            l.views.clone_from(&reads.views[index]);
            l.node_detail = ir.describe(node);
            lower_node(&mut l, node).map_err(|e| match e {
                Error::Invalid(m) => {
                    Error::invalid(format!("{} (node {index}): {m}", node.op.name()))
                }
                other => other,
            })?;
            for i in node.inputs.iter().copied().chain(reads.sources(index)) {
                if last_uses[i] == Some(index) && !pinned(i) {
                    l.release(i);
                }
            }
            // Outputs nobody reads (a split's unused part) are free at once.
            for &o in &node.outputs {
                if last_uses[o].is_none() && !pinned(o) {
                    l.release(o);
                }
            }
        }
        let inputs = ir
            .inputs
            .iter()
            .map(|(_, id)| l.slot(*id).clone())
            .collect();
        let outputs = ir
            .outputs
            .iter()
            .map(|(_, id)| l.slot(*id).clone())
            .collect();
        let steps = Arc::new(l.steps);
        let recipe = steps.clone();
        let body = Ahead::new(Arc::new(move |gpu: &Gpu| {
            let mut encoder =
                gpu.device()
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("wgnn graph"),
                    });
            encode_steps(&recipe, &mut encoder, None);
            gpu.scoped("dispatch", || encoder.finish())
        }));
        Ok(GpuPlan {
            gpu: gpu.clone(),
            steps,
            body,
            inputs,
            outputs,
            buffers: Mutex::new(l.buffers),
        })
    }

    pub fn destroy(&self) {
        self.body.clear();
        for b in self.buffers.lock().unwrap().drain(..) {
            b.destroy();
        }
    }

    /// Copy-in, every kernel, copy-out, in one submission. The kernels
    /// (with the plan's own copies between them) are the same commands on
    /// every dispatch, so they come as one command buffer encoded ahead on
    /// the device's worker ([`Ahead`]); the copies in and out are encoded
    /// here around it. With [`Timing::Whole`] two timestamps bracket the
    /// commands and the call waits for them. With [`Timing::PerKernel`]
    /// each kernel gets its own timestamped pass, encoded here, and the call
    /// waits for the times. With [`Timing::Into`] the commands go into the
    /// caller's [`Commands`] and nothing is submitted.
    pub fn dispatch(
        &self,
        inputs: &[&wgpu::Buffer],
        outputs: &[&wgpu::Buffer],
        timing: Timing<'_>,
    ) -> Result<()> {
        let gpu = &self.gpu;
        let kernels = self
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Kernel { .. }))
            .count() as u32;
        let (profile, whole, into) = match timing {
            Timing::Off => (None, None, None),
            Timing::PerKernel(p) => (Some(p), None, None),
            Timing::Whole(ms) => (None, Some(ms), None),
            Timing::Into(commands) => (None, None, Some(commands)),
        };
        let span = match &whole {
            Some(_) if !gpu.has(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS) => {
                return Err(Error::invalid(format!(
                    "gpu_time: this GPU ({}) has no TIMESTAMP_QUERY_INSIDE_ENCODERS feature",
                    gpu.info().name
                )))
            }
            Some(_) => Some(gpu.device().create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("wgnn graph time"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            })),
            None => None,
        };
        let timing = match &profile {
            Some(_) if !gpu.has(wgpu::Features::TIMESTAMP_QUERY) => {
                return Err(Error::invalid(format!(
                    "profile: this GPU ({}) has no TIMESTAMP_QUERY feature",
                    gpu.info().name
                )))
            }
            Some(_) if kernels > 0 => {
                Some(gpu.device().create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("wgnn profile"),
                    ty: wgpu::QueryType::Timestamp,
                    count: kernels * 2,
                }))
            }
            _ => None,
        };
        let mut own = None;
        let commands = match into {
            Some(commands) => commands,
            None => own.insert(Commands::new(gpu)),
        };
        if let Some(qs) = &span {
            commands.encoder().write_timestamp(qs, 0);
        }
        for (buffer, slot) in inputs.iter().zip(&self.inputs) {
            commands
                .encoder()
                .copy_buffer_to_buffer(buffer, 0, &slot.buffer, 0, slot.size);
        }
        let mut stamps = timing.as_ref().map(|queries| KernelStamps {
            queries,
            labels: Vec::new(),
            details: Vec::new(),
        });
        match &mut stamps {
            Some(stamps) => encode_steps(&self.steps, commands.encoder(), Some(stamps)),
            None => commands.append("dispatch", self.body.take(gpu)?)?,
        }
        for (buffer, slot) in outputs.iter().zip(&self.outputs) {
            commands
                .encoder()
                .copy_buffer_to_buffer(&slot.buffer, 0, buffer, 0, slot.size);
        }
        if let Some(qs) = &span {
            commands.encoder().write_timestamp(qs, 1);
        }
        let mut resolve = |qs: &wgpu::QuerySet, count: u32| {
            let buffer = gpu.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgnn timestamps"),
                size: u64::from(count) * 8,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })?;
            commands
                .encoder()
                .resolve_query_set(qs, 0..count, &buffer, 0);
            Ok::<_, crate::Error>(buffer)
        };
        let resolved = timing
            .as_ref()
            .map(|qs| resolve(qs, kernels * 2))
            .transpose()?;
        let span_resolved = span.as_ref().map(|qs| resolve(qs, 2)).transpose()?;
        let Some(commands) = own else {
            // The caller submits (Timing::Into, which times nothing).
            return Ok(());
        };
        commands.submit("dispatch")?;
        // ms between the two timestamps of each pair in `buffer`.
        let spans = |buffer: &wgpu::Buffer| -> Result<Vec<f64>> {
            let bytes = gpu.download_buffer(buffer, 0, buffer.size())?.wait()?;
            let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes);
            let period = gpu.queue().get_timestamp_period() as f64;
            Ok(ticks
                .chunks_exact(2)
                .map(|t| t[1].saturating_sub(t[0]) as f64 * period / 1e6)
                .collect())
        };
        if let (Some(ms), Some(buffer)) = (whole, span_resolved) {
            *ms = spans(&buffer)?[0];
        }
        if let (Some(profile), Some(buffer), Some(stamps)) = (profile, resolved, stamps) {
            profile.kernels = stamps.labels.into_iter().zip(spans(&buffer)?).collect();
            profile.details = stamps.details;
            profile.total_ms = profile.kernels.iter().map(|(_, ms)| ms).sum();
        }
        Ok(())
    }
}

/// Per-kernel timestamps: a query set with two entries per kernel, and the
/// kernels' labels and details in order, filled as they are encoded.
struct KernelStamps<'a> {
    queries: &'a wgpu::QuerySet,
    labels: Vec<String>,
    details: Vec<String>,
}

/// Records `steps` into `encoder`: the kernels in one compute pass between
/// the plan's own copies, or, with `stamps`, each in a pass of its own
/// between two timestamps.
fn encode_steps(
    steps: &[Step],
    encoder: &mut wgpu::CommandEncoder,
    mut stamps: Option<&mut KernelStamps<'_>>,
) {
    let mut pass: Option<wgpu::ComputePass<'static>> = None;
    for step in steps {
        match step {
            Step::Copy { src, dst } => {
                drop(pass.take());
                encoder.copy_buffer_to_buffer(
                    &src.buffer,
                    0,
                    &dst.buffer,
                    0,
                    src.size.min(dst.size),
                );
            }
            Step::Kernel {
                label,
                detail,
                pipeline,
                bind_group,
                workgroups,
            } => {
                if let Some(stamps) = stamps.as_deref_mut() {
                    drop(pass.take());
                    let i = stamps.labels.len() as u32;
                    stamps.labels.push(label.clone());
                    stamps.details.push(detail.clone());
                    pass = Some(
                        encoder
                            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                                label: Some(label),
                                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                                    query_set: stamps.queries,
                                    beginning_of_pass_write_index: Some(2 * i),
                                    end_of_pass_write_index: Some(2 * i + 1),
                                }),
                            })
                            .forget_lifetime(),
                    );
                } else if pass.is_none() {
                    pass = Some(
                        encoder
                            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                                label: Some("wgnn graph"),
                                timestamp_writes: None,
                            })
                            .forget_lifetime(),
                    );
                }
                let p = pass.as_mut().expect("a pass is open");
                p.set_pipeline(pipeline);
                p.set_bind_group(0, bind_group, &[]);
                p.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
            }
        }
    }
}
