use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::mapping::{options_for, parse_range};
use super::InferResize;
use crate::gpu::{Gpu, TransferStats};
use crate::gst::device::DeviceSlot;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::frame_meter::FrameMeter;
use crate::gst::stats::Stats;
use crate::gst::tensor_meta::{InferenceOutputs, WgnnTensorMeta};
use crate::gst::{caps, frames, CAT};
use crate::ml::{Context, Graph, Tensor, TensorDescriptor};
use crate::models::{self, Model};
use crate::video::{TensorizeOptions, Tensorizer, TexturePool};

#[derive(Clone, Debug, Default)]
struct Settings {
    model: Option<PathBuf>,
    range: Option<[f32; 2]>,
    resize: InferResize,
    bgr: bool,
    device: DeviceChoice,
}

struct Started {
    settings: Settings,
    model: Arc<Model>,
    gpu: Option<Gpu>,
}

/// What is built for one negotiated stream.
struct Runner {
    ctx: Context,
    graph: Graph,
    input_name: String,
    input: Tensor,
    tensorizer: Tensorizer,
    /// Output sets handed out with buffers; one is reused once no buffer
    /// holds it any more, so a steady stream allocates nothing.
    outputs: Vec<Arc<InferenceOutputs>>,
}

impl Runner {
    fn new(
        gpu: &Gpu,
        model: &Model,
        options: TensorizeOptions,
        hw: Option<(usize, usize)>,
    ) -> crate::Result<Runner> {
        let ctx = Context::gpu(gpu);
        let graph = model.build(&ctx, hw)?;
        let (input_name, desc) = graph.inputs().remove(0);
        let input = ctx.create_tensor(
            TensorDescriptor::new(desc.data_type, desc.shape.clone()).exportable_to_gpu(),
        )?;
        let tensorizer = Tensorizer::new(gpu, options)?;
        if tensorizer.output_len() as usize != desc.element_count() {
            return Err(crate::Error::invalid(format!(
                "{}: input '{input_name}' is {desc}, the frame mapping gives {:?}",
                model.path().display(),
                tensorizer.output_shape()
            )));
        }
        Ok(Runner {
            ctx,
            graph,
            input_name,
            input,
            tensorizer,
            outputs: Vec::new(),
        })
    }

    fn free_outputs(&mut self) -> crate::Result<Arc<InferenceOutputs>> {
        if let Some(o) = self.outputs.iter().find(|o| Arc::strong_count(o) == 1) {
            return Ok(o.clone());
        }
        let tensors = self
            .graph
            .outputs()
            .into_iter()
            .map(|(name, d)| {
                let t = self.ctx.create_tensor(
                    TensorDescriptor::new(d.data_type, d.shape.clone())
                        .readable()
                        .exportable_to_gpu(),
                )?;
                Ok((name, t))
            })
            .collect::<crate::Result<Vec<_>>>()?;
        let o = Arc::new(InferenceOutputs::new(self.ctx.clone(), tensors));
        self.outputs.push(o.clone());
        Ok(o)
    }

    fn run(&mut self, frame: &crate::video::GpuFrame) -> crate::Result<Arc<InferenceOutputs>> {
        {
            let rented = self.ctx.export_to_gpu(&self.input)?;
            self.tensorizer.run(frame, rented.buffer())?;
        }
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
        Ok(outputs)
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        // Buffers downstream may still hold output sets: those keep their
        // tensors; the context goes when they are all gone.
        self.graph.destroy();
    }
}

struct State {
    info: gst_video::VideoInfo,
    uploads: TexturePool,
    runner: Option<Runner>,
}

#[derive(Default)]
pub struct WgnnInfer {
    settings: Mutex<Settings>,
    device: DeviceSlot,
    started: Mutex<Option<Started>>,
    state: Mutex<Option<State>>,
    meter: FrameMeter,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnInfer {
    const NAME: &'static str = "GstWgnnInfer";
    type Type = super::WgnnInfer;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for WgnnInfer {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("model")
                    .nick("Model")
                    .blurb(
                        "Model file (TFLite or TF.js layers model.json) whose first input is an \
                         RGB image; required. Read when the element starts",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("input-range")
                    .nick("Input range")
                    .blurb(
                        "Value range the model expects, 'min,max' (e.g. 0,1 or -1,1 or \
                         0,255); unset = the model family's convention",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("resize", InferResize::default())
                    .nick("Resize")
                    .blurb("How the frame is fitted to the model's input size")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("bgr")
                    .nick("BGR")
                    .blurb("Feed the channels in BGR order")
                    .default_value(false)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("device", DeviceChoice::default())
                    .nick("Device")
                    .blurb("Where the model runs. Read when the element starts")
                    .mutable_ready()
                    .build(),
            ];
            props.extend(Stats::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "model" => {
                settings.model = value
                    .get::<Option<String>>()
                    .unwrap()
                    .filter(|s| !s.is_empty())
                    .map(PathBuf::from)
            }
            "input-range" => {
                let s = value.get::<Option<String>>().unwrap().unwrap_or_default();
                if s.trim().is_empty() {
                    settings.range = None;
                } else {
                    match parse_range(&s) {
                        Ok(r) => settings.range = Some(r),
                        // A setter cannot fail: keep the old value and say why.
                        Err(e) => {
                            gst::error!(CAT, imp = self, "{e}; keeping {:?}", settings.range)
                        }
                    }
                }
            }
            "resize" => settings.resize = value.get().unwrap(),
            "bgr" => settings.bgr = value.get().unwrap(),
            "device" => settings.device = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.meter.property(pspec.name()) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "model" => settings
                .model
                .as_ref()
                .map(|p| p.display().to_string())
                .to_value(),
            "input-range" => settings
                .range
                .map(|[lo, hi]| format!("{lo},{hi}"))
                .to_value(),
            "resize" => settings.resize.to_value(),
            "bgr" => settings.bgr.to_value(),
            "device" => settings.device.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }
}

impl GstObjectImpl for WgnnInfer {}

impl ElementImpl for WgnnInfer {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn inference",
                "Filter/Analyzer/Video",
                "Runs a model on each frame on the GPU and attaches its outputs as tensor meta \
                 (WgnnTensorMeta); the frame passes through untouched",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let mut any = caps::texture_caps();
            any.merge(caps::system_caps());
            ["sink", "src"]
                .into_iter()
                .zip([gst::PadDirection::Sink, gst::PadDirection::Src])
                .map(|(name, dir)| {
                    gst::PadTemplate::new(name, dir, gst::PadPresence::Always, &any).unwrap()
                })
                .collect()
        });
        TEMPLATES.as_ref()
    }

