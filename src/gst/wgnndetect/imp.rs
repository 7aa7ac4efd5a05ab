use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::gpu::TransferStats;
use crate::gst::caps;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::element::{
    fail, gpu_frame_in, settings_error, unusable_model, with_cpu_frame, Processing,
};
use crate::gst::frames::Intake;
use crate::gst::instance::InstanceSettings;
use crate::gst::precision_choice::{self, PrecisionChoice, PrecisionLog};
use crate::gst::property::{self, Refusals};
use crate::gst::results::{self, ResultsOut};
use crate::gst::roi;
use crate::gst::stats::Stats;
use crate::tasks::{
    DetectOptions, Detector, FrameResults, Labels, ModelInstance, ModelProc, ObjectResult,
};
use crate::video::{ColorSpec, TexturePool};

crate::gst::element_category!("wgnndetect", "wgnn object detection element");

const MODEL_ACCEPTED: &str =
    "the path of an existing detection model file (TFLite, ONNX or TF.js model.json)";

#[derive(Clone, Debug)]
struct Settings {
    model: Option<PathBuf>,
    model_proc: Option<PathBuf>,
    labels: Option<PathBuf>,
    /// Negative: the model-proc's.
    threshold: f64,
    /// Negative: the model-proc's.
    iou_threshold: f64,
    device: DeviceChoice,
    precision: PrecisionChoice,
    results_location: Option<PathBuf>,
    post_messages: bool,
    instance: InstanceSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model: None,
            model_proc: None,
            labels: None,
            threshold: -1.0,
            iou_threshold: -1.0,
            device: DeviceChoice::default(),
            precision: PrecisionChoice::default(),
            results_location: None,
            post_messages: false,
            instance: InstanceSettings::default(),
        }
    }
}

impl Settings {
    fn options(&self) -> DetectOptions {
        let set = |v: f64| (v >= 0.0).then_some(v as f32);
        DetectOptions {
            threshold: set(self.threshold),
            iou_threshold: set(self.iou_threshold),
            precision: self.precision.into(),
        }
    }
}

/// What `start` read and checked besides the model: the detector is made
/// again from it when the stream's colours differ from the ones it was
/// checked with.
struct Setup {
    proc: ModelProc,
    labels: Labels,
    options: DetectOptions,
}

impl Setup {
    /// Reads the model-proc (`explicit`, or the one beside `model`) and the
    /// labels (the `labels` file, or the model-proc's).
    fn read(settings: &Settings, model: &Path) -> crate::Result<Setup> {
        let explicit = settings.model_proc.as_deref();
        let proc = ModelProc::for_model(model, explicit)?.ok_or_else(|| {
            crate::Error::Invalid(format!(
                "no model-proc for {}: set the model-proc property or put {} beside it",
                model.display(),
                model.with_extension("json").display()
            ))
        })?;
        let labels = match &settings.labels {
            Some(path) => Labels::from_file(path)?,
            None => proc.labels()?,
        };
        Ok(Setup {
            proc,
            labels,
            options: settings.options(),
        })
    }

    fn detector(&self, instance: &Arc<ModelInstance>, color: ColorSpec) -> crate::Result<Detector> {
        Detector::with_instance(
            instance,
            &self.proc,
            self.labels.clone(),
            self.options,
            color,
        )
    }
}

/// Everything a started element works with.
struct Run {
    detector: Detector,
    /// The colours `detector` was made for.
    color: ColorSpec,
    results: ResultsOut,
    /// The negotiated frames, once caps are set.
    input: Option<Arc<Intake>>,
    uploads: TexturePool,
}

pub struct WgnnDetect {
    settings: Mutex<Settings>,
    core: Processing<Setup>,
    refusals: Refusals,
    run: Mutex<Option<Run>>,
    precision_log: PrecisionLog,
}

