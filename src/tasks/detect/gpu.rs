//! The GPU decoder: one compute pass over the model's rented outputs that
//! thresholds, decodes and compacts the boxes that pass into a small
//! buffer, of which only the counter and the records are read back.

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::gpu::bind_cache::{BindCache, Bound};
use crate::gpu::{Checks, Download, Gpu, RecordedDownload, Specialization, TransferStats};
use crate::ml::DataType;
use crate::video::TensorBuffer;

use super::post::MAX_CANDIDATES;
use super::spec::{Scheme, Spec};

/// Bytes before the records: the counter and padding.
const HEADER: u64 = 16;
/// The first read-back holds the header and as many records as fit in
/// this; a second read fetches the rest only when more passed.
const FIRST_READ: u64 = 4096;

/// Bind groups kept: a stream with frames in flight cycles through a few
/// output sets and candidate buffers, one pair per frame in flight.
const BINDINGS: usize = 16;

/// `Params` of decode.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct DecodeParams {
    pub scale: [f32; 4],
    pub input_size: [f32; 2],
    pub threshold: f32,
    pub clip: f32,
    pub n: u32,
    pub classes: u32,
    pub row: u32,
    pub box_offset: u32,
    pub keypoint_offset: u32,
    pub keypoints: u32,
    pub keypoint_stride: u32,
    pub xywh: u32,
    pub normalized: u32,
    pub cap: u32,
    pub record_words: u32,
    pub extras: u32,
    /// Listed: subtracted from each label (rows below it are dropped).
    pub label_offset: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

impl DecodeParams {
    fn of(spec: &Spec) -> DecodeParams {
        let mut p = DecodeParams {
            scale: [1.0; 4],
            input_size: spec.input,
            threshold: spec.raw_threshold,
            clip: -1.0,
            n: spec.n as u32,
            classes: spec.classes as u32,
            row: 0,
            box_offset: 0,
            keypoint_offset: 0,
            keypoints: spec.keypoints as u32,
            keypoint_stride: 2,
            xywh: 0,
            normalized: 0,
            cap: MAX_CANDIDATES as u32,
            record_words: spec.record_words() as u32,
            extras: spec.extras as u32,
            label_offset: 0,
            _pad0: 0,
            _pad1: 0,
            _pad2: 0,
        };
        match &spec.scheme {
            Scheme::Ssd { options, clip, .. } => {
                p.scale = [
                    options.x_scale,
                    options.y_scale,
                    options.w_scale,
                    options.h_scale,
                ];
                p.clip = clip.unwrap_or(-1.0);
                p.row = options.num_coords as u32;
                p.box_offset = options.box_coord_offset as u32;
                p.keypoint_offset = options.keypoint_coord_offset as u32;
                p.keypoint_stride = options.num_values_per_keypoint as u32;
                p.xywh = u32::from(options.reverse_output_order);
            }
            Scheme::Yolo { v8, normalized } => {
                p.row = if *v8 {
                    0
                } else {
                    (spec.classes + 5 + spec.extras) as u32
                };
                p.normalized = u32::from(*normalized);
            }
            Scheme::End2End { row, normalized } => {
                p.row = *row as u32;
                p.normalized = u32::from(*normalized);
            }
            Scheme::Listed {
                normalized,
                label_offset,
                ..
            } => {
                p.normalized = u32::from(*normalized);
                p.label_offset = *label_offset;
            }
        }
        p
    }
}

/// What shapes the decode kernel's code: the decoder and the two element
/// types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DecodeSwitches {
    /// 0 SSD anchors, 1 YOLOv5, 2 YOLOv8, 3 end2end, 4 listed.
    pub decoder: u32,
    pub box_f16: bool,
    pub score_f16: bool,
}

