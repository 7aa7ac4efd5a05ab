//! [`ImageInference`]: any model whose first input is an image, run on
//! frames: frame -> model input (as [`ImageInput`] says) -> graph -> the
//! output tensors, left on the context that computed them.

mod outputs;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::gpu::Commands;
use crate::ml::{Context, DataType, Graph, Precision, Tensor, TensorDescriptor};
use crate::models::{Model, PrecisionChoice};
use crate::video::cpu::CpuFrame;
use crate::video::{cpu, ColorSpec, GpuFrame, Resize, Sampling, Tensorizer};

use super::instance::{BatchRun, ItemRequest};
use super::stages::timed;
use super::{wrong_device, Device, ImageInput, ModelInstance, ModelTiming};
pub use outputs::InferenceOutputs;

/// How frames are fitted to the model's input.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InferOptions {
    /// The value range the model expects; `None`: the model family's
    /// convention ([`ImageInput::range`]).
    pub range: Option<[f32; 2]>,
    /// How a frame is fitted to a model input of a declared size.
    pub resize: Resize,
    /// Feed the channels in BGR order.
    pub bgr: bool,
    /// Per-channel (mean, std) applied after `range`, torchvision's
    /// `(x - mean) / std` (ImageNet: mean [0.485, 0.456, 0.406], std
    /// [0.229, 0.224, 0.225] with range 0..1); in the fed channel order.
    pub mean_std: Option<([f32; 3], [f32; 3])>,
    /// Where each input pixel samples the frame.
    pub sampling: Sampling,
    /// How YUV frames convert to RGB.
    pub color: ColorSpec,
    /// What the model computes in ([`Model::build_with`]), per input size.
    pub precision: Precision,
    /// (width, height) for a model that takes any input size; `None`: the
    /// frame's own size.
    pub size: Option<(u32, u32)>,
}

/// How a runner fills the model input from a frame.
enum Fill {
    // Boxed: a GPU tensorizer holds its caches, several times the CPU side.
    Gpu(Box<Tensorizer>),
    Cpu {
        tensorizer: cpu::Tensorizer,
        /// The input's values, kept between frames.
        values: CpuValues,
    },
}

enum CpuValues {
    F32(Vec<f32>),
    F16(Vec<half::f16>),
}

/// What is built for one input size: the graph (the instance's), the input
/// tensor (the CPU's; GPU frames go into the instance's batched input), its
/// filler, and the output sets handed out (they keep the context alive).
struct Runner {
    size: (u32, u32),
    /// What the graph computes in, and why.
    precision: PrecisionChoice,
    /// The model, its context and graphs, perhaps shared with other tasks
    /// whose frames go in the same batches.
    instance: Arc<ModelInstance>,
    /// (build size, precision asked for): the key of this runner's batches.
    key: (Option<(usize, usize)>, Precision),
    /// The instance's context.
    ctx: Context,
    graph: Graph,
    input_name: String,
    input: Tensor,
    fill: Fill,
    /// Output sets handed out; one is reused once nobody holds it any more,
    /// so a steady stream allocates nothing.
    outputs: Vec<Arc<InferenceOutputs>>,
}

impl Runner {
    fn new(
        instance: &Arc<ModelInstance>,
        input: &ImageInput,
        options: &InferOptions,
        frame: (u32, u32),
    ) -> Result<Runner> {
        let device = instance.device();
        let ctx = instance.context().clone();
        let build_size = input.build_size(frame);
        let (graph, precision) = instance.graph(build_size, options.precision)?;
        let (input_name, desc) = graph.inputs().remove(0);
        let shape = input.shape_for(frame);
        if desc.shape != shape || desc.data_type != input.data_type {
            return Err(Error::invalid(format!(
                "{}: input '{input_name}' is {desc}, the frame mapping gives {} {shape:?}",
                instance.path().display(),
                input.data_type
            )));
        }
        let tensorize = input.tensorize_options(frame, options.color, options.resize);
        let (tensor, fill) = match device {
            Device::Gpu(gpu) => (
                TensorDescriptor::new(desc.data_type, desc.shape.clone()).exportable_to_gpu(),
                Fill::Gpu(Box::new(Tensorizer::new(gpu, tensorize)?)),
            ),
            Device::Cpu => (
                TensorDescriptor::new(desc.data_type, desc.shape.clone()).writable(),
                Fill::Cpu {
                    tensorizer: cpu::Tensorizer::new(tensorize)?,
                    values: match desc.data_type {
                        DataType::Float16 => {
                            CpuValues::F16(vec![half::f16::ZERO; desc.element_count()])
                        }
                        _ => CpuValues::F32(vec![0.0; desc.element_count()]),
                    },
                },
            ),
        };
        let input = ctx.create_tensor(tensor)?;
        Ok(Runner {
            size: input_size(&desc.shape, frame),
            precision,
            instance: instance.clone(),
            key: (build_size, options.precision),
            ctx,
            graph,
            input_name,
            input,
            fill,
            outputs: Vec::new(),
        })
    }

