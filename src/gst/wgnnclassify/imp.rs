use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::InferenceRegion;
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
use crate::tasks::{Classifier, ClassifyOptions, FrameResults, Labels, ModelProc, Rect};
use crate::video::{ColorSpec, TexturePool};

crate::gst::element_category!("wgnnclassify", "wgnn classification element");

const MODEL_ACCEPTED: &str =
    "the path of an existing classification model file (ONNX, TFLite or TF.js model.json)";
const OBJECT_CLASS_ACCEPTED: &str =
    "an ROI label such as face (surrounding spaces dropped; empty: every ROI)";

/// The `object-class` property: a label, trimmed; unset or empty for all.
fn parse_object_class(given: Option<&str>) -> Result<String, String> {
    let raw = given.unwrap_or_default();
    let label = raw.trim();
    if label.is_empty() && !raw.is_empty() {
        return Err("only spaces".into());
    }
    if label.chars().any(char::is_control) {
        return Err("it holds control characters".into());
    }
    Ok(label.to_string())
}

#[derive(Clone, Debug)]
struct Settings {
    model: Option<PathBuf>,
    model_proc: Option<PathBuf>,
    labels: Option<PathBuf>,
    top_k: u32,
    threshold: f64,
    region: InferenceRegion,
    object_class: String,
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
            top_k: 1,
            threshold: -1.0,
            region: InferenceRegion::default(),
            object_class: String::new(),
            device: DeviceChoice::default(),
            precision: PrecisionChoice::default(),
            results_location: None,
            post_messages: false,
            instance: InstanceSettings::default(),
        }
    }
}

impl Settings {
    /// The threshold is the property's, or where it is -1 the model-proc's,
    /// else 0.
    fn options(&self, proc: Option<&ModelProc>) -> ClassifyOptions {
        let threshold = if self.threshold >= 0.0 {
            self.threshold as f32
        } else {
            proc.and_then(|p| p.threshold).unwrap_or(0.0)
        };
        ClassifyOptions {
            top_k: self.top_k as usize,
            threshold,
            precision: self.precision.into(),
        }
    }

    /// The model-proc (the property's, else the one beside the model) and
    /// the labels (the property's file, else the model-proc's, else none).
    fn proc_and_labels(&self, model: &Path) -> crate::Result<(Option<ModelProc>, Labels)> {
        let proc = ModelProc::for_model(model, self.model_proc.as_deref())?;
        let labels = match (&self.labels, &proc) {
            (Some(file), _) => Labels::from_file(file)?,
            (None, Some(p)) => p.labels()?,
            (None, None) => Labels::none(),
        };
        Ok((proc, labels))
    }

    /// Whether the ROI labelled `label` is one to classify.
    fn wants(&self, label: &str) -> bool {
        self.object_class.is_empty() || self.object_class == label
    }
}

/// What `start` prepared besides the model and device.
struct Prepared {
    proc: Option<ModelProc>,
    labels: Labels,
}

struct State {
    input: Intake,
    uploads: TexturePool,
    task: Option<Classifier>,
}

pub struct WgnnClassify {
    settings: Mutex<Settings>,
    // `start` keeps the settings: the properties are read when it starts.
    core: Processing<Settings>,
    refusals: Refusals,
    prepared: Mutex<Option<Prepared>>,
    results: Mutex<ResultsOut>,
    state: Mutex<Option<State>>,
    precision_log: PrecisionLog,
}

