//! The CPU back end's timeline: one worker thread runs the context's jobs
//! (writes, dispatches, reads) in the order they were queued, each on one of
//! rayon's workers, while the caller goes on. Tensors are byte vectors the
//! jobs lock; a read answers through a reply slot (`reply`).
//!
//! A job that panics fails the context (`fault`): the panic is caught, its
//! message recorded, the jobs queued after it are skipped, and every later
//! call, and every read still waiting, returns the error.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::fault::{failed, Fault};
use super::reply::{slot, Pending};
use super::{CpuPlan, Values};
use crate::error::{Error, Result};
use crate::ml::backend::Timing;
use crate::ml::Profile;

type Job = Box<dyn FnOnce() + Send>;

/// A CPU tensor's bytes, shared by the tensor and the jobs queued on it.
#[derive(Clone)]
pub(crate) struct CpuStorage(Arc<Mutex<Vec<u8>>>);

impl CpuStorage {
    pub fn zeroed(len: usize) -> CpuStorage {
        CpuStorage(Arc::new(Mutex::new(vec![0; len])))
    }

    /// Poisoning is ignored: a job that panicked has failed the context
    /// already, and a destroyed tensor must still free its bytes.
    pub fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Frees the bytes; jobs still queued on them see an empty tensor and
    /// skip it.
    pub fn clear(&self) {
        *self.lock() = Vec::new();
    }
}

pub(crate) struct CpuBackend {
    worker: Mutex<Option<Sender<Job>>>,
    fault: Arc<Fault>,
}

#[cfg(test)]
thread_local! {
    static WORKERS_STARTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many CPU workers the calling thread has started (for tests that
/// check a code path starts none).
#[cfg(test)]
pub(crate) fn workers_started_here() -> usize {
    WORKERS_STARTED.with(|n| n.get())
}

impl CpuBackend {
    pub fn start() -> CpuBackend {
        #[cfg(test)]
        WORKERS_STARTED.with(|n| n.set(n.get() + 1));
        let (tx, rx) = channel::<Job>();
        let fault = Arc::new(Fault::default());
        let failed = fault.clone();
        std::thread::Builder::new()
            .name("wgnn-cpu-context".into())
            .spawn(move || {
                for job in rx {
                    // Once failed, later jobs are dropped unrun: they would
                    // compute from what the failed job left. A dropped read
                    // answers its caller with the fault.
                    if failed.failed() {
                        continue;
                    }
                    // Each job runs on one of rayon's workers, so the kernels'
                    // parallel loops split work among workers that are already
                    // awake instead of waking the pool from outside per op.
                    rayon::scope(|_| job());
                }
            })
            .expect("spawning the CPU context's worker thread");
        CpuBackend {
            worker: Mutex::new(Some(tx)),
            fault,
        }
    }

    pub fn check(&self, what: &str) -> Result<()> {
        self.fault.check(what)
    }

    /// Queues `work` on the worker. A panic in it is caught there and
    /// recorded as the context's fault.
    pub fn queue(&self, what: &str, work: impl FnOnce() + Send + 'static) -> Result<()> {
        let fault = self.fault.clone();
        self.send(
            what,
            Box::new(move || {
                let _ = guarded(&fault, work);
            }),
        )
    }

    /// Queues `work` and returns its pending result. `work` does not own the
    /// answer, so a panic is recorded before the caller hears of it.
    fn ask<T: Send + 'static>(
        &self,
        what: &'static str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<Pending<T>> {
        let fault = self.fault.clone();
        let (answer, pending) = slot(what, fault.clone());
        let job = move || answer.send(guarded(&fault, work).map_err(|m| failed(what, &m)));
        self.send(what, Box::new(job))?;
        Ok(pending)
    }

    fn send(&self, what: &str, job: Job) -> Result<()> {
        self.worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|tx| tx.send(job).ok())
            .ok_or_else(|| Error::invalid(format!("{what}: the CPU context's worker has stopped")))
    }

    pub fn write(&self, storage: &CpuStorage, bytes: &[u8]) -> Result<()> {
        let dst = storage.clone();
        let data = bytes.to_vec();
        self.queue("write_tensor", move || {
            let mut dst = dst.lock();
            // A tensor destroyed since stays freed.
            if dst.len() == data.len() {
                *dst = data;
            }
        })
    }

    pub fn read(&self, storage: &CpuStorage) -> Result<Pending<Vec<u8>>> {
        let src = storage.clone();
        self.ask("read_tensor", move || src.lock().clone())
    }

    pub fn dispatch(
        &self,
        what: &'static str,
        plan: &CpuPlan,
        inputs: Vec<CpuStorage>,
        outputs: Vec<CpuStorage>,
        timing: Timing<'_>,
    ) -> Result<()> {
        let plan = plan.clone();
        match timing {
            Timing::Off => self.queue(what, move || plan.run_on_storage(&inputs, &outputs, None)),
            Timing::PerKernel(profile) => {
                *profile = self
                    .ask(what, move || {
                        let mut profile = Profile::default();
                        plan.run_on_storage(&inputs, &outputs, Some(&mut profile));
                        profile
                    })?
                    .wait()?;
                Ok(())
            }
            Timing::Whole(_) => Err(Error::invalid(format!(
                "{what}: this graph runs on a CPU context, which has no GPU time; \
                 use profile for its wall time per node"
            ))),
            Timing::Into(_) => Err(Error::invalid(format!(
                "{what}: this graph runs on a CPU context, which records no GPU commands"
            ))),
        }
    }

    /// Takes no more work; the worker ends once the work already queued is
    /// done.
    pub fn stop(&self) {
        self.worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// Runs `work`, turning a panic into the context's fault (its message).
fn guarded<T>(fault: &Fault, work: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
        let message = fault.record(&*payload);
        log::error!("a CPU context job panicked ({message}); the context has failed");
        message
    })
}