    fn free_outputs(&mut self) -> Result<Arc<InferenceOutputs>> {
        if let Some(o) = self.outputs.iter().find(|o| Arc::strong_count(o) == 1) {
            return Ok(o.clone());
        }
        let gpu = self.ctx.is_gpu();
        let tensors = self
            .graph
            .outputs()
            .into_iter()
            .map(|(name, d)| {
                let desc = TensorDescriptor::new(d.data_type, d.shape.clone()).readable();
                let desc = if gpu { desc.exportable_to_gpu() } else { desc };
                Ok((name, self.ctx.create_tensor(desc)?))
            })
            .collect::<Result<Vec<_>>>()?;
        let o = Arc::new(InferenceOutputs::new(&self.instance, tensors));
        self.outputs.push(o.clone());
        Ok(o)
    }

    /// Dispatches the graph from the filled input into a free output set
    /// (the CPU path).
    fn dispatch(&mut self) -> Result<Arc<InferenceOutputs>> {
        let outputs = self.free_outputs()?;
        let named: Vec<(&str, &Tensor)> = outputs
            .tensors()
            .iter()
            .map(|(n, t)| (n.as_str(), t))
            .collect();
        self.ctx.dispatch(
            &self.graph,
            &[(self.input_name.as_str(), &self.input)],
            &named,
        )?;
        self.instance.count_dispatch(1);
        Ok(outputs)
    }

    /// Runs the model on `regions` of `frame` (`None`: the whole frame)
    /// through the instance, which batches them with its other tasks'
    /// frames; one free output set each. `then` (one region only) records
    /// what reads the outputs, submitted with the model.
    fn run_gpu(
        &mut self,
        frame: &GpuFrame,
        regions: &[Option<[f32; 4]>],
        timing: ModelTiming,
        mut then: Option<Then<'_>>,
    ) -> Result<(Vec<Arc<InferenceOutputs>>, BatchRun)> {
        let gpu = self
            .instance
            .device()
            .gpu()
            .cloned()
            .ok_or_else(|| wrong_device("inference", "run_gpu", true))?;
        let mut sets = Vec::with_capacity(regions.len());
        for _ in regions {
            let set = self.free_outputs()?;
            // Held until the run is done, so the next region takes another.
            sets.push(set);
        }
        let mut items: Vec<ItemRequest> = sets
            .iter()
            .map(|o| ItemRequest {
                outputs: o.tensors().iter().map(|(_, t)| t.clone()).collect(),
                timing,
                after: None,
            })
            .collect();
        let Fill::Gpu(tensorizer) = &self.fill else {
            unreachable!("a GPU runner fills with the GPU tensorizer");
        };
        if let ([item], [region]) = (items.as_slice(), regions) {
            // Alone and untimed: tensorize and model in one submission.
            let began = Instant::now();
            let mut tensorize = Duration::ZERO;
            let mut commands = Commands::new(&gpu);
            let recorded = self.instance.record_gpu(
                self.key.0,
                self.key.1,
                item,
                &mut commands,
                |e, dst| {
                    timed(&mut tensorize, || {
                        tensorizer.encode_slot(e, frame, *region, dst, 0)
                    })
                },
            )?;
            if let Some(mut run) = recorded {
                // `then`'s time is its caller's to count.
                let mut after = Duration::ZERO;
                if let Some(then) = then.take() {
                    timed(&mut after, || then(&sets[0], commands.encoder()))?;
                }
                run.submission = Some(commands.submit("inference submit")?);
                run.stages.tensorize = tensorize;
                run.stages.submit = began.elapsed().saturating_sub(tensorize + after);
                return Ok((sets, run));
            }
        }
        if let (Some(then), [item]) = (then, items.as_mut_slice()) {
            let mut encoder = gpu.device().create_command_encoder(&Default::default());
            then(&sets[0], &mut encoder)?;
            item.after = Some(gpu.scoped("recording after the model", || encoder.finish())?);
        }
        let run = self
            .instance
            .run_gpu(self.key.0, self.key.1, items, |i, dst, slot| {
                let mut encoder = gpu.device().create_command_encoder(&Default::default());
                tensorizer.encode_slot(&mut encoder, frame, regions[i], dst, slot)?;
                gpu.scoped("tensorize", || encoder.finish())
            })?;
        Ok((sets, run))
    }
}

