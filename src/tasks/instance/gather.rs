//! Gathering items from several threads into batches, with no thread of
//! its own: every user's thread reserves slots for its items, writes its
//! inputs into them itself, then waits; whoever finds a batch closed and
//! filled runs it. A batch closes when it is full, when its first item has
//! waited the batch latency, or when every active user of the instance is
//! already waiting (nobody else can add to it, so waiting would only stall
//! them).

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::ml::{RentedBuffer, Tensor};
use crate::video::TensorBuffer;

use super::batched::Batched;
use super::{BatchRun, ItemRequest, Key, ModelInstance};
use crate::tasks::ModelTiming;

/// What the users of one instance share, under its mutex.
#[derive(Default)]
pub(super) struct Gather {
    /// Active users ([`super::Member`]s).
    pub members: usize,
    /// Users inside `run`.
    waiting: usize,
    next_id: u64,
    /// The batch taking items, per key.
    open: HashMap<Key, u64>,
    batches: HashMap<u64, Batch>,
    /// Each finished slot's result, until its owner takes it.
    results: HashMap<(u64, usize), Result<Done, String>>,
}

/// A batch being gathered, filled or run.
struct Batch {
    batched: Arc<Batched>,
    input: Tensor,
    /// The input lent to the fillers until the batch runs.
    rented: Option<RentedBuffer>,
    buffer: wgpu::Buffer,
    opened: Instant,
    closed: bool,
    running: bool,
    slots: Vec<Slot>,
}

/// What a slot's owner learns of its batch.
#[derive(Clone)]
struct Done {
    model_ms: Option<f64>,
    items: usize,
    waited: Duration,
    /// The host time the batch's dispatch took (on whichever thread ran it).
    submit: Duration,
    submission: Option<wgpu::SubmissionIndex>,
}

struct Slot {
    outputs: Vec<Tensor>,
    timing: ModelTiming,
    reserved: Instant,
    /// `None` until the owner has recorded the input.
    filled: Option<Result<(), String>>,
    /// The owner's commands writing the input, submitted with the batch.
    commands: Option<wgpu::CommandBuffer>,
    /// The owner's commands reading the outputs, submitted after them.
    after: Option<wgpu::CommandBuffer>,
    /// The owner returned an error before waiting: nobody takes a result.
    abandoned: bool,
}

impl Batch {
    fn ready(&self) -> bool {
        self.closed && !self.running && self.slots.iter().all(|s| s.filled.is_some())
    }
}

