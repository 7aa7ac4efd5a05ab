//! One key's batched graph (input size and precision) and its tensors: the
//! inputs batches are filled in (one per batch in flight, reused) and, for a
//! batch size above 1, the batched outputs each item's slice is copied out
//! of.
//!
//! A graph computes every slot it is built for, filled or not, so a partial
//! batch of a large batch size would cost as much as a full one. From
//! [`TIERED_FROM`] items up, a partial batch runs the smallest of the
//! graphs for a half, a quarter or an eighth of the batch size that holds
//! it (each built the first time a batch needs it), its filled slots copied
//! into that graph's own input.

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::gpu::Commands;
use crate::ml::{Context, DataType, Graph, Precision, RentedBuffer, Tensor, TensorDescriptor};
use crate::models::Model;
use crate::tasks::{timing, ModelTiming};

use super::{ItemRequest, Key, ModelInstance};

/// The smallest batch size whose partial batches run smaller graphs.
pub(super) const TIERED_FROM: usize = 16;

/// How many times a tier may halve the batch size (down to an eighth).
const TIER_HALVINGS: usize = 3;

/// The size of the graph a batch of `filled` items of a batch size `n`
/// runs: `n`, or from [`TIERED_FROM`] up the smallest of its halvings that
/// holds them.
pub(super) fn tier_for(n: usize, filled: usize) -> usize {
    let mut k = n;
    if n < TIERED_FROM {
        return k;
    }
    for _ in 0..TIER_HALVINGS {
        let half = k.div_ceil(2);
        if half < filled.max(1) {
            break;
        }
        k = half;
    }
    k
}

/// A graph for part of the batch size, with its own input and outputs.
struct Tier {
    size: usize,
    graph: Graph,
    input: Tensor,
    outputs: Vec<(String, Tensor)>,
}

pub(super) struct Batched {
    ctx: Context,
    model: Arc<Model>,
    input_hw: Option<(usize, usize)>,
    /// What the graphs compute in (the batch-1 graph's choice).
    precision: Precision,
    graph: Graph,
    input_name: String,
    input_type: DataType,
    /// [N, ...].
    input_shape: Vec<usize>,
    /// Each output's name and one item's descriptor ([1, ...]).
    items: Vec<(String, TensorDescriptor)>,
    /// The batched outputs ([N, ...]); empty for batch size 1, whose
    /// dispatch writes the item's own tensors.
    outputs: Vec<(String, Tensor)>,
    /// Input tensors not lent to a batch.
    spare: Mutex<Vec<Tensor>>,
    /// The graphs for parts of the batch size built so far.
    tiers: Mutex<Vec<Arc<Tier>>>,
}

impl Batched {
    pub fn new(instance: &ModelInstance, (input_hw, precision): Key) -> Result<Batched> {
        let n = instance.batch.size;
        let ctx = instance.context().clone();
        let model = instance.model();
        let (one, choice) = instance.graph(input_hw, precision)?;
        let items: Vec<(String, TensorDescriptor)> = one
            .outputs()
            .into_iter()
            .map(|(name, d)| {
                let desc = TensorDescriptor::new(d.data_type, d.shape)
                    .readable()
                    .exportable_to_gpu();
                (name, desc)
            })
            .collect();
        // What the batch needs, checked before building anything.
        let limit = match instance.device() {
            crate::tasks::Device::Gpu(gpu) => {
                let l = gpu.limits();
                l.max_storage_buffer_binding_size.min(l.max_buffer_size)
            }
            crate::tasks::Device::Cpu => u64::MAX,
        };
        let needs =
            one.inputs()
                .into_iter()
                .map(|(name, d)| (format!("input '{name}'"), d.byte_length() as u64))
                .chain(items.iter().map(|(name, d)| {
                    (format!("output '{name}'"), d.operand().byte_length() as u64)
                }));
        for (what, per_item) in needs {
            let bytes = per_item.saturating_mul(n as u64);
            if bytes > limit {
                return Err(too_large(
                    instance,
                    n,
                    format!(
                        "its {what} needs {bytes} bytes at that batch, the device allows {limit} \
                         in one buffer (at most batch size {})",
                        (limit / per_item.max(1)).max(1)
                    ),
                ));
            }
            if n > 1 && what.starts_with("output") && per_item % 4 != 0 {
                return Err(Error::invalid(format!(
                    "{}: {what} holds {per_item} bytes per frame; a batch is split in multiples \
                     of 4 bytes; use batch size 1",
                    model.path().display()
                )));
            }
        }
        let graph = if n == 1 {
            one.clone()
        } else {
            model
                .build_batched(&ctx, input_hw, choice.precision, n)
                .map_err(|e| Error::invalid(format!("batch size {n}: {e}")))?
        };
        let mut inputs = graph.inputs();
        if inputs.len() != 1 {
            return Err(Error::invalid(format!(
                "{}: the model has {} inputs; frames feed a model with one",
                model.path().display(),
                inputs.len()
            )));
        }
        let (input_name, input) = inputs.remove(0);
        let outputs = if n > 1 {
            batched_outputs(&ctx, model, &graph, &items, n)?
        } else {
            Vec::new()
        };
        Ok(Batched {
            ctx,
            model: model.clone(),
            input_hw,
            precision: choice.precision,
            graph,
            input_name,
            input_type: input.data_type,
            input_shape: input.shape,
            items,
            outputs,
            spare: Mutex::default(),
            tiers: Mutex::default(),
        })
    }