/// Records commands reading a run's outputs (see
/// [`ImageInference::run_gpu_then`]).
pub(crate) type Then<'a> =
    &'a mut dyn FnMut(&InferenceOutputs, &mut wgpu::CommandEncoder) -> Result<()>;

/// The (width, height) a runner was built for: the model input's own.
fn input_size(shape: &[usize], frame: (u32, u32)) -> (u32, u32) {
    match shape {
        [_, h, w, 3] | [_, 3, h, w] => (*w as u32, *h as u32),
        _ => frame,
    }
}

/// Runs one model on frames, on the GPU or the CPU (see [`Device`]). A
/// model that takes any size is built for each frame size met.
pub struct ImageInference {
    instance: Arc<ModelInstance>,
    input: ImageInput,
    options: InferOptions,
    runner: Option<Runner>,
    /// How the next GPU run times the model, and what the last timed one took.
    timing: ModelTiming,
    model_ms: Option<f64>,
    last_batch: BatchRun,
}

impl ImageInference {
    /// Fails, naming the cause, when the model's first input is no image.
    /// The model gets an instance of its own.
    pub fn new(device: &Device, model: Arc<Model>, options: InferOptions) -> Result<Self> {
        ImageInference::input_of(&model, &options)?;
        ImageInference::with_instance(&ModelInstance::private(device, model)?, options)
    }

    /// Runs `instance`'s model, on its device, its frames batched with those
    /// of the instance's other tasks.
    pub fn with_instance(instance: &Arc<ModelInstance>, options: InferOptions) -> Result<Self> {
        let input = ImageInference::input_of(instance.model(), &options)?;
        Ok(ImageInference {
            instance: instance.clone(),
            input,
            options,
            runner: None,
            timing: ModelTiming::Off,
            model_ms: None,
            last_batch: BatchRun::default(),
        })
    }

    pub fn instance(&self) -> &Arc<ModelInstance> {
        &self.instance
    }

    /// Times the model on the next GPU run (with the batch it goes in), for
    /// [`ImageInference::take_model_ms`].
    pub fn time_next_run(&mut self) {
        self.timing = ModelTiming::Whole;
    }

    /// The model's GPU ms of the last timed run, once.
    pub fn take_model_ms(&mut self) -> Option<f64> {
        self.model_ms.take()
    }

    /// What the last GPU run's batches were: their size and how long the
    /// run waited for them.
    pub fn last_batch(&self) -> BatchRun {
        self.last_batch.clone()
    }

    /// The model's input as frames fill it with `options`.
    pub fn input_of(model: &Model, options: &InferOptions) -> Result<ImageInput> {
        ImageInput::of(model)?
            .with_range(options.range)
            .bgr(options.bgr)
            .with_mean_std(options.mean_std)
            .with_sampling(options.sampling)
            .with_size(options.size)
    }

    pub fn input(&self) -> &ImageInput {
        &self.input
    }

    pub fn is_cpu(&self) -> bool {
        self.instance.device().is_cpu()
    }

    /// What the model computes in for the last frame size, and why; `None`
    /// before the first frame (graphs are built per input size).
    pub fn precision(&self) -> Option<&PrecisionChoice> {
        self.runner.as_ref().map(|r| &r.precision)
    }

    fn runner(&mut self, frame: (u32, u32)) -> Result<&mut Runner> {
        let size = self.input.size_for(frame);
        if self.runner.as_ref().is_none_or(|r| r.size != size) {
            self.runner = None;
            self.runner = Some(Runner::new(
                &self.instance,
                &self.input,
                &self.options,
                frame,
            )?);
        }
        Ok(self.runner.as_mut().expect("made just now"))
    }

    /// Runs the model on `frame`; the outputs are queued, not waited for.
    pub fn run_gpu(&mut self, frame: &GpuFrame) -> Result<Arc<InferenceOutputs>> {
        self.gpu_on(frame, None)
    }