impl DecodeSwitches {
    fn of(spec: &Spec) -> DecodeSwitches {
        DecodeSwitches {
            decoder: match spec.scheme {
                Scheme::Ssd { .. } => 0,
                Scheme::Yolo { v8: false, .. } => 1,
                Scheme::Yolo { v8: true, .. } => 2,
                Scheme::End2End { .. } => 3,
                Scheme::Listed { .. } => 4,
            },
            box_f16: spec.boxes.data_type == DataType::Float16,
            score_f16: spec.scores.data_type == DataType::Float16,
        }
    }

    pub(crate) fn source(&self) -> String {
        let ty = |f16: bool| if f16 { "f16" } else { "f32" };
        let enables: &[&str] = if self.box_f16 || self.score_f16 {
            &["f16"]
        } else {
            &[]
        };
        Specialization::new()
            .alias("box_t", ty(self.box_f16))
            .alias("score_t", ty(self.score_f16))
            .u32("DECODER", self.decoder)
            .module(enables, include_str!("decode.wgsl"))
    }

    /// Every combination, for the shader tests.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<DecodeSwitches> {
        let mut all = Vec::new();
        for decoder in 0..5 {
            for box_f16 in [false, true] {
                for score_f16 in [false, true] {
                    all.push(DecodeSwitches {
                        decoder,
                        box_f16,
                        score_f16,
                    });
                }
            }
        }
        all
    }
}

/// The decode pass for one [`Spec`], with its buffers.
pub(crate) struct GpuDecoder {
    gpu: Gpu,
    pipeline: crate::gpu::live::ComputePipeline,
    params: crate::gpu::live::Buffer,
    anchors: crate::gpu::live::Buffer,
    /// Bound where a decoder reads no labels output.
    no_labels: crate::gpu::live::Buffer,
    /// The candidate buffers not in use: each frame's pass writes one and
    /// keeps it until its records are read, so that a frame whose result
    /// is still awaited is not overwritten by the next one's pass.
    free: Arc<Mutex<Vec<crate::gpu::live::Buffer>>>,
    /// The pass's bind groups, by the outputs and candidate buffer bound
    /// (a stream cycles through a few of each).
    binds: BindCache,
    out_size: u64,
    n: u32,
    record_bytes: u64,
    /// Records in the first read-back.
    first_block: u64,
    /// Uploads made when built (parameters, anchors), until taken.
    pending: TransferStats,
}

