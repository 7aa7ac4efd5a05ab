//! Segmentation on the GPU: the frame is tensorized straight into the rented
//! model input, the model runs on GPU-resident tensors, and the compositor
//! reads the rented mask to write the output frame. Nothing is read back,
//! and no host wait sits between the stages: wgpu's queue orders them.

use std::sync::Arc;

use crate::error::Result;
use crate::gpu::transfer::TextureRegion;
use crate::gpu::{Commands, Gpu, TransferStats};
use crate::ml::{Context, DataType, Graph, Precision, RentedBuffer, Tensor, TensorDescriptor};
use crate::tasks::instance::ItemRequest;
use crate::tasks::timing::{self, marked};
use crate::tasks::{BackgroundSpec, GpuRun, ModelInstance, ModelTiming, Stage, StageMarks};
use crate::video::{
    create_rgba_texture, upload_frame, upload_frame_then, Background, CompositeOptions, Compositor,
    Effect, FrameLayout, GpuFrame, Resize, Tensorizer, TexturePool,
};

use super::{SegmentEffect, SegmentModel, SegmentOptions};

pub(super) struct GpuSegmenter {
    /// What the model computes in, and why.
    pub precision: crate::models::PrecisionChoice,
    gpu: Gpu,
    /// The model, its context and graphs, perhaps shared with other tasks
    /// whose frames go in the same batches.
    instance: Arc<ModelInstance>,
    /// What the options asked for: the key of this task's batches.
    asked: Precision,
    /// The batch-1 graph, for [`GpuStages::run_model`].
    graph: Graph,
    names: (String, String),
    /// The model input of [`GpuStages`]; frames go into the instance's
    /// batched input.
    input: Tensor,
    mask: Tensor,
    tensorizer: Tensorizer,
    compositor: Compositor,
    runs_model: bool,
    outputs: TexturePool,
    /// Transfers made while setting up (a background image), until taken.
    pending: TransferStats,
}

impl GpuSegmenter {
    pub fn new(
        gpu: &Gpu,
        instance: &Arc<ModelInstance>,
        shape: &SegmentModel,
        options: &SegmentOptions,
    ) -> Result<GpuSegmenter> {
        let ctx = instance.context();
        let (graph, precision) = instance.graph(None, options.precision)?;
        let (in_name, in_desc) = graph.inputs().remove(0);
        let (out_name, out_desc) = graph.outputs().remove(0);
        // Readable and writable too, for callers of `stages` that move the
        // tensors through system memory.
        let tensor = |shape: &[usize]| {
            ctx.create_tensor(
                TensorDescriptor::new(DataType::Float32, shape)
                    .readable()
                    .writable()
                    .exportable_to_gpu(),
            )
        };
        let input = tensor(&in_desc.shape)?;
        let mask = tensor(&out_desc.shape)?;
        let tensorizer = Tensorizer::new(
            gpu,
            shape
                .input
                .tensorize_options(shape.size, options.color, Resize::Stretch),
        )?;
        let mut pending = TransferStats::default();
        let effect = match &options.effect {
            SegmentEffect::None => Effect::None,
            SegmentEffect::Mask => Effect::Mask,
            SegmentEffect::Blur { strength } => Effect::Blur {
                strength: *strength,
            },
            SegmentEffect::Replace(BackgroundSpec::Color(c)) => {
                Effect::Replace(Background::Color(*c))
            }
            SegmentEffect::Replace(BackgroundSpec::Image(path)) => {
                let (rgba, w, h) = BackgroundSpec::load_image(path)?;
                let texture = create_rgba_texture(gpu, w, h)?;
                gpu.upload_texture(&texture, TextureRegion::whole(&texture), &rgba, w * 4, h)?;
                pending.uploads += 1;
                pending.upload_bytes += rgba.len() as u64;
                Effect::Replace(Background::Image(texture))
            }
        };
        let runs_model = !matches!(effect, Effect::None);
        let compositor = Compositor::new(
            gpu,
            CompositeOptions {
                mask: shape.mask_options(options),
                effect,
                color: options.color,
            },
        )?;
        Ok(GpuSegmenter {
            precision,
            gpu: gpu.clone(),
            instance: instance.clone(),
            asked: options.precision,
            graph,
            names: (in_name, out_name),
            input,
            mask,
            tensorizer,
            compositor,
            runs_model,
            outputs: TexturePool::new(),
            pending,
        })
    }