impl Default for WgnnClassify {
    fn default() -> Self {
        WgnnClassify {
            settings: Mutex::default(),
            core: Processing::new(*CAT),
            refusals: Refusals::default(),
            prepared: Mutex::default(),
            results: Mutex::default(),
            state: Mutex::default(),
            precision_log: PrecisionLog::default(),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnClassify {
    const NAME: &'static str = "GstWgnnClassify";
    type Type = super::WgnnClassify;
    type ParentType = gst_base::BaseTransform;
}

fn path_value(path: &Option<PathBuf>) -> glib::Value {
    path.as_ref().map(|p| p.display().to_string()).to_value()
}

impl ObjectImpl for WgnnClassify {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("model")
                    .nick("Model")
                    .blurb(
                        "Classification model (ONNX, TFLite or TF.js) whose first input is an RGB \
                         image and whose scores output is [1, C]; required. Read when the \
                         element starts",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("model-proc")
                    .nick("Model-proc")
                    .blurb(
                        "Model-proc JSON file (input range, colour order, resize, decoder, \
                         labels); unset = <model stem>.json beside the model when there is one",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("labels")
                    .nick("Labels")
                    .blurb(
                        "Labels file, one class name per line; unset = the model-proc's labels \
                         (else class ids as numbers)",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("top-k")
                    .nick("Top k")
                    .blurb("Most classes attached per region, best first")
                    .minimum(1)
                    .default_value(1)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecDouble::builder("threshold")
                    .nick("Threshold")
                    .blurb(
                        "Classes scoring below this (after softmax, where applied) are dropped; \
                         -1 = the model-proc's threshold, or 0 without one",
                    )
                    .minimum(-1.0)
                    .maximum(1.0)
                    .default_value(-1.0)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default(
                    "inference-region",
                    InferenceRegion::default(),
                )
                .nick("Inference region")
                .blurb("The whole frame, or each region of interest upstream attached")
                .mutable_ready()
                .build(),
                glib::ParamSpecString::builder("object-class")
                    .nick("Object class")
                    .blurb(
                        "With inference-region=roi-list: only ROIs with this label (e.g. face); \
                         empty = all",
                    )
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
        let mut s = self.settings.lock().unwrap();
        if s.instance.set(pspec.name(), value) {
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
                    "model" => &mut s.model,
                    "model-proc" => &mut s.model_proc,
                    "labels" => &mut s.labels,
                    _ => &mut s.results_location,
                } = path;
            }
            "top-k" => s.top_k = value.get().unwrap(),
            "threshold" => s.threshold = value.get().unwrap(),
            "inference-region" => s.region = value.get().unwrap(),
            "object-class" => {
                if let Some(class) = self.refusals.parse(
                    &*self.obj(),
                    pspec,
                    value,
                    OBJECT_CLASS_ACCEPTED,
                    parse_object_class,
                ) {
                    s.object_class = class;
                }
            }
            "device" => s.device = value.get().unwrap(),
            "precision" => s.precision = value.get().unwrap(),
            "post-messages" => s.post_messages = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.core.property(pspec.name()) {
            return v;
        }
        let s = self.settings.lock().unwrap();
        if let Some(v) = s.instance.get(pspec.name()) {
            return v;
        }
        match pspec.name() {
            "precision-used" => self.precision_log.used(),
            "model" => path_value(&s.model),
            "model-proc" => path_value(&s.model_proc),
            "labels" => path_value(&s.labels),
            "top-k" => s.top_k.to_value(),
            "threshold" => s.threshold.to_value(),
            "inference-region" => s.region.to_value(),
            "object-class" => s.object_class.to_value(),
            "device" => s.device.to_value(),
            "precision" => s.precision.to_value(),
            "results-location" => path_value(&s.results_location),
            "post-messages" => s.post_messages.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }
}

impl GstObjectImpl for WgnnClassify {}

impl ElementImpl for WgnnClassify {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn classification",
                "Filter/Analyzer/Video",
                "Runs a classifier on the GPU (or the CPU: device=cpu) on each frame or each \
                 region of interest, cropping in the tensorize shader, and attaches the best \
                 classes to the ROIs; the frame passes through untouched",
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

impl WgnnClassify {
    fn on_cpu(&self) -> bool {
        let choice = self.settings.lock().unwrap().device;
        self.core.on_cpu(choice)
    }

    fn make_task(&self, color: ColorSpec) -> crate::Result<Classifier> {
        let s = self
            .core
            .started()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        let prepared = self.prepared.lock().unwrap();
        let p = prepared
            .as_ref()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        Classifier::with_instance(
            &s.instance,
            p.proc.as_ref(),
            p.labels.clone(),
            s.settings.options(p.proc.as_ref()),
            color,
        )
    }

    /// The regions to classify on a `width` x `height` frame `buf`: the
    /// whole frame, or each wanted ROI with something inside the frame, with
    /// its meta id.
    fn regions(
        &self,
        settings: &Settings,
        buf: &gst::BufferRef,
        width: u32,
        height: u32,
    ) -> Vec<(Option<i32>, Rect)> {
        if settings.region == InferenceRegion::FullFrame {
            return vec![(None, Rect::new(0.0, 0.0, width as f32, height as f32))];
        }
        let mut regions = Vec::new();
        for r in roi::read(buf, width, height) {
            if !settings.wants(&r.object.label) {
                continue;
            }
            let rect = r.object.rect;
            if rect.clamped(width, height).area() <= 0.0 {
                // Nothing of it to look at: it keeps no classes, the stream
                // goes on.
                gst::warning!(
                    CAT,
                    imp = self,
                    "ROI {} ({}) at ({}, {}) {}x{} has nothing inside the {width}x{height} \
                     frame: not classified",
                    r.id,
                    r.object.label,
                    rect.x,
                    rect.y,
                    rect.w,
                    rect.h
                );
                continue;
            }
            regions.push((Some(r.id), rect));
        }
        regions
    }
}

impl BaseTransformImpl for WgnnClassify {
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
                ("no model: set the model property to a classification model file")
            ));
        };
        let (proc, labels) = settings
            .proc_and_labels(&path)
            .map_err(|e| settings_error(&e))?;
        let obj = self.obj();
        let started = self.core.start(
            obj.upcast_ref(),
            settings.clone(),
            &path,
            settings.device,
            &settings.instance,
            |_, _| Ok(()),
        )?;
        // A model that is no classifier, or labels that do not cover its
        // classes, fail here rather than on the first frame.
        let checked = Classifier::with_instance(
            &started.instance,
            proc.as_ref(),
            labels.clone(),
            settings.options(proc.as_ref()),
            ColorSpec::default(),
        );
        let results = checked
            .map_err(|e| unusable_model(&path, &e))
            .and_then(|_| {
                ResultsOut::open(settings.results_location.as_deref(), settings.post_messages)
            });
        match results {
            Ok(out) => *self.results.lock().unwrap() = out,
            Err(e) => {
                self.core.stop();
                return Err(e);
            }
        }
        *self.prepared.lock().unwrap() = Some(Prepared { proc, labels });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        self.precision_log.reset();
        self.prepared.lock().unwrap().take();
        *self.results.lock().unwrap() = ResultsOut::default();
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
        let n = caps::negotiate("classified", incaps, outcaps, self.on_cpu())
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        gst::debug!(CAT, imp = self, "classifying {incaps}");
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
        let settings = self
            .core
            .started()
            .ok_or(gst::FlowError::NotNegotiated)?
            .settings
            .clone();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let (width, height) = (state.input.info.width(), state.input.info.height());
        if state.task.is_none() {
            state.task = Some(
                self.make_task(caps::color_spec(&state.input.info))
                    .map_err(|e| fail(element, "cannot set up the model", e))?,
            );
        }
        let task = state.task.as_mut().expect("made just now");
        let regions = self.regions(&settings, buf, width, height);
        let rects: Vec<Rect> = regions.iter().map(|(_, r)| *r).collect();
        let mut moved = TransferStats::default();
        let classes = if rects.is_empty() {
            Vec::new()
        } else if task.is_cpu() {
            // System memory: `negotiate` refused texture caps.
            with_cpu_frame(element, &state.input.info, buf, |frame| {
                task.classify_cpu(frame, &rects)
                    .map_err(|e| fail(element, "classification failed", e))
            })?
        } else {
            let gpu = self.core.gpu()?;
            let frame = gpu_frame_in(element, &gpu, &state.uploads, &state.input, buf, &mut moved)?;
            self.core.clock.arm(&gpu, task.inference_mut());
            let (classes, m) = task
                .classify_gpu(&frame, &rects)
                .map_err(|e| fail(element, "classification failed", e))?;
            self.core.clock.collect(task.inference_mut());
            moved += m;
            classes
        };
        self.precision_log.note(*CAT, element, task.precision());
        for ((id, _), classes) in regions.iter().zip(&classes) {
            match id {
                Some(id) => {
                    roi::attach_classes(buf, *id, classes);
                }
                None => {
                    roi::attach_frame_classes(buf, classes, width, height);
                }
            }
        }
        let mut out = self.results.lock().unwrap();
        if out.wanted() {
            let results = FrameResults {
                pts: buf.pts().map(|t| t.nseconds()),
                width,
                height,
                objects: roi::read(buf, width, height)
                    .into_iter()
                    .map(|r| r.object)
                    .collect(),
            };
            out.emit(element, &results)
                .map_err(|e| fail(element, "cannot write the results", e))?;
        }
        self.core
            .meter
            .frame_done(self.core.cat, element, buf.pts(), &moved, began);
        Ok(gst::FlowSuccess::Ok)
    }
}
