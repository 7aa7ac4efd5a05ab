use std::path::Path;
use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::InferenceRegion;
use crate::gpu::TransferStats;
use crate::gst::caps::{self, Negotiated};
use crate::gst::element::{fail, settings_error, unusable_model, with_cpu_frame, Started};
use crate::gst::inference_interval;
use crate::gst::model_element::{
    file_property, instance_properties, model_property, Frames, ModelElementImpl,
    ModelElementImplExt, Shared, WgnnModelElement,
};
use crate::gst::results::{self, ResultsOut};
use crate::gst::roi;
use crate::tasks::{Classifier, ClassifyOptions, Labels, ModelProc, Rect};
use crate::video::ColorSpec;

crate::gst::element_category!("wgnnclassify", "wgnn classification element");

const DEFAULT_TOP_K: u32 = 1;
const DEFAULT_THRESHOLD: f64 = -1.0;
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
    top_k: u32,
    threshold: f64,
    region: InferenceRegion,
    object_class: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            top_k: DEFAULT_TOP_K,
            threshold: DEFAULT_THRESHOLD,
            region: InferenceRegion::default(),
            object_class: String::new(),
        }
    }
}

/// What `start` read: the classifier is made from it at the first frame,
/// for the stream's colours.
struct Setup {
    settings: Settings,
    proc: Option<ModelProc>,
    labels: Labels,
    options: ClassifyOptions,
}

impl Setup {
    /// The model-proc (`model-proc`, else the one beside the model), the
    /// labels (the `labels` file, else the model-proc's, else none), and a
    /// threshold that is the property's, or where it is -1 the model-proc's,
    /// else 0.
    fn read(shared: &Shared, settings: Settings, model: &Path) -> crate::Result<Setup> {
        let proc = ModelProc::for_model(model, shared.model_proc.as_deref())?;
        let labels = match (&shared.labels, &proc) {
            (Some(file), _) => Labels::from_file(file)?,
            (None, Some(p)) => p.labels()?,
            (None, None) => Labels::none(),
        };
        let threshold = if settings.threshold >= 0.0 {
            settings.threshold as f32
        } else {
            proc.as_ref().and_then(|p| p.threshold).unwrap_or(0.0)
        };
        let options = ClassifyOptions {
            top_k: settings.top_k as usize,
            threshold,
            precision: shared.precision.into(),
        };
        Ok(Setup {
            settings,
            proc,
            labels,
            options,
        })
    }

    fn classifier(&self, s: &Started, color: ColorSpec) -> crate::Result<Classifier> {
        Classifier::with_instance(
            &s.instance,
            self.proc.as_ref(),
            self.labels.clone(),
            self.options,
            color,
        )
    }