    pub fn can_time_model(&self) -> bool {
        self.gpu.has(wgpu::Features::TIMESTAMP_QUERY)
    }

    pub fn run(
        &mut self,
        frame: &GpuFrame,
        timing: ModelTiming,
    ) -> Result<(GpuFrame, Option<f64>)> {
        let out = GpuFrame::rgba_target(&self.gpu, &self.outputs, frame.width(), frame.height())?;
        let target = out.plane(0).expect("an RGBA frame has one plane");
        let run = self.run_into(frame, target, timing, None)?;
        Ok((out, run.model_ms))
    }

    /// [`GpuSegmenter::run`] of a frame uploaded from `bytes` laid out as
    /// `layout` (into textures of `pool`), recorded during its upload
    /// where it can be ([`GpuSegmenter::upload_run_into`]).
    pub fn upload_run(
        &mut self,
        pool: &TexturePool,
        layout: &FrameLayout,
        bytes: &[u8],
        timing: ModelTiming,
    ) -> Result<(GpuFrame, Option<f64>)> {
        let out = GpuFrame::rgba_target(&self.gpu, &self.outputs, layout.width, layout.height)?;
        let target = out.plane(0).expect("an RGBA frame has one plane");
        let (_frame, run) = self.upload_run_into(pool, layout, bytes, target, timing, None)?;
        Ok((out, run.model_ms))
    }

    /// The frame's work, queued without waiting: tensorize, model and
    /// composite recorded into one [`Commands`] and submitted once where the
    /// model runs alone and untimed (each submission costs the host tens of
    /// microseconds, a frame's budget is well under a millisecond); where
    /// the instance batches other users' frames or the model is timed, the
    /// tensorize pass and the composite go in the batch's submission.
    pub fn run_into(
        &mut self,
        frame: &GpuFrame,
        out: &wgpu::Texture,
        timing: ModelTiming,
        marks: Option<&mut dyn StageMarks>,
    ) -> Result<GpuRun> {
        let mut commands = Commands::new(&self.gpu);
        let recorded = self.record_into(frame, out, timing, marks, &mut commands)?;
        let submission = match recorded.submitted {
            Some(batch) => batch,
            None => commands.submit("segment submit")?,
        };
        drop(recorded.rented);
        Ok(GpuRun {
            submission,
            model_ms: recorded.model_ms,
        })
    }

    /// Whether [`GpuSegmenter::record_into`] only records, submitting
    /// nothing of its own, for `timing`.
    pub fn records(&self, timing: ModelTiming) -> bool {
        !self.runs_model || self.instance.records(timing)
    }

    /// The frame's work recorded into `commands`, or, where the model is
    /// batched or timed ([`GpuSegmenter::records`] is false), its
    /// tensorize pass, model and composite submitted here, in the batch's
    /// submission.
    fn record_into(
        &mut self,
        frame: &GpuFrame,
        out: &wgpu::Texture,
        timing: ModelTiming,
        mut marks: Option<&mut dyn StageMarks>,
        commands: &mut Commands,
    ) -> Result<Recorded> {
        let gpu = self.gpu.clone();
        if self.runs_model {
            let mut item = ItemRequest {
                outputs: vec![self.mask.clone()],
                timing,
                after: None,
            };
            let tensorizer = &self.tensorizer;
            let recorded =
                self.instance
                    .record_gpu(None, self.asked, &item, commands, |e, dst| {
                        marked(&mut marks, e, Stage::Tensorize, |e| {
                            tensorizer.encode_slot(e, frame, None, dst, 0)
                        })
                    })?;
            if recorded.is_none() {
                let mut encoder = gpu.device().create_command_encoder(&Default::default());
                // Back before the batch writes the mask.
                drop(self.record_output(&mut encoder, frame, out, &mut marks)?);
                item.after = Some(gpu.scoped("segment composite", || encoder.finish())?);
                let tensorizer = &self.tensorizer;
                let run = self
                    .instance
                    .run_gpu(None, self.asked, vec![item], |_, dst, slot| {
                        let mut encoder = gpu.device().create_command_encoder(&Default::default());
                        marked(&mut marks, &mut encoder, Stage::Tensorize, |e| {
                            tensorizer.encode_slot(e, frame, None, dst, slot)
                        })?;
                        gpu.scoped("tensorize", || encoder.finish())
                    })?;
                return Ok(Recorded {
                    model_ms: run.model_ms,
                    rented: None,
                    submitted: run.submission,
                });
            }
        }
        let rented = self.record_output(commands.encoder(), frame, out, &mut marks)?;
        Ok(Recorded {
            model_ms: None,
            rented: Some(rented),
            submitted: None,
        })
    }

