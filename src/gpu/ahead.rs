//! Command buffers encoded one use ahead, on a worker thread.
//!
//! wgpu 30 encodes a command buffer in `CommandEncoder::finish`: it walks
//! every recorded dispatch, merges its bind groups' usages and writes the
//! barriers. A graph's kernels are the same commands on every dispatch (the
//! inputs and outputs are copied in and out around them), so they can be
//! encoded before they are needed. On an H100 the 55 dispatches of the
//! selfie model took 0.19 ms of `finish` on the thread that dispatched
//! (docs/BENCHMARKS.md), a fifth of a 1080p frame's host time; encoded
//! ahead, that thread takes a finished buffer and queues the next one's
//! encoding on the device's worker, which does it while the caller uploads
//! and encodes its next frame.
//!
//! Each [`Gpu`] has one worker thread, started at the first job and ended
//! with the device's last handle. Jobs are small (one command buffer) and
//! run in order; a job's result waits in its [`Ahead`] until the next use,
//! which blocks only if the worker has not finished it yet.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

use super::Gpu;
use crate::error::Result;

/// Set to 0, graphs encode their kernels when dispatched, on the calling
/// thread, as before (to compare the two on a device).
pub const ENCODE_AHEAD_ENV: &str = "WGNN_ENCODE_AHEAD";

/// A job for the device's worker.
type Job = Box<dyn FnOnce() + Send>;

/// Encodes one command buffer: the same commands every time it is called.
pub type Recipe = Arc<dyn Fn(&Gpu) -> Result<wgpu::CommandBuffer> + Send + Sync>;

/// The device's worker thread, started at its first job.
#[derive(Default)]
pub(super) struct Worker {
    jobs: Mutex<Option<Sender<Job>>>,
}

impl Worker {
    /// Queues `job`; gives it back where no worker could be started.
    fn run(&self, job: Job) -> std::result::Result<(), Job> {
        let mut jobs = self.jobs.lock().unwrap();
        if jobs.is_none() {
            let (tx, rx) = mpsc::channel::<Job>();
            // Ends when the device's last handle drops the sender.
            let started = std::thread::Builder::new()
                .name("wgnn-encode".into())
                .spawn(move || rx.into_iter().for_each(|job| job()));
            if started.is_err() {
                return Err(job);
            }
            *jobs = Some(tx);
        }
        let tx = jobs.as_ref().expect("just set");
        tx.send(job).map_err(|e| {
            // The thread has gone (a job panicked): the next job starts
            // another.
            *jobs = None;
            e.0
        })
    }
}

/// One command buffer of a fixed recipe, kept encoded one use ahead.
pub struct Ahead {
    recipe: Recipe,
    enabled: bool,
    next: Mutex<Option<Receiver<Result<wgpu::CommandBuffer>>>>,
}

impl Ahead {
    /// Nothing is encoded until the first [`Ahead::take`], which encodes on
    /// the calling thread (a graph dispatched once costs no second
    /// encoding) and queues the next.
    pub fn new(recipe: Recipe) -> Ahead {
        Ahead {
            recipe,
            enabled: std::env::var(ENCODE_AHEAD_ENV).as_deref() != Ok("0"),
            next: Mutex::new(None),
        }
    }

    /// A command buffer of the recipe: the one encoded ahead (waiting for
    /// the worker if it is still at it), or one encoded here where none
    /// is queued (the first use, or a use racing another thread's); then
    /// the next one is queued. Each buffer is used once.
    pub fn take(&self, gpu: &Gpu) -> Result<wgpu::CommandBuffer> {
        if !self.enabled {
            return (self.recipe)(gpu);
        }
        let queued = self.next.lock().unwrap().take();
        let buffer = match queued.map(|rx| rx.recv()) {
            Some(Ok(encoded)) => encoded,
            // None queued, or the worker went without answering.
            _ => (self.recipe)(gpu),
        }?;
        self.queue_next(gpu);
        Ok(buffer)
    }

    /// Queues the next encoding on the device's worker, unless one is
    /// queued already (another thread's take) or the device has failed.
    fn queue_next(&self, gpu: &Gpu) {
        let mut next = self.next.lock().unwrap();
        if next.is_some() || gpu.check().is_err() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let (recipe, device) = (self.recipe.clone(), gpu.clone());
        let job: Job = Box::new(move || {
            let encoded = recipe(&device);
            // What the recipe holds (counted buffers and pipelines) is let
            // go before the answer, so that once [`Ahead::clear`] has it
            // the live counts are the owner's alone.
            drop((recipe, device));
            let _ = tx.send(encoded);
        });
        if gpu.worker().run(job).is_ok() {
            *next = Some(rx);
        }
    }