impl GpuDecoder {
    pub fn new(gpu: &Gpu, spec: &Spec) -> Result<GpuDecoder> {
        let switches = DecodeSwitches::of(spec);
        if (switches.box_f16 || switches.score_f16) && !gpu.has(wgpu::Features::SHADER_F16) {
            return Err(Error::invalid(format!(
                "detect: the model's outputs are float16, which {} cannot read in shaders",
                gpu.info().name
            )));
        }
        let groups = spec.n.div_ceil(64) as u64;
        let limit = u64::from(gpu.limits().max_compute_workgroups_per_dimension);
        if groups > limit {
            return Err(Error::invalid(format!(
                "detect: {} boxes need {groups} workgroups, over the device limit \
                 max_compute_workgroups_per_dimension = {limit}",
                spec.n
            )));
        }
        let pipeline =
            gpu.compute_pipeline("wgnn detect decode", &switches.source(), Checks::All)?;
        let mut pending = TransferStats::default();
        let params = DecodeParams::of(spec);
        let params = gpu.create_buffer_with_data(
            "wgnn detect params",
            bytemuck::bytes_of(&params),
            wgpu::BufferUsages::UNIFORM,
        )?;
        pending.uploads += 1;
        pending.upload_bytes += size_of::<DecodeParams>() as u64;
        let anchors: Vec<[f32; 4]> = match &spec.scheme {
            Scheme::Ssd { anchors, .. } => anchors
                .iter()
                .map(|a| [a.x_center, a.y_center, a.w, a.h])
                .collect(),
            Scheme::Yolo { .. } | Scheme::End2End { .. } | Scheme::Listed { .. } => {
                vec![[0.0; 4]]
            }
        };
        let anchor_bytes: &[u8] = bytemuck::cast_slice(&anchors);
        let anchors = gpu.create_buffer_with_data(
            "wgnn detect anchors",
            anchor_bytes,
            wgpu::BufferUsages::STORAGE,
        )?;
        pending.uploads += 1;
        pending.upload_bytes += anchor_bytes.len() as u64;
        let no_labels = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgnn detect no labels"),
            size: 4,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })?;
        let record_bytes = 4 * spec.record_words() as u64;
        let first_block = ((FIRST_READ - HEADER) / record_bytes).clamp(1, MAX_CANDIDATES as u64);
        Ok(GpuDecoder {
            gpu: gpu.clone(),
            pipeline,
            params,
            anchors,
            no_labels,
            free: Arc::default(),
            binds: BindCache::new(BINDINGS),
            out_size: HEADER + MAX_CANDIDATES as u64 * record_bytes,
            n: spec.n as u32,
            record_bytes,
            first_block,
            pending,
        })
    }

    /// Records in the first read-back (tests use it to pass more).
    #[cfg(test)]
    pub fn first_block(&self) -> usize {
        self.first_block as usize
    }

    /// A free candidate buffer, or a new one when every one is held by a
    /// frame whose records are still awaited.
    fn take_out(&self) -> Result<PooledOut> {
        let free = self.free.lock().unwrap().pop();
        let buffer = match free {
            Some(b) => b,
            None => self.gpu.create_buffer(&wgpu::BufferDescriptor {
                label: Some("wgnn detect candidates"),
                size: self.out_size,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })?,
        };
        Ok(PooledOut {
            buffer: Some(buffer),
            free: self.free.clone(),
        })
    }

    /// Decodes `boxes` and `scores` (the same tensor twice for YOLO), and
    /// `labels` for the listed decoder, which must have the spec's shapes
    /// and types: submits the pass and starts reading its records back,
    /// without waiting. The records, in no particular order, and what was
    /// moved (including the uploads made when this decoder was built, the
    /// first time) come from [`PendingRecords::finish`]. The elements
    /// [`GpuDecoder::record`] the pass into the model's submission instead.
    #[cfg(test)]
    pub fn submit(
        &mut self,
        spec: &Spec,
        boxes: TensorBuffer<'_>,
        scores: TensorBuffer<'_>,
        labels: Option<TensorBuffer<'_>>,
    ) -> Result<PendingRecords> {
        let gpu = self.gpu.clone();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let recorded = self.record(spec, boxes, scores, labels, &mut encoder)?;
        let submission = gpu.submit("detect decode submit", [encoder.finish()])?;
        Ok(recorded.start(submission))
    }

    /// [`GpuDecoder::submit`] recorded into `encoder`, the pass and the
    /// copy of its first records for reading back, for the caller to submit
    /// with its own work (a batch's model run) and then start.
    pub fn record(
        &mut self,
        spec: &Spec,
        boxes: TensorBuffer<'_>,
        scores: TensorBuffer<'_>,
        labels: Option<TensorBuffer<'_>>,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<RecordedRecords> {
        boxes.expect(
            &format!("detect: output '{}'", spec.boxes.name),
            spec.boxes.data_type,
            &spec.boxes.shape,
        )?;
        scores.expect(
            &format!("detect: output '{}'", spec.scores.name),
            spec.scores.data_type,
            &spec.scores.shape,
        )?;
        if let (Scheme::Listed { labels: info, .. }, Some(labels)) = (&spec.scheme, &labels) {
            labels.expect(
                &format!("detect: output '{}'", info.name),
                info.data_type,
                &info.shape,
            )?;
        }
        let labels = labels.as_ref().map_or(&*self.no_labels, |l| l.buffer());
        let out = self.take_out()?;
        let out_buffer = out.buffer();
        let gpu = &self.gpu;
        let key = vec![
            Bound::buffer(boxes.buffer()),
            Bound::buffer(scores.buffer()),
            Bound::buffer(out_buffer),
            Bound::buffer(labels),
        ];
        let bind = self.binds.get_or_make(key, || {
            gpu.scoped("detect decode binding", || {
                gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgnn detect decode"),
                    layout: &self.pipeline.get_bind_group_layout(0),
                    entries: &[
                        bind_entry(0, boxes.buffer()),
                        bind_entry(1, scores.buffer()),
                        bind_entry(2, &self.anchors),
                        bind_entry(3, out_buffer),
                        bind_entry(4, &self.params),
                        bind_entry(5, labels),
                    ],
                })
            })
        })?;
        // Zero the counter on the GPU: no upload per frame.
        encoder.clear_buffer(out_buffer, 0, Some(HEADER));
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn detect decode"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(self.n.div_ceil(64), 1, 1);
        }
        // No error scope: wgpu 30 validates the pass as the encoder
        // finishes, inside the submitter's scope.
        let mut stats = std::mem::take(&mut self.pending);
        let first = HEADER + self.first_block * self.record_bytes;
        let download = gpu.record_download(encoder, out_buffer, 0, first)?;
        stats.downloads += 1;
        stats.download_bytes += first;
        Ok(RecordedRecords {
            gpu: gpu.clone(),
            download,
            out,
            first_block: self.first_block,
            record_bytes: self.record_bytes,
            stats,
        })
    }
}