    /// The graph for `size` items (a part of the batch size), built at
    /// first use.
    fn tier(&self, size: usize) -> Result<Arc<Tier>> {
        let mut tiers = self.tiers.lock().unwrap();
        if let Some(t) = tiers.iter().find(|t| t.size == size) {
            return Ok(t.clone());
        }
        let graph = self
            .model
            .build_batched(&self.ctx, self.input_hw, self.precision, size)
            .map_err(|e| Error::invalid(format!("batch size {size}: {e}")))?;
        let outputs = batched_outputs(&self.ctx, &self.model, &graph, &self.items, size)?;
        let mut shape = self.input_shape.clone();
        shape[0] = size;
        let input = self
            .ctx
            .create_tensor(TensorDescriptor::new(self.input_type, shape).exportable_to_gpu())?;
        let tier = Arc::new(Tier {
            size,
            graph,
            input,
            outputs,
        });
        tiers.push(tier.clone());
        Ok(tier)
    }

    pub fn input_shape(&self) -> &[usize] {
        &self.input_shape
    }

    pub fn input_type(&self) -> DataType {
        self.input_type
    }

    /// Checks that `item`'s outputs are the batch-1 graph's.
    pub fn check_item(&self, item: &ItemRequest) -> Result<()> {
        if item.outputs.len() != self.items.len() {
            return Err(Error::invalid(format!(
                "batched run: {} output tensors given, the model has {}",
                item.outputs.len(),
                self.items.len()
            )));
        }
        for (t, (name, want)) in item.outputs.iter().zip(&self.items) {
            if t.data_type() != want.data_type || t.shape() != want.shape.as_slice() {
                return Err(Error::invalid(format!(
                    "batched run: the tensor for output '{name}' is {} {:?}, the model gives {} \
                     {:?}",
                    t.data_type(),
                    t.shape(),
                    want.data_type,
                    want.shape
                )));
            }
        }
        Ok(())
    }

    /// A free input tensor, lent to the fillers.
    pub fn take_input(&self) -> Result<(Tensor, RentedBuffer)> {
        let t = match self.spare.lock().unwrap().pop() {
            Some(t) => t,
            None => self.ctx.create_tensor(
                TensorDescriptor::new(self.input_type, self.input_shape.clone())
                    .exportable_to_gpu(),
            )?,
        };
        let rented = self.ctx.export_to_gpu(&t)?;
        Ok((t, rented))
    }

    pub fn give_input(&self, t: Tensor) {
        self.spare.lock().unwrap().push(t);
    }

    /// Records the batch-1 graph's dispatch from `input` into `outputs`
    /// (one tensor per graph output) into `commands`, for the caller to
    /// submit.
    pub fn record(
        &self,
        commands: &mut Commands,
        input: &Tensor,
        outputs: &[Tensor],
    ) -> Result<()> {
        self.graph.dispatch_into(
            &self.ctx,
            commands,
            &[(self.input_name.as_str(), input)],
            &self.item_outputs(outputs),
        )
    }