    /// Drops the buffer encoded ahead, waiting for the worker if it is
    /// still encoding it.
    pub fn clear(&self) {
        let pending = self.next.lock().unwrap().take();
        if let Some(rx) = pending {
            let _ = rx.recv();
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.clear();
    }
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

/// One submission's commands, recorded by several parties in order: the
/// current encoder for a caller's own passes, and command buffers finished
/// elsewhere (a graph's kernels encoded ahead) put between. The queue runs
/// them in the order they were added.
pub struct Commands {
    gpu: Gpu,
    done: Vec<wgpu::CommandBuffer>,
    encoder: Option<wgpu::CommandEncoder>,
}

impl Commands {
    pub fn new(gpu: &Gpu) -> Commands {
        Commands {
            gpu: gpu.clone(),
            done: Vec::new(),
            encoder: None,
        }
    }

    /// Commands that start with `buffers`, finished elsewhere (each item's
    /// input a batch gathers), in their order.
    pub fn after(gpu: &Gpu, buffers: Vec<wgpu::CommandBuffer>) -> Commands {
        Commands {
            gpu: gpu.clone(),
            done: buffers,
            encoder: None,
        }
    }

    /// The encoder for what comes next (opened where none is).
    pub fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        self.encoder.get_or_insert_with(|| {
            self.gpu
                .device()
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("wgnn commands"),
                })
        })
    }

    /// Puts `buffer` after everything recorded so far; `what` names the
    /// commands recorded before it in an error (wgpu 30 validates them as
    /// their encoder finishes).
    pub fn append(&mut self, what: &str, buffer: wgpu::CommandBuffer) -> Result<()> {
        self.extend(what, [buffer])
    }

    /// [`Commands::append`] of several buffers, in their order.
    pub fn extend(
        &mut self,
        what: &str,
        buffers: impl IntoIterator<Item = wgpu::CommandBuffer>,
    ) -> Result<()> {
        if self.encoder.is_some() {
            let gpu = self.gpu.clone();
            gpu.scoped(what, || self.close())?;
        }
        self.done.extend(buffers);
        Ok(())
    }

    fn close(&mut self) {
        if let Some(encoder) = self.encoder.take() {
            self.done.push(encoder.finish());
        }
    }

    /// Submits everything in one submission; `what` names it in an error.
    pub fn submit(mut self, what: &str) -> Result<wgpu::SubmissionIndex> {
        let gpu = self.gpu.clone();
        gpu.scoped(what, || {
            self.close();
            gpu.submit_unscoped(self.done)
        })
    }

    /// Submits `first` and then everything recorded here, in one
    /// submission; `what` names it in an error.
    pub fn submit_after(
        mut self,
        first: wgpu::CommandBuffer,
        what: &str,
    ) -> Result<wgpu::SubmissionIndex> {
        let gpu = self.gpu.clone();
        gpu.scoped(what, || {
            self.close();
            gpu.submit_unscoped(std::iter::once(first).chain(self.done))
        })
    }
}