    /// The regions to classify on a `width` x `height` frame `buf`: the
    /// whole frame, or each wanted ROI with something inside the frame, with
    /// its meta id.
    fn regions(
        &self,
        element: &gst::Element,
        buf: &gst::BufferRef,
        width: u32,
        height: u32,
    ) -> Vec<(Option<i32>, Rect)> {
        if self.settings.region == InferenceRegion::FullFrame {
            return vec![(None, Rect::new(0.0, 0.0, width as f32, height as f32))];
        }
        let class = &self.settings.object_class;
        let mut regions = Vec::new();
        for r in roi::read(buf, width, height) {
            if !class.is_empty() && *class != r.object.label {
                continue;
            }
            let rect = r.object.rect;
            if rect.clamped(width, height).area() <= 0.0 {
                // Nothing of it to look at: it keeps no classes, the stream
                // goes on.
                gst::warning!(
                    CAT,
                    obj = element,
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

struct Run {
    setup: Setup,
    results: ResultsOut,
    /// Made at the first frame of each caps, for their colours.
    task: Option<Classifier>,
}

#[derive(Default)]
pub struct WgnnClassify {
    settings: Mutex<Settings>,
    run: Mutex<Option<Run>>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnClassify {
    const NAME: &'static str = "GstWgnnClassify";
    type Type = super::WgnnClassify;
    type ParentType = WgnnModelElement;
}

impl ObjectImpl for WgnnClassify {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                model_property(
                    "Classification model (ONNX, TFLite or TF.js) whose first input is an RGB \
                     image and whose scores output is [1, C]; required. Read when the element \
                     starts",
                ),
                file_property(
                    "model-proc",
                    "Model-proc",
                    "Model-proc JSON file (input range, colour order, resize, decoder, labels); \
                     unset = <model stem>.json beside the model when there is one",
                ),
                file_property(
                    "labels",
                    "Labels",
                    "Labels file, one class name per line; unset = the model-proc's labels \
                     (else class ids as numbers)",
                ),
                glib::ParamSpecUInt::builder("top-k")
                    .nick("Top k")
                    .blurb("Most classes attached per region, best first")
                    .minimum(1)
                    .default_value(DEFAULT_TOP_K)
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
                    .default_value(DEFAULT_THRESHOLD)
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
            ];
            props.extend(results::properties());
            props.push(inference_interval::property());
            props.extend(instance_properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self.set_shared(pspec, value) {
            return;
        }
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "top-k" => s.top_k = value.get().unwrap(),
            "threshold" => s.threshold = value.get().unwrap(),
            "inference-region" => s.region = value.get().unwrap(),
            "object-class" => {
                let obj = self.obj();
                let accepted = OBJECT_CLASS_ACCEPTED;
                if let Some(class) =
                    self.refusals()
                        .parse(&*obj, pspec, value, accepted, parse_object_class)
                {
                    s.object_class = class;
                }
            }
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.shared_property(pspec) {
            return v;
        }
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "top-k" => s.top_k.to_value(),
            "threshold" => s.threshold.to_value(),
            "inference-region" => s.region.to_value(),
            "object-class" => s.object_class.to_value(),
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
}

impl BaseTransformImpl for WgnnClassify {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;
}

impl ModelElementImpl for WgnnClassify {
    const MODEL_ACCEPTED: &'static str =
        "the path of an existing classification model file (ONNX, TFLite or TF.js model.json)";
    const DONE: &'static str = "classified";

    fn category() -> gst::DebugCategory {
        *CAT
    }

    fn start_task(&self, shared: &Shared) -> Result<(), gst::ErrorMessage> {
        let path = shared.required_model("a classification model file")?;
        let settings = self.settings.lock().unwrap().clone();
        let setup = Setup::read(shared, settings, &path).map_err(|e| settings_error(&e))?;
        let started = self.start_model(shared, &path, |_| Ok(()))?;
        // A model that is no classifier, or labels that do not cover its
        // classes, fail here rather than on the first frame.
        setup
            .classifier(&started, ColorSpec::default())
            .map_err(|e| unusable_model(&path, &e))?;
        let results = shared.results(&path)?;
        *self.run.lock().unwrap() = Some(Run {
            setup,
            results,
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
        let Run {
            setup,
            results,
            task,
        } = run.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let info = &frames.input.info;
        let (width, height) = (info.width(), info.height());
        if task.is_none() {
            *task = Some(
                self.started()
                    .and_then(|s| setup.classifier(&s, caps::color_spec(info)))
                    .map_err(|e| fail(element, "cannot set up the model", e))?,
            );
        }
        let task = task.as_mut().expect("made just now");
        let regions = setup.regions(element, buf, width, height);
        let rects: Vec<Rect> = regions.iter().map(|(_, r)| *r).collect();
        let classes = if rects.is_empty() {
            Vec::new()
        } else if task.is_cpu() {
            // System memory: `negotiate` refused texture caps.
            with_cpu_frame(element, info, buf, |frame| {
                task.classify_cpu(frame, &rects)
                    .map_err(|e| fail(element, "classification failed", e))
            })?
        } else {
            let (gpu, frame) = self.gpu_frame(frames, buf, moved)?;
            let clock = &self.core().clock;
            clock.arm(&gpu, task.inference_mut());
            let (classes, m) = task
                .classify_gpu(&frame, &rects)
                .map_err(|e| fail(element, "classification failed", e))?;
            clock.collect(task.inference_mut());
            self.stage_clock()
                .task(task.inference_mut().last_batch().stages);
            *moved += m;
            classes
        };
        self.precision_log().note(*CAT, element, task.precision());
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
        if results.wanted() {
            let found = roi::frame_results(buf, width, height);
            results
                .emit(element, &found)
                .map_err(|e| fail(element, "cannot write the results", e))?;
        }
        Ok(())
    }
}
