use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::input_range::{self, parse_range};
use super::InferResize;
use crate::gpu::TransferStats;
use crate::gst::caps::{self, Negotiated};
use crate::gst::element::{fail, with_cpu_frame};
use crate::gst::model_element::{
    instance_properties, model_property, Frames, ModelElementImpl, ModelElementImplExt, Shared,
    WgnnModelElement,
};
use crate::gst::precision_choice::PrecisionChoice;
use crate::gst::tensor_meta::WgnnTensorMeta;
use crate::tasks::{ImageInference, InferOptions};
use crate::video::{ColorSpec, Resize};

crate::gst::element_category!("wgnninfer", "wgnn inference element");

const DEFAULT_BGR: bool = false;

#[derive(Clone, Debug, Default)]
struct Settings {
    range: Option<[f32; 2]>,
    resize: InferResize,
    bgr: bool,
}

impl Settings {
    /// How frames whose YUV colours follow `color` fill the model's input.
    fn options(&self, precision: PrecisionChoice, color: ColorSpec) -> InferOptions {
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
            precision: precision.into(),
            size: None,
        }
    }
}

/// What a started element works with: the settings it started with, and
/// the task.
struct Run {
    settings: Settings,
    precision: PrecisionChoice,
    /// Made at the first frame of each caps, for their colours.
    task: Option<ImageInference>,
}

#[derive(Default)]
pub struct WgnnInfer {
    settings: Mutex<Settings>,
    run: Mutex<Option<Run>>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnInfer {
    const NAME: &'static str = "GstWgnnInfer";
    type Type = super::WgnnInfer;
    type ParentType = WgnnModelElement;
}

impl ObjectImpl for WgnnInfer {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                model_property(
                    "Model file (TFLite or TF.js layers model.json) whose first input is an RGB \
                     image; required. Read when the element starts",
                ),
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
                    .default_value(DEFAULT_BGR)
                    .mutable_ready()
                    .build(),
            ];
            props.extend(instance_properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self.set_shared(pspec, value) {
            return;
        }
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "input-range" => {
                let parse = |given: Option<&str>| match given.map(str::trim) {
                    None | Some("") => Ok(None),
                    Some(s) => parse_range(s).map(Some),
                };
                let obj = self.obj();
                if let Some(range) =
                    self.refusals()
                        .parse(&*obj, pspec, value, input_range::ACCEPTED, parse)
                {
                    settings.range = range;
                }
            }
            "resize" => settings.resize = value.get().unwrap(),
            "bgr" => settings.bgr = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.shared_property(pspec) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "input-range" => settings
                .range
                .map(|[lo, hi]| format!("{lo},{hi}"))
                .to_value(),
            "resize" => settings.resize.to_value(),
            "bgr" => settings.bgr.to_value(),
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
}

impl BaseTransformImpl for WgnnInfer {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;
}

impl ModelElementImpl for WgnnInfer {
    const MODEL_ACCEPTED: &'static str =
        "the path of an existing model file (TFLite, ONNX or TF.js model.json)";
    const DONE: &'static str = "analysed";

    fn category() -> gst::DebugCategory {
        *CAT
    }

    fn start_task(&self, shared: &Shared) -> Result<(), gst::ErrorMessage> {
        let path = shared.required_model("a model file (TFLite, ONNX or TF.js model.json)")?;
        let settings = self.settings.lock().unwrap().clone();
        let precision = shared.precision;
        self.start_model(shared, &path, |model| {
            // A model that takes no image fails at start rather than on the
            // first frame.
            let options = settings.options(precision, ColorSpec::default());
            ImageInference::input_of(model, &options).map(|_| ())
        })?;
        *self.run.lock().unwrap() = Some(Run {
            settings,
            precision,
            task: None,
        });
        Ok(())
    }

    fn stop_task(&self) {
        self.run.lock().unwrap().take();
    }

    fn caps_set(&self, _: &Negotiated) -> Result<(), gst::LoggableError> {
        if let Some(run) = &mut *self.run.lock().unwrap() {
            run.task = None;
        }
        Ok(())
    }

    fn analyse(
        &self,
        frames: &Frames,
        buf: &mut gst::BufferRef,
        moved: &mut TransferStats,
    ) -> Result<(), gst::FlowError> {
        let obj = self.obj();
        let element: &gst::Element = obj.upcast_ref();
        let mut run = self.run.lock().unwrap();
        let run = run.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let input = &frames.input;
        if run.task.is_none() {
            let options = run
                .settings
                .options(run.precision, caps::color_spec(&input.info));
            run.task = Some(
                self.started()
                    .and_then(|s| ImageInference::with_instance(&s.instance, options))
                    .map_err(|e| fail(element, "cannot set up the model", e))?,
            );
        }
        let task = run.task.as_mut().expect("made just now");
        let outputs = if task.is_cpu() {
            // System memory: `negotiate` refused texture caps.
            with_cpu_frame(element, &input.info, buf, |frame| {
                task.run_cpu(frame)
                    .map_err(|e| fail(element, "inference failed", e))
            })?
        } else {
            let (gpu, frame) = self.gpu_frame(frames, buf, moved)?;
            let clock = &self.core().clock;
            clock.arm(&gpu, task);
            let outputs = task
                .run_gpu(&frame)
                .map_err(|e| fail(element, "inference failed", e))?;
            clock.collect(task);
            self.stage_clock().task(task.last_batch().stages);
            outputs
        };
        self.precision_log().note(*CAT, element, task.precision());
        WgnnTensorMeta::add(buf, outputs);
        Ok(())
    }
}