impl std::fmt::Debug for Commands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Commands")
            .field("buffers", &self.done.len())
            .field("open", &self.encoder.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::error::Error;

    fn gpu() -> Gpu {
        Gpu::new().unwrap_or_else(|e| {
            panic!("this test needs a GPU adapter (install mesa-vulkan-drivers for lavapipe): {e}")
        })
    }

    fn buffer(gpu: &Gpu, data: &[u32]) -> crate::gpu::live::Buffer {
        gpu.create_buffer_with_data(
            "ahead test",
            bytemuck::cast_slice(data),
            wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        )
        .unwrap()
    }

    fn read(gpu: &Gpu, b: &wgpu::Buffer) -> Vec<u32> {
        let bytes = gpu.download_buffer(b, 0, b.size()).unwrap().wait().unwrap();
        bytemuck::pod_collect_to_vec(&bytes)
    }

    #[test]
    fn commands_run_in_the_order_they_were_added() {
        let gpu = gpu();
        let [a, b, c, d] = [[1, 2, 3, 4], [0; 4], [0; 4], [0; 4]].map(|v| buffer(&gpu, &v));
        let mut elsewhere = gpu.device().create_command_encoder(&Default::default());
        elsewhere.copy_buffer_to_buffer(&b, 0, &c, 0, 16);
        let mut commands = Commands::new(&gpu);
        commands.encoder().copy_buffer_to_buffer(&a, 0, &b, 0, 16);
        commands
            .append("ordering test", elsewhere.finish())
            .unwrap();
        commands.encoder().copy_buffer_to_buffer(&c, 0, &d, 0, 16);
        commands.submit("ordering test").unwrap();
        // Each copy reads what the one before wrote: any other order leaves
        // zeros in d.
        assert_eq!(read(&gpu, &d), [1, 2, 3, 4]);
    }

    #[test]
    fn a_bad_command_is_an_error_where_it_is_closed_not_a_device_fault() {
        let gpu = gpu();
        let [a, b] = [[1, 2, 3, 4], [0; 4]].map(|v| buffer(&gpu, &v));
        let empty = gpu
            .device()
            .create_command_encoder(&Default::default())
            .finish();
        let mut commands = Commands::new(&gpu);
        // 32 bytes out of 16-byte buffers.
        commands.encoder().copy_buffer_to_buffer(&a, 0, &b, 0, 32);
        match commands.append("bad copy", empty) {
            Err(Error::Gpu { what, .. }) => assert_eq!(what, "bad copy"),
            other => panic!("expected a GPU error naming the commands, got {other:?}"),
        }
        let mut commands = Commands::new(&gpu);
        commands.encoder().copy_buffer_to_buffer(&a, 0, &b, 0, 32);
        match commands.submit("bad submit") {
            Err(Error::Gpu { what, .. }) => assert_eq!(what, "bad submit"),
            other => panic!("expected a GPU error naming the submission, got {other:?}"),
        }
        // Both were caught where they were made: the device is fine.
        gpu.check().unwrap();
    }

    #[test]
    fn each_use_takes_a_buffer_the_worker_encoded_ahead() {
        let gpu = gpu();
        let [a, b] = [[5, 6, 7, 8], [0; 4]].map(|v| buffer(&gpu, &v));
        let encoded = Arc::new(AtomicUsize::new(0));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let (count, names, target) = (encoded.clone(), threads.clone(), b.clone());
        let recipe: Recipe = Arc::new(move |gpu: &Gpu| {
            count.fetch_add(1, Ordering::SeqCst);
            let name = std::thread::current().name().map(str::to_string);
            names.lock().unwrap().push(name);
            let mut encoder = gpu.device().create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&a, 0, &target, 0, 16);
            Ok(encoder.finish())
        });
        let ahead = Ahead {
            recipe,
            enabled: true,
            next: Mutex::new(None),
        };
        for _ in 0..3 {
            let taken = ahead.take(&gpu).unwrap();
            gpu.submit("ahead test", [taken]).unwrap();
        }
        ahead.clear();
        // Three used, and the fourth encoded ahead and dropped unsubmitted.
        assert_eq!(encoded.load(Ordering::SeqCst), 4);
        let names = threads.lock().unwrap().clone();
        assert_ne!(
            names[0].as_deref(),
            Some("wgnn-encode"),
            "the first use encodes in place"
        );
        for name in &names[1..] {
            assert_eq!(name.as_deref(), Some("wgnn-encode"));
        }
        assert_eq!(read(&gpu, &b), [5, 6, 7, 8]);
    }

    #[test]
    fn a_lost_device_fails_the_take_and_queues_nothing() {
        let gpu = gpu();
        let recipe: Recipe = Arc::new(|gpu: &Gpu| {
            gpu.scoped("ahead test", || {
                gpu.device()
                    .create_command_encoder(&Default::default())
                    .finish()
            })
        });
        let ahead = Ahead {
            recipe,
            enabled: true,
            next: Mutex::new(None),
        };
        ahead.take(&gpu).unwrap();
        gpu.destroy();
        // The one encoded ahead may predate the loss; the one after it not.
        let _ = ahead.take(&gpu);
        match ahead.take(&gpu) {
            Err(Error::DeviceLost(_)) => {}
            other => panic!("expected a lost device, got {other:?}"),
        }
        assert!(ahead.next.lock().unwrap().is_none());
    }
}