/// One frame's decode recorded into commands not yet submitted.
pub(crate) struct RecordedRecords {
    gpu: Gpu,
    download: RecordedDownload,
    out: PooledOut,
    first_block: u64,
    record_bytes: u64,
    stats: TransferStats,
}

impl RecordedRecords {
    /// Starts reading the records back once `submission`, which holds the
    /// recorded commands, is submitted.
    pub fn start(self, submission: wgpu::SubmissionIndex) -> PendingRecords {
        PendingRecords {
            gpu: self.gpu,
            download: self.download.start(submission),
            out: self.out,
            first_block: self.first_block,
            record_bytes: self.record_bytes,
            stats: self.stats,
        }
    }
}

/// A candidate buffer lent to one frame; back to its decoder's free list
/// when dropped.
struct PooledOut {
    buffer: Option<crate::gpu::live::Buffer>,
    free: Arc<Mutex<Vec<crate::gpu::live::Buffer>>>,
}

impl PooledOut {
    fn buffer(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().expect("held until dropped")
    }
}

impl Drop for PooledOut {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.free.lock().unwrap().push(b);
        }
    }
}

/// One frame's decoded records on their way back from the GPU.
pub(crate) struct PendingRecords {
    gpu: Gpu,
    download: Download,
    out: PooledOut,
    first_block: u64,
    record_bytes: u64,
    stats: TransferStats,
}

impl PendingRecords {
    /// Whether [`PendingRecords::finish`] would return without waiting for
    /// the GPU (unless more records passed than the first read holds).
    pub fn ready(&self) -> bool {
        self.download.ready()
    }

    /// Waits for the records (the counter's worth: a second read fetches
    /// those past the first block) and what was moved.
    pub fn finish(self) -> Result<(Vec<u32>, TransferStats)> {
        let mut stats = self.stats;
        let bytes = self.download.wait()?;
        let count = bytes
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let kept = u64::from(count).min(MAX_CANDIDATES as u64);
        let in_first = kept.min(self.first_block);
        let mut words: Vec<u32> = bytemuck::pod_collect_to_vec(
            &bytes[HEADER as usize..(HEADER + in_first * self.record_bytes) as usize],
        );
        if kept > self.first_block {
            let first = HEADER + self.first_block * self.record_bytes;
            let size = (kept - self.first_block) * self.record_bytes;
            let rest = self
                .gpu
                .download_buffer(self.out.buffer(), first, size)?
                .wait()?;
            stats.downloads += 1;
            stats.download_bytes += size;
            words.extend(bytemuck::pod_collect_to_vec::<u8, u32>(&rest));
        }
        Ok((words, stats))
    }
}

fn bind_entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}