    /// One item's output tensors (one per graph output, in order) under
    /// the graph's output names.
    fn item_outputs<'a>(&'a self, outputs: &'a [Tensor]) -> Vec<(&'a str, &'a Tensor)> {
        self.items
            .iter()
            .map(|(n, _)| n.as_str())
            .zip(outputs)
            .collect()
    }

    /// Dispatches the graph on `input`, after `fills` (the commands
    /// writing it), and hands each filled slot its outputs: for batch size
    /// 1 the dispatch writes them, otherwise one buffer copy per output and
    /// item, queued behind the dispatch; `afters` (the items' commands
    /// reading their outputs) follow. A partial batch runs a smaller graph
    /// where there is one ([`tier_for`]). Untimed, all of it is one
    /// submission; timed, the fills and the rest go in submissions of
    /// their own around the timed dispatch. The model's GPU ms when timed,
    /// the items the graph that ran computes, and the last submission.
    pub fn execute(
        &self,
        ctx: &Context,
        n: usize,
        input: &Tensor,
        slots: &[Option<(Vec<Tensor>, ModelTiming)>],
        fills: Vec<wgpu::CommandBuffer>,
        afters: Vec<wgpu::CommandBuffer>,
    ) -> Result<(Option<f64>, usize, Option<wgpu::SubmissionIndex>)> {
        let timing = slots
            .iter()
            .flatten()
            .map(|(_, t)| *t)
            .max_by_key(|t| match t {
                ModelTiming::Off => 0,
                ModelTiming::Whole => 1,
                ModelTiming::PerKernel => 2,
            })
            .unwrap_or_default();
        let gpu = ctx
            .gpu_handle()
            .ok_or_else(|| Error::invalid("a batch runs on the GPU"))?;
        let mut commands = Commands::after(gpu, fills);
        let size = if n == 1 { 1 } else { tier_for(n, slots.len()) };
        let tier = (size < n).then(|| self.tier(size)).transpose()?;
        let (graph, input, outputs) = match &tier {
            Some(t) => {
                // The filled slots, the batch's first ones, into the
                // smaller graph's input.
                let bytes = self.input_type.byte_size() as u64
                    * self.input_shape.iter().skip(1).product::<usize>() as u64
                    * size as u64;
                let (src, dst) = (ctx.export_to_gpu(input)?, ctx.export_to_gpu(&t.input)?);
                commands
                    .encoder()
                    .copy_buffer_to_buffer(src.buffer(), 0, dst.buffer(), 0, bytes);
                (&t.graph, &t.input, t.outputs.as_slice())
            }
            None => (&self.graph, input, self.outputs.as_slice()),
        };
        let inputs = [(self.input_name.as_str(), input)];
        // Batch size 1 dispatches into the item's own tensors.
        let one = slots.first().and_then(Option::as_ref).filter(|_| n == 1);
        let named: Vec<(&str, &Tensor)> = match one {
            Some((outputs, _)) => self.item_outputs(outputs),
            // Its one slot failed: nothing to run.
            None if n == 1 => return Ok((None, 1, None)),
            None => outputs.iter().map(|(n, t)| (n.as_str(), t)).collect(),
        };
        let ms = match timing {
            ModelTiming::Off => {
                graph.dispatch_into(ctx, &mut commands, &inputs, &named)?;
                None
            }
            timed => {
                commands.submit("batch submit")?;
                commands = Commands::new(gpu);
                timing::dispatch(ctx, graph, &inputs, &named, timed)?
            }
        };
        if n > 1 {
            self.record_split(ctx, &mut commands, outputs, slots)?;
        }
        commands.extend("batch copies", afters)?;
        let submission = commands.submit("batch submit")?;
        Ok((ms, size, Some(submission)))
    }

    /// Records the copies of each filled slot's part of the batched
    /// `outputs` into its own tensors.
    fn record_split(
        &self,
        ctx: &Context,
        commands: &mut Commands,
        outputs: &[(String, Tensor)],
        slots: &[Option<(Vec<Tensor>, ModelTiming)>],
    ) -> Result<()> {
        let sources = outputs
            .iter()
            .map(|(_, t)| ctx.export_to_gpu(t))
            .collect::<Result<Vec<_>>>()?;
        for (slot, (outputs, _)) in slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
        {
            for ((src, (_, item)), dst) in sources.iter().zip(&self.items).zip(outputs) {
                let bytes = item.operand().byte_length() as u64;
                let dst = ctx.export_to_gpu(dst)?;
                commands.encoder().copy_buffer_to_buffer(
                    src.buffer(),
                    slot as u64 * bytes,
                    dst.buffer(),
                    0,
                    bytes,
                );
            }
        }
        Ok(())
    }

    pub fn destroy(&self) {
        self.graph.destroy();
        for (_, t) in &self.outputs {
            t.destroy();
        }
        for t in self.spare.lock().unwrap().drain(..) {
            t.destroy();
        }
        for t in self.tiers.lock().unwrap().drain(..) {
            t.graph.destroy();
            t.input.destroy();
            for (_, o) in &t.outputs {
                o.destroy();
            }
        }
    }
}

/// The batched outputs of `graph` (built for `n` items), one tensor per
/// output, each `[n, ...]` of the batch-1 graph's `items`; an error naming
/// the output where the graph does not batch it so.
fn batched_outputs(
    ctx: &Context,
    model: &Model,
    graph: &Graph,
    items: &[(String, TensorDescriptor)],
    n: usize,
) -> Result<Vec<(String, Tensor)>> {
    let mut outputs = Vec::new();
    for ((name, item), (bname, batched)) in items.iter().zip(graph.outputs()) {
        let want: Vec<usize> = std::iter::once(n)
            .chain(item.shape.iter().skip(1).copied())
            .collect();
        if *name != bname || batched.shape != want || item.shape.first() != Some(&1) {
            return Err(Error::invalid(format!(
                "{}: output '{name}' is {:?} at batch {n}, not [{n}, ...] of the batch-1 {:?}; \
                 use batch size 1",
                model.path().display(),
                batched.shape,
                item.shape
            )));
        }
        let t = ctx.create_tensor(
            TensorDescriptor::new(batched.data_type, batched.shape).exportable_to_gpu(),
        )?;
        outputs.push((name.clone(), t));
    }
    Ok(outputs)
}

/// The error of a batch size the model's batched graph does not fit on
/// the device at.
fn too_large(instance: &ModelInstance, n: usize, why: String) -> Error {
    Error::invalid(format!(
        "batch size {n} is too large for {} on {}: {why}",
        instance.path().display(),
        instance.device().describe(),
    ))
}