impl Default for WgnnDetect {
    fn default() -> Self {
        WgnnDetect {
            settings: Mutex::default(),
            core: Processing::new(*CAT),
            refusals: Refusals::default(),
            run: Mutex::default(),
            precision_log: PrecisionLog::default(),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnDetect {
    const NAME: &'static str = "GstWgnnDetect";
    type Type = super::WgnnDetect;
    type ParentType = gst_base::BaseTransform;
}

fn path_to_value(path: &Option<PathBuf>) -> glib::Value {
    path.as_ref().map(|p| p.display().to_string()).to_value()
}

impl ObjectImpl for WgnnDetect {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("model")
                    .nick("Model")
                    .blurb(
                        "Detection model file (TFLite, ONNX or TF.js model.json) whose input is \
                         an RGB image; required. Read when the element starts",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("model-proc")
                    .nick("Model-proc")
                    .blurb(
                        "JSON file saying how frames fill the model's input and how its outputs \
                         become objects (decoder, labels, thresholds); unset = <model file \
                         stem>.json beside the model",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("labels")
                    .nick("Labels")
                    .blurb(
                        "Labels file, one class name per line, overriding the model-proc's; \
                         unset = the model-proc's (or class numbers)",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecDouble::builder("threshold")
                    .nick("Threshold")
                    .blurb(
                        "Minimum confidence of an object, 0..1; negative = the model-proc's \
                         (0.5 where it has none)",
                    )
                    .minimum(-1.0)
                    .maximum(1.0)
                    .default_value(-1.0)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecDouble::builder("iou-threshold")
                    .nick("IoU threshold")
                    .blurb(
                        "Overlap (intersection over union) above which non-maximum suppression \
                         merges or drops boxes, 0..1; negative = the model-proc's (0.45 where \
                         it has none)",
                    )
                    .minimum(-1.0)
                    .maximum(1.0)
                    .default_value(-1.0)
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
            props.extend(results::properties());
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
            name @ ("model" | "model-proc" | "labels" | "results-location") => {
                let (accepted, parse) = property::model_file_property(name, MODEL_ACCEPTED)
                    .expect("one of the shared file properties");
                let Some(path) = self
                    .refusals
                    .parse(&*self.obj(), pspec, value, accepted, parse)
                else {
                    return;
                };
                *match pspec.name() {
                    "model" => &mut settings.model,
                    "model-proc" => &mut settings.model_proc,
                    "labels" => &mut settings.labels,
                    _ => &mut settings.results_location,
                } = path;
            }
            "threshold" => settings.threshold = value.get().unwrap_or(-1.0),
            "iou-threshold" => settings.iou_threshold = value.get().unwrap_or(-1.0),
            "device" => settings.device = value.get().unwrap_or_default(),
            "precision" => settings.precision = value.get().unwrap_or_default(),
            "post-messages" => settings.post_messages = value.get().unwrap_or(false),
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
            "model" => path_to_value(&settings.model),
            "model-proc" => path_to_value(&settings.model_proc),
            "labels" => path_to_value(&settings.labels),
            "threshold" => settings.threshold.to_value(),
            "iou-threshold" => settings.iou_threshold.to_value(),
            "device" => settings.device.to_value(),
            "precision" => settings.precision.to_value(),
            "results-location" => path_to_value(&settings.results_location),
            "post-messages" => settings.post_messages.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }
}

impl GstObjectImpl for WgnnDetect {}

impl ElementImpl for WgnnDetect {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn object detection",
                "Filter/Analyzer/Video",
                "Runs a detection model on each frame on the GPU (or the CPU: device=cpu) and \
                 attaches one GstVideoRegionOfInterestMeta per object (DL Streamer's \
                 'detection' params); the frame passes through untouched",
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

impl WgnnDetect {
    fn on_cpu(&self) -> bool {
        let choice = self.settings.lock().unwrap().device;
        self.core.on_cpu(choice)
    }

    /// Makes the detector again when the stream's YUV colours (`color`)
    /// are not the ones it was made for.
    fn refresh(&self, run: &mut Run, color: ColorSpec) -> crate::Result<()> {
        if run.color != color {
            let s = self
                .core
                .started()
                .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
            run.detector = s.settings.detector(&s.instance, color)?;
            run.color = color;
        }
        Ok(())
    }
}

impl BaseTransformImpl for WgnnDetect {
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
                ("no model: set the model property to a detection model file")
            ));
        };
        let setup = Setup::read(&settings, &path).map_err(|e| settings_error(&e))?;
        let results =
            ResultsOut::open(settings.results_location.as_deref(), settings.post_messages)?;
        let obj = self.obj();
        let started = self.core.start(
            obj.upcast_ref(),
            setup,
            &path,
            settings.device,
            &settings.instance,
            |_, _| Ok(()),
        )?;
        // Made now, so that a decoder that does not fit the model's outputs
        // or labels short of its classes fail the state change; remade at
        // the first frame only if the stream's colours differ.
        let color = ColorSpec::default();
        let detector = started
            .settings
            .detector(&started.instance, color)
            .map_err(|e| {
                self.core.stop();
                unusable_model(&path, &e)
            })?;
        *self.run.lock().unwrap() = Some(Run {
            detector,
            color,
            results,
            input: None,
            uploads: TexturePool::new(),
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.run.lock().unwrap().take();
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
        gst::debug!(CAT, imp = self, "detecting on {incaps}");
        let mut run = self.run.lock().unwrap();
        let run = run
            .as_mut()
            .ok_or_else(|| gst::loggable_error!(CAT, "caps set before the element started"))?;
        run.input = Some(Arc::new(Intake::negotiated(*CAT, &n)));
        // A new resolution keeps the detector but not the frames' textures.
        run.uploads = TexturePool::new();
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
        let mut run = self.run.lock().unwrap();
        let run = run.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let input = run.input.clone().ok_or(gst::FlowError::NotNegotiated)?;
        let info = &input.info;
        self.refresh(run, caps::color_spec(info))
            .map_err(|e| fail(element, "cannot set up the model", e))?;
        let mut moved = TransferStats::default();
        let detections = if run.detector.is_cpu() {
            // System memory: `negotiate` refused texture caps.
            with_cpu_frame(element, info, buf, |frame| {
                run.detector
                    .detect_cpu(frame)
                    .map_err(|e| fail(element, "detection failed", e))
            })?
        } else {
            let gpu = self.core.gpu()?;
            let frame = gpu_frame_in(element, &gpu, &run.uploads, &input, buf, &mut moved)?;
            self.core.clock.arm(&gpu, run.detector.inference_mut());
            let (found, read) = run
                .detector
                .detect_gpu(&frame)
                .map_err(|e| fail(element, "detection failed", e))?;
            self.core.clock.collect(run.detector.inference_mut());
            moved += read;
            found
        };
        self.precision_log
            .note(*CAT, element, run.detector.precision());
        let (width, height) = (info.width(), info.height());
        for d in &detections {
            roi::attach_detection(buf, d, width, height, -1);
        }
        if run.results.wanted() {
            let results = FrameResults {
                pts: buf.pts().map(|t| t.nseconds()),
                width,
                height,
                objects: detections.into_iter().map(ObjectResult::from).collect(),
            };
            run.results
                .emit(element, &results)
                .map_err(|e| fail(element, "cannot write the results", e))?;
        }
        self.core
            .meter
            .frame_done(self.core.cat, element, buf.pts(), &moved, began);
        Ok(gst::FlowSuccess::Ok)
    }
}
