//! [`ModelInstance`]: one loaded model, one `ml` context and its compiled
//! graphs, shared by every task made with it, and the gathering of their
//! frames into batched dispatches.
//!
//! A task made without an instance gets one of its own (batch size 1: each
//! frame is its own dispatch, as it always was). Tasks made with the same
//! instance ([`registry::join`] finds one by id, as `model-instance-id` does
//! in the elements) share the model's graphs; with a batch size N above 1
//! their frames are gathered ([`gather`]) into one dispatch of a graph built
//! for N inputs, each task's tensorizer writing its frame into its slot of
//! the batched input and each task getting its outputs back in tensors of
//! its own (GPU buffer copies: nothing is read back).

mod batched;
mod gather;
pub mod registry;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::gpu::Commands;
use crate::ml::{Context, Graph, Precision, Tensor};
use crate::models::{Model, PrecisionChoice};
use crate::video::TensorBuffer;

use super::context::OwnedContext;
use super::{Device, HostStages, ModelTiming};
use batched::Batched;
use gather::Gather;

/// The most items one batch may hold (`batch-size`'s maximum).
pub const MAX_BATCH_SIZE: usize = 256;

/// The longest `max-batch-latency`.
pub const MAX_BATCH_LATENCY: Duration = Duration::from_secs(1);

/// How an instance gathers items into dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchOptions {
    /// Items per dispatch, 1 to [`MAX_BATCH_SIZE`]; the graph is built for
    /// this many, and a partial batch runs it or, from 16 up, the graph for
    /// a half, quarter or eighth of it that holds the batch.
    pub size: usize,
    /// How long the first item of a batch waits for others before the batch
    /// goes out partial (it goes at once when every user of the instance is
    /// already waiting).
    pub max_latency: Duration,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            size: 1,
            max_latency: Duration::from_millis(10),
        }
    }
}

impl BatchOptions {
    pub fn new(size: usize, max_latency: Duration) -> Result<BatchOptions> {
        if !(1..=MAX_BATCH_SIZE).contains(&size) {
            return Err(Error::invalid(format!(
                "batch size {size} is out of range: 1 to {MAX_BATCH_SIZE}"
            )));
        }
        if max_latency > MAX_BATCH_LATENCY {
            return Err(Error::invalid(format!(
                "max batch latency {} ms is more than the most, {} ms",
                max_latency.as_millis(),
                MAX_BATCH_LATENCY.as_millis()
            )));
        }
        Ok(BatchOptions { size, max_latency })
    }
}

/// One item a task hands to [`ModelInstance::run_gpu`]: where its outputs
/// go, and how the model is timed.
pub struct ItemRequest {
    /// One tensor per graph output, in the graph's output order, each the
    /// batch-1 graph's descriptor, on the instance's context and exportable
    /// to the GPU.
    pub outputs: Vec<Tensor>,
    pub timing: ModelTiming,
    /// Commands that read the outputs (the item's post-processing),
    /// recorded ahead: the batch submits them after its copies out, in its
    /// one submission.
    pub after: Option<wgpu::CommandBuffer>,
}

/// What [`ModelInstance::run_gpu`] did with a task's items.
#[derive(Clone, Debug, Default)]
pub struct BatchRun {
    /// The model's GPU ms for the (last) batch the items went in, when an
    /// item of it asked for timing.
    pub model_ms: Option<f64>,
    /// Items in the largest batch the items went in.
    pub batch: usize,
    /// The longest an item waited for its batch to start (others to join
    /// it, or the batches ahead of it to run).
    pub waited: Duration,
    /// The calling thread's host time in tensorize, gather and submit (the
    /// others stay zero).
    pub stages: HostStages,
    /// The submission of the (last) batch the items went in, with their
    /// `after` commands: what reads those back waits for it. `None` where
    /// the caller submits ([`ModelInstance::record_gpu`]).
    pub submission: Option<wgpu::SubmissionIndex>,
}