    /// Records the composite of `frame` and the mask into `out`; the
    /// mask's rental comes back, to be dropped before the model writes the
    /// mask again.
    fn record_output(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &GpuFrame,
        out: &wgpu::Texture,
        marks: &mut Option<&mut dyn StageMarks>,
    ) -> Result<RentedBuffer> {
        let rented = self.instance.context().export_to_gpu(&self.mask)?;
        let compositor = &mut self.compositor;
        marked(marks, encoder, Stage::Output, |e| {
            compositor.encode(e, frame, &rented, out)
        })?;
        Ok(rented)
    }

    /// Uploads a frame laid out as `layout` from `bytes` and segments it
    /// into `out`, as `run_into` after [`upload_frame`]; where the frame's
    /// work only records ([`GpuSegmenter::records`]), it is recorded while
    /// the bytes are copied and submitted with the upload
    /// ([`upload_frame_then`]).
    pub fn upload_run_into(
        &mut self,
        pool: &TexturePool,
        layout: &FrameLayout,
        bytes: &[u8],
        out: &wgpu::Texture,
        timing: ModelTiming,
        marks: Option<&mut dyn StageMarks>,
    ) -> Result<(GpuFrame, GpuRun)> {
        let gpu = self.gpu.clone();
        if !self.records(timing) {
            let frame = upload_frame(&gpu, pool, layout, bytes)?;
            let run = self.run_into(&frame, out, timing, marks)?;
            return Ok((frame, run));
        }
        let (frame, recorded, submission) = upload_frame_then(
            &gpu,
            pool,
            layout,
            bytes,
            "segment submit",
            |frame, commands| self.record_into(frame, out, timing, marks, commands),
        )?;
        drop(recorded.rented);
        Ok((
            frame,
            GpuRun {
                submission,
                model_ms: recorded.model_ms,
            },
        ))
    }

    pub fn stages(&mut self) -> GpuStages<'_> {
        GpuStages { s: self }
    }

    pub fn take_setup_transfers(&mut self) -> TransferStats {
        std::mem::take(&mut self.pending)
    }

    pub fn reset_temporal(&mut self) {
        self.compositor.reset_temporal();
    }
}

/// What [`GpuSegmenter::record_into`] leaves its caller.
struct Recorded {
    model_ms: Option<f64>,
    /// The mask's rental, to be dropped once the commands are submitted.
    rented: Option<RentedBuffer>,
    /// The batch's submission, where it took the frame's work (nothing
    /// was recorded into the caller's commands then).
    submitted: Option<wgpu::SubmissionIndex>,
}

/// The stages of a GPU [`Segmenter`](super::Segmenter), one at a time.
pub struct GpuStages<'a> {
    s: &'a mut GpuSegmenter,
}

impl GpuStages<'_> {
    /// Frame -> model input ([`GpuStages::input`]'s shape).
    pub fn tensorizer(&self) -> &Tensorizer {
        &self.s.tensorizer
    }

    /// Frame + mask ([`GpuStages::mask`]'s shape) -> output frame; holds the
    /// temporal smoothing state.
    pub fn compositor(&mut self) -> &mut Compositor {
        &mut self.s.compositor
    }

    /// The context the model and its tensors live on.
    pub fn context(&self) -> &Context {
        self.s.instance.context()
    }

    /// The model's input tensor (readable, writable, exportable).
    pub fn input(&self) -> &Tensor {
        &self.s.input
    }

    /// The model's mask tensor (readable, writable, exportable).
    pub fn mask(&self) -> &Tensor {
        &self.s.mask
    }

    /// Dispatches the model from [`GpuStages::input`] into
    /// [`GpuStages::mask`], timed as `timing` says.
    pub fn run_model(&self, timing: ModelTiming) -> Result<Option<f64>> {
        let s = &*self.s;
        timing::dispatch(
            s.instance.context(),
            &s.graph,
            &[(s.names.0.as_str(), &s.input)],
            &[(s.names.1.as_str(), &s.mask)],
            timing,
        )
    }
}
