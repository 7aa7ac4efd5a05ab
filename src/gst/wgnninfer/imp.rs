use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::input_range::{self, parse_range};
use super::InferResize;
use crate::gpu::TransferStats;
use crate::gst::caps;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::element::{fail, gpu_frame_in, with_cpu_frame, Processing};
use crate::gst::frames::Intake;
use crate::gst::instance::InstanceSettings;
use crate::gst::precision_choice::{self, PrecisionChoice, PrecisionLog};
use crate::gst::property::{self, Refusals};
use crate::gst::stats::Stats;
use crate::gst::tensor_meta::WgnnTensorMeta;
use crate::tasks::{ImageInference, InferOptions};
use crate::video::{ColorSpec, Resize, TexturePool};

crate::gst::element_category!("wgnninfer", "wgnn inference element");

const MODEL_ACCEPTED: &str =
    "the path of an existing model file (TFLite, ONNX or TF.js model.json)";

#[derive(Clone, Debug, Default)]
struct Settings {
    model: Option<PathBuf>,
    range: Option<[f32; 2]>,
    resize: InferResize,
    bgr: bool,
    device: DeviceChoice,
    precision: PrecisionChoice,
    instance: InstanceSettings,
}

impl Settings {
    /// How frames whose YUV colours follow `color` fill the model's input.
    fn options(&self, color: ColorSpec) -> InferOptions {
        InferOptions {
            range: self.range,
            resize: match self.resize {
                InferResize::Stretch => Resize::Stretch,
                InferResize::Letterbox => Resize::Letterbox { pad: [0; 3] },
                InferResize::Crop => Resize::CenterCrop,
            },
            bgr: self.bgr,
            color,
            mean_std: None,
            sampling: crate::video::Sampling::HalfPixel,
            precision: self.precision.into(),
        }
    }
}

struct State {
    input: Intake,
    uploads: TexturePool,
    task: Option<ImageInference>,
}

pub struct WgnnInfer {
    settings: Mutex<Settings>,
    // `start` keeps the settings: the properties are read when it starts.
    core: Processing<Settings>,
    refusals: Refusals,
    state: Mutex<Option<State>>,
    precision_log: PrecisionLog,
}

impl Default for WgnnInfer {
    fn default() -> Self {
        WgnnInfer {
            settings: Mutex::default(),
            core: Processing::new(*CAT),
            refusals: Refusals::default(),
            state: Mutex::default(),
            precision_log: PrecisionLog::default(),
        }
    }
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
                precision_choice::property(),
                precision_choice::used_property(),
            ];
            props.extend(crate::gst::profile::ModelClock::properties());
            props.extend(InstanceSettings::properties());
            props.extend(Stats::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self.core.clock.set(pspec.name(), value) {
            return;
        }
        let mut settings = self.settings.lock().unwrap();
        if settings.instance.set(pspec.name(), value) {
            return;
        }
        match pspec.name() {
            "model" => {
                if let Some(model) = self.refusals.parse(
                    &*self.obj(),
                    pspec,
                    value,
                    MODEL_ACCEPTED,
                    property::input_file,
                ) {
                    settings.model = model;
                }
            }
            "input-range" => {
                let parse = |given: Option<&str>| match given.map(str::trim) {
                    None | Some("") => Ok(None),
                    Some(s) => parse_range(s).map(Some),
                };
                if let Some(range) =
                    self.refusals
                        .parse(&*self.obj(), pspec, value, input_range::ACCEPTED, parse)
                {
                    settings.range = range;
                }
            }
            "resize" => settings.resize = value.get().unwrap(),
            "bgr" => settings.bgr = value.get().unwrap(),
            "device" => settings.device = value.get().unwrap(),
            "precision" => settings.precision = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.core.property(pspec.name()) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        if let Some(v) = settings.instance.get(pspec.name()) {
            return v;
        }
        match pspec.name() {
            "precision-used" => self.precision_log.used(),
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
            "precision" => settings.precision.to_value(),
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
                "Runs a model on each frame on the GPU (or the CPU: device=cpu) and attaches its \
                 outputs as tensor meta (WgnnTensorMeta); the frame passes through untouched",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let any = caps::any_memory_caps();
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
        self.core.set_context(context);
        self.parent_set_context(context)
    }
}

impl WgnnInfer {
    fn on_cpu(&self) -> bool {
        let choice = self.settings.lock().unwrap().device;
        self.core.on_cpu(choice)
    }

    fn make_task(&self, info: &gst_video::VideoInfo) -> crate::Result<ImageInference> {
        let s = self
            .core
            .started()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        let options = s.settings.options(caps::color_spec(info));
        ImageInference::with_instance(&s.instance, options)
    }
}

impl BaseTransformImpl for WgnnInfer {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        let settings = self.settings.lock().unwrap().clone();
        let Some(path) = settings.model.clone() else {
            return Err(gst::error_msg!(
                gst::ResourceError::NotFound,
                ("no model: set the model property to a model file (TFLite, ONNX or TF.js model.json)")
            ));
        };
        let obj = self.obj();
        self.core.start(
            obj.upcast_ref(),
            settings.clone(),
            &path,
            settings.device,
            &settings.instance,
            |model, settings| {
                // A model that takes no image fails at start rather than on
                // the first frame.
                ImageInference::input_of(model, &settings.options(ColorSpec::default())).map(|_| ())
            },
        )?;
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        self.precision_log.reset();
        self.core.stop();
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        let out = self.parent_transform_caps(direction, caps, filter)?;
        Some(
            self.core
                .pass_through_caps(self.obj().upcast_ref(), self.on_cpu(), out, caps, filter),
        )
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let n = caps::negotiate("analysed", incaps, outcaps, self.on_cpu())
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        gst::debug!(CAT, imp = self, "analysing {incaps}");
        *self.state.lock().unwrap() = Some(State {
            input: Intake::negotiated(*CAT, &n),
            uploads: TexturePool::new(),
            task: None,
        });
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        self.core.users.sink_event(&event);
        self.parent_sink_event(event)
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.core.query(direction, query, |q| {
            BaseTransformImplExt::parent_query(self, direction, q)
        })
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let began = Instant::now();
        let obj = self.obj();
        let element: &gst::Element = obj.upcast_ref();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        if state.task.is_none() {
            state.task = Some(
                self.make_task(&state.input.info)
                    .map_err(|e| fail(element, "cannot set up the model", e))?,
            );
        }
        let task = state.task.as_mut().expect("made just now");
        let mut moved = TransferStats::default();
        let outputs = if task.is_cpu() {
            // System memory: `negotiate` refused texture caps.
            with_cpu_frame(element, &state.input.info, buf, |frame| {
                task.run_cpu(frame)
                    .map_err(|e| fail(element, "inference failed", e))
            })?
        } else {
            let gpu = self.core.gpu()?;
            let frame = gpu_frame_in(element, &gpu, &state.uploads, &state.input, buf, &mut moved)?;
            self.core.clock.arm(&gpu, task);
            let outputs = task
                .run_gpu(&frame)
                .map_err(|e| fail(element, "inference failed", e))?;
            self.core.clock.collect(task);
            outputs
        };
        self.precision_log.note(*CAT, element, task.precision());
        WgnnTensorMeta::add(buf, outputs);
        self.core
            .meter
            .frame_done(self.core.cat, element, buf.pts(), &moved, began);
        Ok(gst::FlowSuccess::Ok)
    }
}
