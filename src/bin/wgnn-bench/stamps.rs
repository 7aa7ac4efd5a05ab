//! GPU timestamps around work the bench encodes itself (custom WGSL, the
//! video passes), and small statistics helpers shared by the subcommands.
//! Graph kernels are timed by `Graph::profile` instead.

use wgnn::gpu::Gpu;

/// Pairs of timestamps (begin, end), each pair bracketing some passes of one
/// command encoder. On Vulkan a pass's timestamp is written once all earlier
/// commands have finished (bottom of pipe), so an empty pass before and after
/// the work measures exactly that work.
pub struct Stamps {
    gpu: Gpu,
    set: wgpu::QuerySet,
    pairs: u32,
}

impl Stamps {
    pub fn new(gpu: &Gpu, pairs: u32) -> wgnn::Result<Stamps> {
        if !gpu.has(wgpu::Features::TIMESTAMP_QUERY) {
            return Err(wgnn::Error::Invalid(format!(
                "{} has no TIMESTAMP_QUERY feature; GPU times need it",
                gpu.info().name
            )));
        }
        let set = gpu.scoped("timestamp query set", || {
            gpu.device().create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("wgnn-bench stamps"),
                ty: wgpu::QueryType::Timestamp,
                count: pairs * 2,
            })
        })?;
        Ok(Stamps {
            gpu: gpu.clone(),
            set,
            pairs,
        })
    }

    /// Timestamp writes for a pass that is itself the whole measured work.
    pub fn pass_writes(&self, pair: u32) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(2 * pair),
            end_of_pass_write_index: Some(2 * pair + 1),
        }
    }

    fn mark(&self, encoder: &mut wgpu::CommandEncoder, index: u32) {
        let _ = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgnn-bench stamp"),
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &self.set,
                beginning_of_pass_write_index: Some(index),
                end_of_pass_write_index: None,
            }),
        });
    }

    /// Starts pair `pair`: everything encoded after this, up to [`Stamps::end`].
    pub fn begin(&self, encoder: &mut wgpu::CommandEncoder, pair: u32) {
        self.mark(encoder, 2 * pair);
    }

    pub fn end(&self, encoder: &mut wgpu::CommandEncoder, pair: u32) {
        self.mark(encoder, 2 * pair + 1);
    }

    /// Waits for the GPU and returns the milliseconds of every pair. Reading
    /// them back is a (counted) download: keep it out of transfer counts.
    pub fn read_ms(&self) -> wgnn::Result<Vec<f64>> {
        Ok(self
            .read_times()?
            .chunks_exact(2)
            .map(|t| (t[1] - t[0]).max(0.0))
            .collect())
    }

    /// Waits for the GPU and returns every timestamp in milliseconds, on the
    /// GPU's clock (begin and end of pair 0, then pair 1, ...): for the
    /// time between pairs as well as within them.
    pub fn read_times(&self) -> wgnn::Result<Vec<f64>> {
        let gpu = &self.gpu;
        let buffer = gpu.scoped("timestamp resolve buffer", || {
            gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgnn-bench stamps"),
                size: u64::from(self.pairs) * 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        })?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        encoder.resolve_query_set(&self.set, 0..self.pairs * 2, &buffer, 0);
        gpu.submit("timestamp resolve", [encoder.finish()])?;
        let bytes = gpu.download_buffer(&buffer, 0, buffer.size())?.wait()?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        let period = f64::from(gpu.queue().get_timestamp_period());
        // Relative to the first, so that f64 keeps nanoseconds exact.
        let first = ticks.first().copied().unwrap_or(0);
        Ok(ticks
            .iter()
            .map(|t| t.saturating_sub(first) as f64 * period / 1e6)
            .collect())
    }
}

/// Submits an encoder, turning validation errors into `Err`.
pub fn submit(gpu: &Gpu, encoder: wgpu::CommandEncoder) -> wgnn::Result<wgpu::SubmissionIndex> {
    gpu.submit("submit", [encoder.finish()])
}

pub fn encoder(gpu: &Gpu) -> wgpu::CommandEncoder {
    gpu.device().create_command_encoder(&Default::default())
}

/// Median and minimum of some samples (the input order does not matter).
pub fn median_min(samples: &[f64]) -> (f64, f64) {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    (v[v.len() / 2], v[0])
}

/// Largest absolute difference (NaN if any value is NaN or the lengths
/// differ), and the largest magnitude of `reference`.
pub fn max_abs_diff(a: &[f32], reference: &[f32]) -> (f32, f32) {
    let scale = reference.iter().fold(0.0f32, |m, y| m.max(y.abs()));
    if a.len() != reference.len() {
        return (f32::NAN, scale);
    }
    let mut diff = 0.0f32;
    for (x, y) in a.iter().zip(reference) {
        let d = (x - y).abs();
        if d.is_nan() {
            return (f32::NAN, scale);
        }
        diff = diff.max(d);
    }
    (diff, scale)
}