impl CpuPlan {
    /// The body of a dispatch: reads the input tensors' bytes, runs, writes
    /// the outputs'. Tensors destroyed while the dispatch was queued are
    /// skipped (the dispatch has nothing left to compute into). With
    /// `profile`, each node's wall time on the worker is recorded in it.
    fn run_on_storage(
        &self,
        inputs: &[CpuStorage],
        outputs: &[CpuStorage],
        profile: Option<&mut Profile>,
    ) {
        let ir = &self.ir;
        let mut values = Vec::with_capacity(inputs.len());
        for ((name, id), storage) in ir.inputs.iter().zip(inputs) {
            let desc = ir.desc(*id);
            let bytes = storage.lock();
            if bytes.len() != desc.byte_length() {
                log::warn!(
                    "dispatch skipped: input '{name}' was destroyed before the dispatch ran"
                );
                return;
            }
            values.push(Values::from_bytes(desc.data_type, &bytes));
        }
        let results = self.run(values, profile);
        for (((_, id), storage), v) in ir.outputs.iter().zip(outputs).zip(results) {
            let desc = ir.desc(*id);
            let mut dst = storage.lock();
            if dst.len() == desc.byte_length() {
                *dst = v.to_bytes(desc.data_type);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use crate::ml::graph::Graph;
    use crate::ml::graph_ir::{GraphIr, Node, OperandInfo, OperandKind};
    use crate::ml::ops::{Activation, Op};
    use crate::ml::{Context, DataType, GraphBuilder, OperandDescriptor, Tensor, TensorDescriptor};

    fn int_tensor(ctx: &Context) -> Tensor {
        let desc = TensorDescriptor::new(DataType::Int32, [4])
            .readable()
            .writable();
        ctx.create_tensor(desc).unwrap()
    }

    /// relu on int32, which the builder refuses: written straight as IR so
    /// the CPU kernel meets values it cannot take and panics, as a kernel
    /// bug would.
    fn broken_graph(ctx: &Context) -> Graph {
        let desc = OperandDescriptor::new(DataType::Int32, [4]);
        let operand = |kind, label: &str| OperandInfo {
            desc: desc.clone(),
            kind,
            label: label.into(),
        };
        let ir = GraphIr {
            operands: vec![
                operand(OperandKind::Input, "input 'x'"),
                operand(OperandKind::Computed, "relu #0"),
            ],
            nodes: vec![Node {
                op: Op::Unary(Activation::Relu),
                inputs: vec![0],
                outputs: vec![1],
                activations: Vec::new(),
                input_scale: false,
                residual: false,
                late_residual: false,
                input_upsample: None,
            }],
            inputs: vec![("x".into(), 0)],
            outputs: vec![("y".into(), 1)],
        };
        Graph::build(ctx, ir).unwrap()
    }

    fn relu_graph(ctx: &Context) -> Graph {
        let b = GraphBuilder::new(ctx);
        let x = b.input("x", OperandDescriptor::f32([4])).unwrap();
        let y = b.relu(&x).unwrap();
        b.build(&[("y", &y)]).unwrap()
    }

    fn assert_names_fault(e: crate::Error, what: &str, message: &str) {
        let e = e.to_string();
        assert!(
            e.contains(&format!("{what}: the CPU context failed: ")) && e.contains(message),
            "{e}"
        );
    }

    #[test]
    fn a_panicking_dispatch_fails_the_context() {
        let ctx = Context::cpu();
        let graph = broken_graph(&ctx);
        let (x, y) = (int_tensor(&ctx), int_tensor(&ctx));
        ctx.write_tensor(&x, bytemuck::cast_slice(&[1i32, -2, 3, -4]))
            .unwrap();
        ctx.dispatch(&graph, &[("x", &x)], &[("y", &y)]).unwrap();
        // Whether the read is queued before the job panics or refused after,
        // it must not hand back the unchanged zeros.
        let e = ctx.read_tensor(&y).and_then(|r| r.wait()).unwrap_err();
        assert_names_fault(e, "read_tensor", "expected float values");

        // Sticky: every later call names the same fault.
        let bytes = [0u8; 16];
        let e = ctx.write_tensor(&x, &bytes).unwrap_err();
        assert_names_fault(e, "write_tensor", "expected float values");
        let e = ctx.read_tensor(&y).err().expect("read on a failed context");
        assert_names_fault(e, "read_tensor", "expected float values");
        let e = ctx
            .dispatch(&graph, &[("x", &x)], &[("y", &y)])
            .unwrap_err();
        assert_names_fault(e, "dispatch", "expected float values");
        let e = graph.profile(&ctx, &[("x", &x)], &[("y", &y)]).unwrap_err();
        assert_names_fault(e, "profile", "expected float values");
        let desc = TensorDescriptor::new(DataType::Float32, [2]);
        let e = ctx.create_tensor(desc).unwrap_err();
        assert_names_fault(e, "create_tensor", "expected float values");
        let e = ctx.read_f32(&x).unwrap_err();
        assert!(e.to_string().contains("is not float32"), "{e}");

        // Another context is unaffected.
        let other = Context::cpu();
        let t = int_tensor(&other);
        other.write_tensor(&t, &[7; 16]).unwrap();
        assert_eq!(other.read_tensor_blocking(&t).unwrap(), [7; 16]);
    }

    #[test]
    fn reads_queued_behind_a_panicking_job_resolve_to_the_fault() {
        let ctx = Context::cpu();
        let t = int_tensor(&ctx);
        // The job waits for the reads to be queued behind it, then panics.
        let (open, gate) = channel::<()>();
        let cpu = ctx.inner.backend.cpu().unwrap();
        cpu.queue("test", move || {
            gate.recv().ok();
            panic!("a kernel bug, on purpose");
        })
        .unwrap();
        let waited = ctx.read_tensor(&t).unwrap();
        let awaited = ctx.read_tensor(&t).unwrap();
        let profiled = std::thread::spawn({
            let ctx = ctx.clone();
            let graph = relu_graph(&ctx);
            let desc = TensorDescriptor::new(DataType::Float32, [4]);
            let x = ctx.create_tensor(desc.clone()).unwrap();
            let y = ctx.create_tensor(desc).unwrap();
            move || graph.profile(&ctx, &[("x", &x)], &[("y", &y)]).err()
        });
        open.send(()).unwrap();
        let e = waited.wait().unwrap_err();
        assert_names_fault(e, "read_tensor", "a kernel bug, on purpose");
        let e = pollster::block_on(awaited).unwrap_err();
        assert_names_fault(e, "read_tensor", "a kernel bug, on purpose");
        // A profile queued behind it (or refused after it) fails the same way.
        let e = profiled
            .join()
            .unwrap()
            .expect("profile on a failed context");
        assert_names_fault(e, "profile", "a kernel bug, on purpose");
        let e = ctx.write_tensor(&t, &[0; 16]).unwrap_err();
        assert_names_fault(e, "write_tensor", "a kernel bug, on purpose");
    }
}