    fn set_context(&self, context: &gst::Context) {
        self.device.set_context(context);
        self.parent_set_context(context)
    }
}

impl WgnnInfer {
    fn fail(&self, what: &str, e: impl std::fmt::Display) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Failed, ["{}: {}", what, e]);
        gst::FlowError::Error
    }

    fn runner(&self, info: &gst_video::VideoInfo) -> crate::Result<Runner> {
        let started = self.started.lock().unwrap();
        let s = started
            .as_ref()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        let gpu = s
            .gpu
            .as_ref()
            .ok_or_else(|| crate::Error::invalid("no GPU device"))?;
        let (options, hw) = options_for(
            &s.model,
            (info.width(), info.height()),
            s.settings.range,
            s.settings.resize,
            s.settings.bgr,
            caps::color_spec(info),
        )?;
        Runner::new(gpu, &s.model, options, hw)
    }
}

impl BaseTransformImpl for WgnnInfer {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.meter.reset();
        let settings = self.settings.lock().unwrap().clone();
        let Some(path) = settings.model.clone() else {
            return Err(gst::error_msg!(
                gst::ResourceError::NotFound,
                ["no model: set the model property to a .tflite or model.json file"]
            ));
        };
        let model = models::load(&path).map_err(|e| {
            gst::error_msg!(
                gst::ResourceError::OpenRead,
                ["cannot use model {}: {}", path.display(), e]
            )
        })?;
        // Check the input mapping now, at a nominal frame size, so a model
        // that takes no image fails at start rather than on the first frame.
        options_for(
            &model,
            (64, 64),
            settings.range,
            settings.resize,
            settings.bgr,
            Default::default(),
        )
        .map_err(|e| gst::error_msg!(gst::ResourceError::Settings, ["{}", e]))?;
        let obj = self.obj();
        let gpu = settings.device.open(&self.device, obj.upcast_ref())?;
        if gpu.is_none() {
            return Err(gst::error_msg!(
                gst::ResourceError::Settings,
                ["device=cpu: wgnninfer runs on the GPU only in this build"]
            ));
        }
        gst::info!(CAT, imp = self, "model {}", path.display());
        *self.started.lock().unwrap() = Some(Started {
            settings,
            model: Arc::new(model),
            gpu,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        self.started.lock().unwrap().take();
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let n = caps::negotiate("analysed", incaps, outcaps, false)
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        gst::debug!(CAT, imp = self, "analysing {incaps}");
        *self.state.lock().unwrap() = Some(State {
            info: n.in_info,
            uploads: TexturePool::new(),
            runner: None,
        });
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.meter.query(&self.device, direction, query, |q| {
            BaseTransformImplExt::parent_query(self, direction, q)
        })
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let began = Instant::now();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let gpu = self.device.get().ok_or(gst::FlowError::NotNegotiated)?;
        if state.runner.is_none() {
            state.runner = Some(
                self.runner(&state.info)
                    .map_err(|e| self.fail("cannot set up the model", e))?,
            );
        }
        let mut moved = TransferStats::default();
        let (frame, m) = frames::frame_in(&gpu, &state.uploads, &state.info, buf)
            .map_err(|e| self.fail("cannot take the input frame", e))?;
        moved += m;
        let outputs = state
            .runner
            .as_mut()
            .unwrap()
            .run(&frame)
            .map_err(|e| self.fail("inference failed", e))?;
        WgnnTensorMeta::add(buf, outputs);
        self.meter
            .frame_done(self.obj().upcast_ref(), buf.pts(), &moved, began);
        Ok(gst::FlowSuccess::Ok)
    }
}