    /// [`ImageInference::run_gpu`], with `then` recording what reads the
    /// outputs into the model's own submission (a batch's, where the
    /// instance batches); [`ImageInference::last_batch`] says which it was.
    pub(crate) fn run_gpu_then(
        &mut self,
        frame: &GpuFrame,
        then: Then<'_>,
    ) -> Result<Arc<InferenceOutputs>> {
        let mut sets = self.gpu_on_all(frame, &[None], "run_gpu", Some(then))?;
        Ok(sets.remove(0))
    }

    /// Runs the model on the part `region` (x, y, w, h in frame pixels) of
    /// `frame`, which the tensorizer crops and fits to the model input as it
    /// fits a whole frame (no CPU work, nothing read back); the outputs are
    /// queued, not waited for. A region with no area inside the frame is an
    /// error naming it.
    pub fn run_gpu_region(
        &mut self,
        frame: &GpuFrame,
        region: [f32; 4],
    ) -> Result<Arc<InferenceOutputs>> {
        self.gpu_on(frame, Some(region))
    }

    /// Runs the model on each of `regions` of `frame` (x, y, w, h in frame
    /// pixels, as [`ImageInference::run_gpu_region`]) in one call, so that
    /// a batched instance takes them into as few dispatches as it can; one
    /// output set per region, in order.
    pub fn run_gpu_regions(
        &mut self,
        frame: &GpuFrame,
        regions: &[[f32; 4]],
    ) -> Result<Vec<Arc<InferenceOutputs>>> {
        let regions: Vec<Option<[f32; 4]>> = regions.iter().copied().map(Some).collect();
        self.gpu_on_all(frame, &regions, "run_gpu_regions", None)
    }

    fn gpu_on(
        &mut self,
        frame: &GpuFrame,
        region: Option<[f32; 4]>,
    ) -> Result<Arc<InferenceOutputs>> {
        let call = if region.is_some() {
            "run_gpu_region"
        } else {
            "run_gpu"
        };
        let mut sets = self.gpu_on_all(frame, &[region], call, None)?;
        Ok(sets.remove(0))
    }

    fn gpu_on_all(
        &mut self,
        frame: &GpuFrame,
        regions: &[Option<[f32; 4]>],
        call: &str,
        then: Option<Then<'_>>,
    ) -> Result<Vec<Arc<InferenceOutputs>>> {
        if self.is_cpu() {
            return Err(wrong_device("inference", call, true));
        }
        let timing = std::mem::take(&mut self.timing);
        let r = self.runner((frame.width(), frame.height()))?;
        let (sets, run) = r.run_gpu(frame, regions, timing, then)?;
        if run.model_ms.is_some() {
            self.model_ms = run.model_ms;
        }
        self.last_batch = run;
        Ok(sets)
    }

    /// Runs the model on `frame`; the outputs are queued on the CPU
    /// context's worker, not waited for.
    pub fn run_cpu(&mut self, frame: &CpuFrame) -> Result<Arc<InferenceOutputs>> {
        self.cpu_on(frame, None)
    }

    /// [`ImageInference::run_gpu_region`] on the CPU.
    pub fn run_cpu_region(
        &mut self,
        frame: &CpuFrame,
        region: [f32; 4],
    ) -> Result<Arc<InferenceOutputs>> {
        self.cpu_on(frame, Some(region))
    }

    fn cpu_on(
        &mut self,
        frame: &CpuFrame,
        region: Option<[f32; 4]>,
    ) -> Result<Arc<InferenceOutputs>> {
        if !self.is_cpu() {
            let call = if region.is_some() {
                "run_cpu_region"
            } else {
                "run_cpu"
            };
            return Err(wrong_device("inference", call, false));
        }
        let r = self.runner((frame.width(), frame.height()))?;
        let Fill::Cpu { tensorizer, values } = &mut r.fill else {
            unreachable!("a CPU runner fills with the CPU tensorizer");
        };
        let bytes: &[u8] = match values {
            CpuValues::F32(v) => {
                match region {
                    None => tensorizer.run(frame, v)?,
                    Some(region) => tensorizer.run_region(frame, region, v)?,
                }
                bytemuck::cast_slice(v)
            }
            CpuValues::F16(v) => {
                match region {
                    None => tensorizer.run_f16(frame, v)?,
                    Some(region) => tensorizer.run_region_f16(frame, region, v)?,
                }
                bytemuck::cast_slice(v)
            }
        };
        r.ctx.write_tensor(&r.input, bytes)?;
        r.dispatch()
    }
}
