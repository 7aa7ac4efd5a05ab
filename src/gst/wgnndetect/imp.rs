use std::sync::{Arc, LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::gpu::TransferStats;
use crate::gst::caps;
use crate::gst::element::{fail, settings_error, unusable_model, with_cpu_frame};
use crate::gst::inference_interval;
use crate::gst::model_element::{
    file_property, instance_properties, model_property, Awaited, Frames, ModelElementImpl,
    ModelElementImplExt, Shared, Submitted, WgnnModelElement,
};
use crate::gst::results::{self, ResultsOut};
use crate::gst::roi;
use crate::ml::Precision;
use crate::models::Model;
use crate::tasks::{
    DetectOptions, Detection, Detector, FrameResults, Labels, ModelInstance, ModelProc,
    ObjectResult, PendingDetections,
};
use crate::video::ColorSpec;

crate::gst::element_category!("wgnndetect", "wgnn object detection element");

const DEFAULT_THRESHOLD: f64 = -1.0;
const DEFAULT_IOU_THRESHOLD: f64 = -1.0;

/// The element's own settings (negative thresholds: the model-proc's).
#[derive(Clone, Copy, Debug)]
struct Settings {
    threshold: f64,
    iou_threshold: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: DEFAULT_THRESHOLD,
            iou_threshold: DEFAULT_IOU_THRESHOLD,
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
    /// Reads the model-proc (`model-proc`, or the one beside `model`, over
    /// what the model's metadata implies) and the labels (the `labels`
    /// file, or the model-proc's).
    fn read(shared: &Shared, settings: Settings, model: &Model) -> crate::Result<Setup> {
        let explicit = shared.model_proc.as_deref();
        let proc = ModelProc::for_loaded_model(model, explicit)?.ok_or_else(|| {
            let path = model.path();
            crate::Error::Invalid(format!(
                "no model-proc for {}: set the model-proc property or put {} beside it",
                path.display(),
                path.with_extension("json").display()
            ))
        })?;
        let labels = match &shared.labels {
            Some(path) => Labels::from_file(path)?,
            None => proc.labels()?,
        };
        let set = |v: f64| (v >= 0.0).then_some(v as f32);
        let options = DetectOptions {
            threshold: set(settings.threshold),
            iou_threshold: set(settings.iou_threshold),
            precision: Precision::from(shared.precision),
        };
        Ok(Setup {
            proc,
            labels,
            options,
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
    setup: Setup,
    detector: Detector,
    /// The colours `detector` was made for.
    color: ColorSpec,
    results: ResultsOut,
}

#[derive(Default)]
pub struct WgnnDetect {
    settings: Mutex<Settings>,
    run: Mutex<Option<Run>>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnDetect {
    const NAME: &'static str = "GstWgnnDetect";
    type Type = super::WgnnDetect;
    type ParentType = WgnnModelElement;
}

/// A threshold property, `blurb` saying what it bounds.
fn threshold_property(name: &str, nick: &str, blurb: &str, default: f64) -> glib::ParamSpec {
    glib::ParamSpecDouble::builder(name)
        .nick(nick)
        .blurb(blurb)
        .minimum(-1.0)
        .maximum(1.0)
        .default_value(default)
        .mutable_ready()
        .build()
}

impl ObjectImpl for WgnnDetect {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                model_property(
                    "Detection model file (TFLite, ONNX or TF.js model.json) whose input is an \
                     RGB image; required. Read when the element starts",
                ),
                file_property(
                    "model-proc",
                    "Model-proc",
                    "JSON file saying how frames fill the model's input and how its outputs \
                     become objects (decoder, labels, thresholds); unset = <model file stem>.json \
                     beside the model",
                ),
                file_property(
                    "labels",
                    "Labels",
                    "Labels file, one class name per line, overriding the model-proc's; unset = \
                     the model-proc's (or class numbers)",
                ),
                threshold_property(
                    "threshold",
                    "Threshold",
                    "Minimum confidence of an object, 0..1; negative = the model-proc's (0.5 \
                     where it has none)",
                    DEFAULT_THRESHOLD,
                ),
                threshold_property(
                    "iou-threshold",
                    "IoU threshold",
                    "Overlap (intersection over union) above which non-maximum suppression \
                     merges or drops boxes, 0..1; negative = the model-proc's (0.45 where it \
                     has none)",
                    DEFAULT_IOU_THRESHOLD,
                ),
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
            "threshold" => s.threshold = value.get().unwrap_or(DEFAULT_THRESHOLD),
            "iou-threshold" => s.iou_threshold = value.get().unwrap_or(DEFAULT_IOU_THRESHOLD),
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.shared_property(pspec) {
            return v;
        }
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "threshold" => s.threshold.to_value(),
            "iou-threshold" => s.iou_threshold.to_value(),
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
}

impl BaseTransformImpl for WgnnDetect {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;
}

impl ModelElementImpl for WgnnDetect {
    const MODEL_ACCEPTED: &'static str =
        "the path of an existing detection model file (TFLite, ONNX or TF.js model.json)";
    const DONE: &'static str = "analysed";

    fn category() -> gst::DebugCategory {
        *CAT
    }

    fn start_task(&self, shared: &Shared) -> Result<(), gst::ErrorMessage> {
        let path = shared.required_model("a detection model file")?;
        let settings = *self.settings.lock().unwrap();
        let results = shared.results(&path)?;
        let started = self.start_model(shared, &path, |_| Ok(()))?;
        let setup = Setup::read(shared, settings, started.instance.model())
            .map_err(|e| settings_error(&e))?;
        // Made now, so that a decoder that does not fit the model's outputs
        // or labels short of its classes fail the state change; remade at
        // the first frame only if the stream's colours differ.
        let color = ColorSpec::default();
        let detector = setup
            .detector(&started.instance, color)
            .map_err(|e| unusable_model(&path, &e))?;
        *self.run.lock().unwrap() = Some(Run {
            setup,
            detector,
            color,
            results,
        });
        Ok(())
    }

    fn stop_task(&self) {
        self.run.lock().unwrap().take();
    }

    fn skipped(&self, buf: &mut gst::BufferRef) {
        inference_interval::mark_skipped(buf, &self.obj().name());
    }

    fn start_analysis(
        &self,
        frames: &Frames,
        buf: &mut gst::BufferRef,
        moved: &mut TransferStats,
    ) -> Result<Submitted, gst::FlowError> {
        let obj = self.obj();
        let element: &gst::Element = obj.upcast_ref();
        let mut run = self.run.lock().unwrap();
        let run = run.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let info = &frames.input.info;
        let color = caps::color_spec(info);
        if run.color != color {
            // The stream's YUV colours are not the ones the detector was
            // made for.
            run.detector = self
                .started()
                .and_then(|s| run.setup.detector(&s.instance, color))
                .map_err(|e| fail(element, "cannot set up the model", e))?;
            run.color = color;
        }
        let size = (info.width(), info.height());
        if run.detector.is_cpu() {
            // System memory: `negotiate` refused texture caps.
            let detections = with_cpu_frame(element, info, buf, |frame| {
                run.detector
                    .detect_cpu(frame)
                    .map_err(|e| fail(element, "detection failed", e))
            })?;
            self.precision_log()
                .note(*CAT, element, run.detector.precision());
            self.attach(run, buf, size, detections)?;
            return Ok(None);
        }
        let (gpu, frame) = self.gpu_frame(frames, buf, moved)?;
        let clock = &self.core().clock;
        clock.arm(&gpu, run.detector.inference_mut());
        let pending = run
            .detector
            .submit_gpu(&frame)
            .map_err(|e| fail(element, "detection failed", e))?;
        clock.collect(run.detector.inference_mut());
        self.precision_log()
            .note(*CAT, element, run.detector.precision());
        Ok(Some(Box::new(AwaitedDetections {
            element: obj.clone(),
            pending,
            size,
        })))
    }
}

impl WgnnDetect {
    /// Attaches `detections` of a frame of `size` to `buf` and writes or
    /// posts its results.
    fn attach(
        &self,
        run: &mut Run,
        buf: &mut gst::BufferRef,
        (width, height): (u32, u32),
        detections: Vec<Detection>,
    ) -> Result<(), gst::FlowError> {
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
            let obj = self.obj();
            let element: &gst::Element = obj.upcast_ref();
            run.results
                .emit(element, &results)
                .map_err(|e| fail(element, "cannot write the results", e))?;
        }
        Ok(())
    }
}

/// A frame's detections on their way back from the GPU.
struct AwaitedDetections {
    element: super::WgnnDetect,
    pending: PendingDetections,
    /// The frame's width and height.
    size: (u32, u32),
}

impl Awaited for AwaitedDetections {
    fn ready(&self) -> bool {
        self.pending.ready()
    }

    fn finish(
        self: Box<Self>,
        buf: &mut gst::BufferRef,
        moved: &mut TransferStats,
    ) -> Result<(), gst::FlowError> {
        let imp = self.element.imp();
        let element: &gst::Element = self.element.upcast_ref();
        let (found, read, stages) = self
            .pending
            .finish()
            .map_err(|e| fail(element, "detection failed", e))?;
        imp.stage_clock().task(stages);
        *moved += read;
        let mut run = imp.run.lock().unwrap();
        let run = run.as_mut().ok_or(gst::FlowError::Flushing)?;
        imp.attach(run, buf, self.size, found)
    }
}