/// What an instance has dispatched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstanceStats {
    /// Dispatches of the model.
    pub batches: u64,
    /// Items (frames, regions) in them.
    pub items: u64,
    /// The slots the graphs that ran computed, filled or not (a partial
    /// batch runs the smallest graph that holds it: see `batched.rs`).
    pub slots: u64,
    /// The most gathered batches submitted at once before the GPU was seen
    /// to finish the ones before (each batch's members wait only for their
    /// own read-backs, so batches overlap).
    pub most_in_flight: u64,
}

/// (model input size, precision asked for): items of different keys never
/// share a batch.
type Key = (Option<(usize, usize)>, Precision);

/// A model loaded once with its context and graphs, shared by tasks.
pub struct ModelInstance {
    id: Option<String>,
    /// Who made it (an element's name), for errors of those that join.
    owner: String,
    path: PathBuf,
    model: Arc<Model>,
    device: Device,
    ctx: OwnedContext,
    batch: BatchOptions,
    /// Batched graphs and their tensors, by key, built at first use.
    batched: Mutex<HashMap<Key, Arc<Batched>>>,
    /// Held while a batch-1 graph is built: `auto` precision builds both
    /// graphs and destroys the one it does not choose, which a user
    /// building at the same time could be holding.
    building: Mutex<()>,
    gather: Mutex<Gather>,
    changed: Condvar,
    /// Held while a batch is dispatched, so that a key's batched outputs
    /// are copied out before the next batch writes them.
    exec: Mutex<()>,
    batches: AtomicU64,
    items: AtomicU64,
    slots: AtomicU64,
    /// Gathered batches submitted and not yet seen done by the GPU, and
    /// the most of them at once.
    in_flight: Arc<AtomicU64>,
    most_in_flight: AtomicU64,
}