/// See [`ModelInstance::run_gpu`].
pub(super) fn run(
    instance: &ModelInstance,
    batched: &Arc<Batched>,
    key: Key,
    items: Vec<ItemRequest>,
    mut fill: impl FnMut(usize, TensorBuffer<'_>, usize) -> Result<wgpu::CommandBuffer>,
) -> Result<BatchRun> {
    let size = instance.batch.size;
    let latency = instance.batch.max_latency;
    let began = Instant::now();
    let mut g = instance.gather.lock().unwrap();
    g.waiting += 1;
    // Reserve a slot per item.
    let mut mine = Vec::with_capacity(items.len());
    for item in items {
        let id = match g.open.get(&key) {
            Some(&id) => id,
            None => match open_batch(&mut g, batched, key) {
                Ok(id) => id,
                Err(e) => {
                    // Slots already reserved must still be filled (as
                    // failed) so their batches can run.
                    for &(id, slot, _) in &mine {
                        set_filled(&mut g, id, slot, Err(e.to_string()));
                        if let Some(s) = slot_mut(&mut g, id, slot) {
                            s.abandoned = true;
                        }
                    }
                    g.waiting -= 1;
                    drop(g);
                    instance.changed.notify_all();
                    return Err(e);
                }
            },
        };
        let b = g.batches.get_mut(&id).expect("open batches exist");
        let slot = b.slots.len();
        b.slots.push(Slot {
            outputs: item.outputs,
            timing: item.timing,
            reserved: Instant::now(),
            filled: None,
            commands: None,
            after: item.after,
            abandoned: false,
        });
        let buffer = b.buffer.clone();
        if b.slots.len() == size {
            b.closed = true;
            g.open.remove(&key);
        }
        mine.push((id, slot, buffer));
    }
    drop(g);
    instance.changed.notify_all();

    // Record the inputs on this thread, outside the lock; the batch
    // submits them with its dispatch.
    let shape = batched.input_shape();
    let data_type = batched.input_type();
    let filling = Instant::now();
    let filled: Vec<Result<wgpu::CommandBuffer, String>> = mine
        .iter()
        .enumerate()
        .map(|(i, (_, slot, buffer))| {
            fill(i, TensorBuffer::new(buffer, data_type, shape), *slot).map_err(|e| e.to_string())
        })
        .collect();
    let tensorize = filling.elapsed();

    let mut g = instance.gather.lock().unwrap();
    for (&(id, slot, _), r) in mine.iter().zip(filled) {
        match r {
            Ok(commands) => {
                if let Some(s) = slot_mut(&mut g, id, slot) {
                    s.commands = Some(commands);
                }
                set_filled(&mut g, id, slot, Ok(()));
            }
            Err(e) => set_filled(&mut g, id, slot, Err(e)),
        }
    }
    instance.changed.notify_all();
    loop {
        let now = Instant::now();
        // Nobody else can add to an open batch: close them all.
        let everyone = g.waiting >= g.members;
        let open: Vec<(Key, u64)> = g.open.iter().map(|(k, id)| (*k, *id)).collect();
        for (k, id) in open {
            let b = g.batches.get_mut(&id).expect("open batches exist");
            if everyone || now >= b.opened + latency {
                b.closed = true;
                g.open.remove(&k);
            }
        }
        // Run any batch that is ready, mine or not: its owners may all be
        // asleep until the latency ends.
        if let Some(id) = g.batches.iter().find(|(_, b)| b.ready()).map(|(id, _)| *id) {
            g = run_batch(instance, g, id);
            continue;
        }
        if mine
            .iter()
            .all(|(id, slot, _)| g.results.contains_key(&(*id, *slot)))
        {
            break;
        }
        let deadline = mine
            .iter()
            .filter_map(|(id, _, _)| g.batches.get(id))
            .filter(|b| !b.closed)
            .map(|b| b.opened + latency)
            .min();
        g = match deadline {
            Some(d) => {
                instance
                    .changed
                    .wait_timeout(g, d.saturating_duration_since(now))
                    .unwrap()
                    .0
            }
            None => instance.changed.wait(g).unwrap(),
        };
    }
    g.waiting -= 1;
    let (mut run, first_error) =
        take_results(&mut g, mine.iter().map(|(id, slot, _)| (*id, *slot)));
    drop(g);
    instance.changed.notify_all();
    // The rest of the call went to waiting for the batches: to fill, to
    // run the ones ahead, to be woken.
    run.stages.tensorize = tensorize;
    run.stages.gather = began
        .elapsed()
        .saturating_sub(tensorize)
        .saturating_sub(run.stages.submit);
    match first_error {
        Some(e) => Err(Error::invalid(e)),
        None => Ok(run),
    }
}

/// The results of this call's `slots` (all there), taken out of `g`:
/// what their batches share, and the first error among them.
fn take_results(
    g: &mut Gather,
    slots: impl Iterator<Item = (u64, usize)>,
) -> (BatchRun, Option<String>) {
    let mut run = BatchRun::default();
    let mut first_error = None;
    for key in slots {
        match g.results.remove(&key).expect("checked above") {
            Ok(done) => {
                run.model_ms = done.model_ms.or(run.model_ms);
                run.batch = run.batch.max(done.items);
                run.waited = run.waited.max(done.waited);
                run.stages.submit = run.stages.submit.max(done.submit);
                run.submission = done.submission.or(run.submission);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    (run, first_error)
}

/// Opens a batch for `key` with a free input tensor lent to its fillers.
fn open_batch(g: &mut Gather, batched: &Arc<Batched>, key: Key) -> Result<u64> {
    let (input, rented) = batched.take_input()?;
    let id = g.next_id;
    g.next_id += 1;
    g.batches.insert(
        id,
        Batch {
            batched: batched.clone(),
            buffer: rented.buffer().clone(),
            input,
            rented: Some(rented),
            opened: Instant::now(),
            closed: false,
            running: false,
            slots: Vec::new(),
        },
    );
    g.open.insert(key, id);
    Ok(id)
}

fn slot_mut(g: &mut Gather, id: u64, slot: usize) -> Option<&mut Slot> {
    g.batches.get_mut(&id).and_then(|b| b.slots.get_mut(slot))
}

fn set_filled(g: &mut Gather, id: u64, slot: usize, r: Result<(), String>) {
    if let Some(s) = slot_mut(g, id, slot) {
        s.filled = Some(r);
    }
}

/// Runs batch `id` (ready) outside the lock and records its slots' results.
fn run_batch<'g>(
    instance: &'g ModelInstance,
    mut g: MutexGuard<'g, Gather>,
    id: u64,
) -> MutexGuard<'g, Gather> {
    let b = g.batches.get_mut(&id).expect("ready batches exist");
    b.running = true;
    let started = Instant::now();
    // The input goes back to the context before the dispatch reads it.
    drop(b.rented.take());
    let batched = b.batched.clone();
    let input = b.input.clone();
    let slots: Vec<Option<(Vec<Tensor>, ModelTiming)>> = b
        .slots
        .iter()
        .map(|s| match s.filled {
            Some(Ok(())) => Some((s.outputs.clone(), s.timing)),
            _ => None,
        })
        .collect();
    let fills: Vec<wgpu::CommandBuffer> = b
        .slots
        .iter_mut()
        .filter_map(|s| s.commands.take())
        .collect();
    // A slot whose input failed reads nothing.
    let afters: Vec<wgpu::CommandBuffer> = b
        .slots
        .iter_mut()
        .filter(|s| matches!(s.filled, Some(Ok(()))))
        .filter_map(|s| s.after.take())
        .collect();
    drop(g);
    let result = instance.execute(&batched, &input, &slots, fills, afters);
    let submit = started.elapsed();
    let mut g = instance.gather.lock().unwrap();
    let b = g.batches.remove(&id).expect("running batches stay");
    let n = b.slots.len();
    for (i, s) in b.slots.into_iter().enumerate() {
        if s.abandoned {
            continue;
        }
        let r = match (s.filled, &result) {
            (Some(Err(e)), _) => Err(e),
            (_, Err(e)) => Err(e.to_string()),
            (_, Ok((ms, submission))) => Ok(Done {
                model_ms: *ms,
                items: n,
                waited: started.saturating_duration_since(s.reserved),
                submit,
                submission: submission.clone(),
            }),
        };
        g.results.insert((id, i), r);
    }
    batched.give_input(input);
    instance.changed.notify_all();
    g
}