impl std::fmt::Debug for ModelInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelInstance")
            .field("id", &self.id)
            .field("path", &self.path)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl ModelInstance {
    /// An instance of `model` on `device` for one task alone (batch size 1).
    pub fn private(device: &Device, model: Arc<Model>) -> Result<Arc<ModelInstance>> {
        ModelInstance::new(None, "", device, model, BatchOptions::default())
    }

    /// An instance of `model` on `device` that no registry knows, batching
    /// as `batch` says (the regions of one frame, or the frames of tasks
    /// given it by hand).
    pub fn with_batch(
        device: &Device,
        model: Arc<Model>,
        batch: BatchOptions,
    ) -> Result<Arc<ModelInstance>> {
        ModelInstance::new(None, "", device, model, batch)
    }

    /// A new instance; [`registry::join`] makes shared ones.
    fn new(
        id: Option<String>,
        owner: &str,
        device: &Device,
        model: Arc<Model>,
        batch: BatchOptions,
    ) -> Result<Arc<ModelInstance>> {
        if batch.size > 1 {
            if device.is_cpu() {
                return Err(Error::invalid(format!(
                    "batch size {} needs the GPU: on the CPU frames run one at a time (batch \
                     size 1)",
                    batch.size
                )));
            }
            // A fixed-size model is checked now; one that takes any size
            // when its first frame size is met.
            if fixed_size(&model) {
                model.check_batch(None, batch.size)?;
            }
        }
        let ctx = OwnedContext(match device {
            Device::Gpu(gpu) => Context::gpu(gpu),
            Device::Cpu => Context::cpu(),
        });
        Ok(Arc::new(ModelInstance {
            id,
            owner: owner.to_string(),
            path: model.path().to_path_buf(),
            model,
            device: device.clone(),
            ctx,
            batch,
            batched: Mutex::default(),
            building: Mutex::new(()),
            gather: Mutex::default(),
            changed: Condvar::new(),
            exec: Mutex::new(()),
            batches: AtomicU64::new(0),
            items: AtomicU64::new(0),
            slots: AtomicU64::new(0),
            in_flight: Arc::default(),
            most_in_flight: AtomicU64::new(0),
        }))
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// The model file's path as the instance was made with it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The context every task of the instance creates its tensors on.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    pub fn batch(&self) -> BatchOptions {
        self.batch
    }

    pub fn stats(&self) -> InstanceStats {
        InstanceStats {
            batches: self.batches.load(Ordering::Relaxed),
            items: self.items.load(Ordering::Relaxed),
            slots: self.slots.load(Ordering::Relaxed),
            most_in_flight: self.most_in_flight.load(Ordering::Relaxed),
        }
    }

    /// The batch-1 graph for an input of `input_hw` in `precision`, and what
    /// `precision` settled on: shared by every task of the instance (built
    /// once per size and precision), for its descriptors and for
    /// dispatches that are not gathered (the CPU's).
    pub fn graph(
        &self,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
    ) -> Result<(Graph, PrecisionChoice)> {
        let _one_at_a_time = self.building.lock().unwrap();
        super::build_graph(&self.model, &self.ctx, input_hw, precision)
    }

    /// Counts a dispatch made outside [`ModelInstance::run_gpu`] (the CPU
    /// path's).
    pub(crate) fn count_dispatch(&self, items: u64) {
        self.count_batch(items, 1);
    }

    /// Counts a dispatch of `items` by a graph of `slots`.
    fn count_batch(&self, items: u64, slots: u64) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.items.fetch_add(items, Ordering::Relaxed);
        self.slots.fetch_add(slots, Ordering::Relaxed);
    }

    /// Joins the instance's users: while the returned member is active,
    /// other users' partial batches wait for its frames (up to the batch
    /// latency).
    pub fn member(self: &Arc<Self>) -> Member {
        self.gather.lock().unwrap().members += 1;
        self.changed.notify_all();
        Member {
            instance: self.clone(),
            active: Mutex::new(true),
        }
    }

    /// Runs the model on `items` (one per frame or region), gathered with
    /// other users' items of the same input size and precision into
    /// batches: `fill(i, dst, slot)` records item `i`'s input into `slot` of
    /// the batched input `dst`, on this thread, and returns the commands
    /// (the batch submits them with its dispatch, one submission); then this
    /// call waits until every item's batch has run and its outputs were
    /// copied into `items[i].outputs`. No item waits longer than the batch
    /// latency for others (plus the batches ahead of it).
    pub fn run_gpu(
        &self,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
        items: Vec<ItemRequest>,
        fill: impl FnMut(usize, TensorBuffer<'_>, usize) -> Result<wgpu::CommandBuffer>,
    ) -> Result<BatchRun> {
        if self.device.is_cpu() {
            return Err(Error::invalid(
                "run_gpu: this model instance runs on the CPU",
            ));
        }
        if items.is_empty() {
            return Ok(BatchRun::default());
        }
        let batched = self.batched((input_hw, precision))?;
        for item in &items {
            batched.check_item(item)?;
        }
        gather::run(self, &batched, (input_hw, precision), items, fill)
    }

    /// Whether [`ModelInstance::record_gpu`] records an item timed as
    /// `timing` (rather than leaving it to `run_gpu`).
    pub(crate) fn records(&self, timing: ModelTiming) -> bool {
        !self.device.is_cpu() && self.batch.size == 1 && timing == ModelTiming::Off
    }

    /// [`ModelInstance::run_gpu`] for one untimed item of an instance that
    /// does not batch (size 1), recorded into `commands` rather than
    /// submitted: `fill` records the item's input into `dst`, the model's
    /// dispatch follows it, and the caller submits both with its own work,
    /// one submission for the frame. `None` (nothing recorded) where the
    /// instance batches, which gathers other users' items, or the item asks
    /// for timing, which waits: use `run_gpu`.
    pub(crate) fn record_gpu(
        &self,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
        item: &ItemRequest,
        commands: &mut Commands,
        fill: impl FnOnce(&mut wgpu::CommandEncoder, TensorBuffer<'_>) -> Result<()>,
    ) -> Result<Option<BatchRun>> {
        if !self.records(item.timing) {
            return Ok(None);
        }
        let batched = self.batched((input_hw, precision))?;
        batched.check_item(item)?;
        let (input, rented) = batched.take_input()?;
        let dst = TensorBuffer::new(rented.buffer(), batched.input_type(), batched.input_shape());
        let filled = fill(commands.encoder(), dst);
        // The input goes back to the context before the dispatch reads it.
        drop(rented);
        let recorded = filled.and_then(|()| batched.record(commands, &input, &item.outputs));
        // Free for the next frame at once: its writes are submitted after
        // this frame's reads, and the queue runs them in that order.
        batched.give_input(input);
        recorded?;
        self.count_dispatch(1);
        Ok(Some(BatchRun {
            model_ms: None,
            batch: 1,
            waited: Duration::ZERO,
            stages: HostStages::default(),
            submission: None,
        }))
    }

    /// The batched graph and tensors for `key`, built at first use.
    fn batched(&self, key: Key) -> Result<Arc<Batched>> {
        // Locked while building, so that users starting together build one.
        let mut batched = self.batched.lock().unwrap();
        if let Some(b) = batched.get(&key) {
            return Ok(b.clone());
        }
        let b = Arc::new(Batched::new(self, key)?);
        batched.insert(key, b.clone());
        Ok(b)
    }

    /// Dispatches one batch of `slots` (its items' outputs and timings,
    /// `None` for a slot whose input failed) from `input`, between `fills`
    /// (the commands writing the input) and `afters` (those reading the
    /// outputs), and copies each item's outputs into its tensors. The
    /// model's ms when timed, and the batch's (last) submission.
    fn execute(
        &self,
        batched: &Batched,
        input: &Tensor,
        slots: &[Option<(Vec<Tensor>, ModelTiming)>],
        fills: Vec<wgpu::CommandBuffer>,
        afters: Vec<wgpu::CommandBuffer>,
    ) -> Result<(Option<f64>, Option<wgpu::SubmissionIndex>)> {
        let _one_at_a_time = self.exec.lock().unwrap();
        let n = self.batch.size;
        let (ms, size, submission) = batched.execute(&self.ctx, n, input, slots, fills, afters)?;
        let filled = slots.iter().flatten().count() as u64;
        self.count_batch(filled, size as u64);
        self.in_flight_until_done();
        Ok((ms, submission))
    }

    /// Counts the batch just submitted in flight until the GPU is seen to
    /// have done it (a poll, such as a member's read-back, notices).
    fn in_flight_until_done(&self) {
        let Device::Gpu(gpu) = &self.device else {
            return;
        };
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.most_in_flight.fetch_max(now, Ordering::Relaxed);
        let in_flight = self.in_flight.clone();
        gpu.queue().on_submitted_work_done(move || {
            in_flight.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

impl Drop for ModelInstance {
    fn drop(&mut self) {
        for b in self.batched.get_mut().unwrap().values() {
            b.destroy();
        }
    }
}

/// Whether `model`'s first input declares its size (it is built at the
/// size the file gives), so that batching can be checked before any frame.
fn fixed_size(model: &Model) -> bool {
    model
        .inputs()
        .first()
        .is_some_and(|i| i.shape.iter().skip(1).all(Option::is_some))
}

/// A user of an instance (an element): counted among those whose frames
/// a partial batch waits for while it is active; leaves when dropped.
pub struct Member {
    instance: Arc<ModelInstance>,
    active: Mutex<bool>,
}

impl Member {
    pub fn instance(&self) -> &Arc<ModelInstance> {
        &self.instance
    }

    /// An inactive member (at end of stream, flushing) sends no frames, so
    /// batches stop waiting for it; a new segment makes it active again.
    pub fn set_active(&self, active: bool) {
        let mut a = self.active.lock().unwrap();
        if *a == active {
            return;
        }
        *a = active;
        let mut g = self.instance.gather.lock().unwrap();
        if active {
            g.members += 1;
        } else {
            g.members -= 1;
        }
        drop(g);
        self.instance.changed.notify_all();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.set_active(false);
    }
}
