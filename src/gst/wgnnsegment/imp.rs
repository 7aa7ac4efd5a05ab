use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};
use gst_base::subclass::prelude::*;

use super::SegmentEffect;
use crate::gst::caps;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::element::{fail, gpu_frame_in, gpu_frame_out, process_on_cpu, Processing};
use crate::gst::frames::{self, Intake};
use crate::gst::instance::InstanceSettings;
use crate::gst::precision_choice::{self, PrecisionChoice, PrecisionLog};
use crate::gst::property::{self, Refusals};
use crate::gst::stats::Stats;
use crate::ml::Precision;
use crate::models;
use crate::tasks::{BackgroundSpec, ModelTiming, SegmentOptions, Segmenter};
use crate::video::{ColorSpec, EdgeSoftening, TexturePool, MAX_BLUR_STRENGTH};

crate::gst::element_category!("wgnnsegment", "wgnn selfie segmentation element");

const DEFAULT_MODEL: &str = "selfie/selfie_segmentation.tflite";
const DEFAULT_BLUR: f64 = 12.0;
const DEFAULT_BACKGROUND: &str = "green";
const DEFAULT_THRESHOLD: f64 = 0.5;
const DEFAULT_SOFTNESS: f64 = 1.0;
const MAX_SMOOTHING: f64 = 0.95;
const MODEL_ACCEPTED: &str =
    "the path of an existing segmentation model file (empty: the bundled model)";
const BACKGROUND_ACCEPTED: &str = "#RRGGBB, #RRGGBBAA, a colour name (black, white, grey, red, \
     green, blue, transparent) or the path of an existing PNG or JPEG file";

/// The `background` property: a colour, or an image file that exists and
/// reads as an image (unset: the default colour).
fn parse_background(given: Option<&str>) -> Result<BackgroundSpec, String> {
    let s = given.unwrap_or(DEFAULT_BACKGROUND);
    let spec = BackgroundSpec::parse(s).map_err(|_| {
        if s.trim().is_empty() {
            "empty".to_string()
        } else {
            "not a #RRGGBB or #RRGGBBAA hexadecimal colour".to_string()
        }
    })?;
    if let BackgroundSpec::Image(path) = &spec {
        let not_image = |why: String| format!("no colour of that name, nor an image file: {why}");
        if path.is_dir() {
            return Err(not_image("it is a directory".into()));
        }
        let reader = image::ImageReader::open(path)
            .and_then(|r| r.with_guessed_format())
            .map_err(|e| not_image(property::io_cause(&e)))?;
        if reader.format().is_none() {
            return Err(not_image("not a PNG or JPEG file".into()));
        }
    }
    Ok(spec)
}

#[derive(Clone, Debug)]
struct Settings {
    model: Option<PathBuf>,
    effect: SegmentEffect,
    blur_strength: f64,
    background: BackgroundSpec,
    threshold: f64,
    softness: f64,
    smoothing: f64,
    device: DeviceChoice,
    precision: PrecisionChoice,
    instance: InstanceSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model: None,
            effect: SegmentEffect::default(),
            blur_strength: DEFAULT_BLUR,
            background: BackgroundSpec::parse(DEFAULT_BACKGROUND).unwrap(),
            threshold: DEFAULT_THRESHOLD,
            softness: DEFAULT_SOFTNESS,
            smoothing: 0.0,
            device: DeviceChoice::default(),
            precision: PrecisionChoice::default(),
            instance: InstanceSettings::default(),
        }
    }
}

impl Settings {
    fn model_path(&self) -> PathBuf {
        self.model
            .clone()
            .unwrap_or_else(|| models::bundled(DEFAULT_MODEL))
    }

    /// What the segmenter is made with, for frames whose YUV colours
    /// follow `color`.
    fn options(&self, color: ColorSpec) -> SegmentOptions {
        use crate::tasks::SegmentEffect as Task;
        SegmentOptions {
            effect: match self.effect {
                SegmentEffect::None => Task::None,
                SegmentEffect::Mask => Task::Mask,
                SegmentEffect::Blur => Task::Blur {
                    strength: self.blur_strength as f32,
                },
                SegmentEffect::Replace => Task::Replace(self.background.clone()),
            },
            // Softness 1 or more covers the whole 0..1 range: the model's own
            // probabilities, which is what effect=mask should show by default.
            edge: (self.softness < 1.0).then_some(EdgeSoftening {
                threshold: self.threshold as f32,
                softness: self.softness as f32,
            }),
            temporal: self.smoothing as f32,
            color,
            precision: self.precision.into(),
        }
    }
}

struct State {
    input: Intake,
    out_info: gst_video::VideoInfo,
    out_texture: bool,
    uploads: TexturePool,
    task: Option<Segmenter>,
}

pub struct WgnnSegment {
    settings: Mutex<Settings>,
    /// Set when a property the segmenter is made with changes; the next
    /// frame makes a new one.
    settings_changed: AtomicBool,
    // The properties are read live (most may change while playing), so
    // `start` keeps only the one that may not: the precision.
    core: Processing<Precision>,
    precision_log: PrecisionLog,
    refusals: Refusals,
    state: Mutex<Option<State>>,
}

impl Default for WgnnSegment {
    fn default() -> Self {
        WgnnSegment {
            settings: Mutex::default(),
            settings_changed: AtomicBool::default(),
            core: Processing::new(*CAT),
            precision_log: PrecisionLog::default(),
            refusals: Refusals::default(),
            state: Mutex::default(),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnSegment {
    const NAME: &'static str = "GstWgnnSegment";
    type Type = super::WgnnSegment;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for WgnnSegment {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("model")
                    .nick("Model")
                    .blurb(
                        "Segmentation model file (TFLite: one [1,H,W,3] image input, one \
                         [1,H,W,1] mask output); unset = the bundled MediaPipe square model. \
                         Read when the element starts",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("effect", SegmentEffect::default())
                    .nick("Effect")
                    .blurb("What to do with the background")
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("blur-strength")
                    .nick("Blur strength")
                    .blurb("Background blur: Gaussian sigma in frame pixels (effect=blur)")
                    .minimum(0.5)
                    .maximum(MAX_BLUR_STRENGTH as f64)
                    .default_value(DEFAULT_BLUR)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecString::builder("background")
                    .nick("Background")
                    .blurb(
                        "effect=replace: #RRGGBB, #RRGGBBAA, a colour name (black, white, grey, \
                         red, green, blue, transparent) or an image file (PNG or JPEG), \
                         stretched to the frame",
                    )
                    .default_value(Some(DEFAULT_BACKGROUND))
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("threshold")
                    .nick("Threshold")
                    .blurb("Mask probability at the person's edge (used when softness < 1)")
                    .minimum(0.0)
                    .maximum(1.0)
                    .default_value(DEFAULT_THRESHOLD)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("softness")
                    .nick("Softness")
                    .blurb(
                        "Edge width: the mask becomes smoothstep(threshold - softness, \
                         threshold + softness, p); 0 = hard edge, 1 = the model's own \
                         probabilities",
                    )
                    .minimum(0.0)
                    .maximum(1.0)
                    .default_value(DEFAULT_SOFTNESS)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("smoothing")
                    .nick("Temporal smoothing")
                    .blurb(
                        "Weight of the previous frames' mask against flicker: 0 = off, up to \
                         0.95",
                    )
                    .minimum(0.0)
                    .maximum(MAX_SMOOTHING)
                    .default_value(0.0)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("device", DeviceChoice::default())
                    .nick("Device")
                    .blurb("Where the model and the frame processing run. Read when the element starts")
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
        // Timing does not change what the segmenter computes.
        if self.core.clock.set(pspec.name(), value) {
            return;
        }
        let mut settings = self.settings.lock().unwrap();
        if settings.instance.set(pspec.name(), value) {
            // Read at start: the running segmenter keeps its instance.
            gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
            return;
        }
        match pspec.name() {
            "model" => {
                let Some(model) = self.refusals.parse(
                    &*self.obj(),
                    pspec,
                    value,
                    MODEL_ACCEPTED,
                    property::input_file,
                ) else {
                    return;
                };
                settings.model = model;
            }
            "effect" => settings.effect = value.get().unwrap(),
            "blur-strength" => settings.blur_strength = value.get().unwrap(),
            "background" => {
                let Some(background) = self.refusals.parse(
                    &*self.obj(),
                    pspec,
                    value,
                    BACKGROUND_ACCEPTED,
                    parse_background,
                ) else {
                    return;
                };
                settings.background = background;
            }
            "threshold" => settings.threshold = value.get().unwrap(),
            "softness" => settings.softness = value.get().unwrap(),
            "smoothing" => settings.smoothing = value.get().unwrap(),
            "device" => settings.device = value.get().unwrap(),
            "precision" => settings.precision = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
        self.settings_changed.store(true, Ordering::Release);
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
            "effect" => settings.effect.to_value(),
            "blur-strength" => settings.blur_strength.to_value(),
            "background" => settings.background.to_string().to_value(),
            "threshold" => settings.threshold.to_value(),
            "softness" => settings.softness.to_value(),
            "smoothing" => settings.smoothing.to_value(),
            "device" => settings.device.to_value(),
            "precision" => settings.precision.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        // Late frames are dropped before they cost a model run.
        self.obj().set_property("qos", true);
    }
}

impl GstObjectImpl for WgnnSegment {}

impl ElementImpl for WgnnSegment {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn selfie segmentation",
                "Filter/Effect/Video",
                "Segments the person in the frame (MediaPipe selfie model) and blurs or replaces \
                 the background, or shows the mask, on the GPU (or the CPU: device=cpu)",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(caps::rgba_templates);
        TEMPLATES.as_ref()
    }

    fn set_context(&self, context: &gst::Context) {
        self.core.set_context(context);
        self.parent_set_context(context)
    }
}

impl WgnnSegment {
    fn on_cpu(&self) -> bool {
        let choice = self.settings.lock().unwrap().device;
        self.core.on_cpu(choice)
    }

    fn make_task(&self, color: ColorSpec) -> Result<Segmenter, crate::Error> {
        let mut options = self.settings.lock().unwrap().options(color);
        let started = self
            .core
            .started()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        options.precision = started.settings;
        let task = Segmenter::with_instance(&started.instance, &options)?;
        self.precision_log
            .note(*CAT, self.obj().upcast_ref(), Some(task.precision()));
        Ok(task)
    }
}

impl BaseTransformImpl for WgnnSegment {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        let settings = self.settings.lock().unwrap().clone();
        // A background image that cannot be read fails now, saying so,
        // rather than as a model error or on the first frame.
        if let (SegmentEffect::Replace, BackgroundSpec::Image(path)) =
            (settings.effect, &settings.background)
        {
            BackgroundSpec::load_image(path).map_err(|e| {
                let prefix = format!("background image {}: ", path.display());
                let e = e.to_string();
                gst::error_msg!(
                    gst::ResourceError::OpenRead,
                    [
                        "cannot use background image {}: {}",
                        path.display(),
                        e.strip_prefix(&prefix).unwrap_or(&e)
                    ]
                )
            })?;
        }
        let obj = self.obj();
        self.core.start(
            obj.upcast_ref(),
            settings.precision.into(),
            &settings.model_path(),
            settings.device,
            &settings.instance,
            |model, _| Segmenter::check(model, &settings.options(ColorSpec::default())),
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
        let on_cpu = self.on_cpu();
        let out = caps::processing_transform(direction, caps, filter, on_cpu, |_, _| true);
        if on_cpu {
            self.core
                .explain_refused_textures(self.obj().upcast_ref(), caps, filter);
        }
        gst::trace!(CAT, imp = self, "{direction:?} {caps} -> {out}");
        Some(out)
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let n = caps::negotiate("segmented", incaps, outcaps, self.on_cpu())
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        gst::debug!(CAT, imp = self, "segmenting {incaps} into {outcaps}");
        let mut state = self.state.lock().unwrap();
        // A new resolution keeps the segmenter but not the frames' textures.
        let task = state.take().and_then(|s| s.task);
        *state = Some(State {
            input: Intake::negotiated(*CAT, &n),
            out_info: n.out_info,
            out_texture: n.out_texture,
            uploads: TexturePool::new(),
            task,
        });
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.core.query(direction, query, |q| {
            BaseTransformImplExt::parent_query(self, direction, q)
        })
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        self.core.users.sink_event(&event);
        if let gst::EventView::FlushStop(_) = event.view() {
            // Frames after a seek are not continuous with the ones before.
            if let Some(t) = self
                .state
                .lock()
                .unwrap()
                .as_mut()
                .and_then(|s| s.task.as_mut())
            {
                t.reset_temporal();
            }
        }
        self.parent_sink_event(event)
    }

    fn prepare_output_buffer(
        &self,
        inbuf: InputBuffer,
    ) -> Result<PrepareOutputBufferSuccess, gst::FlowError> {
        let inbuf: &gst::BufferRef = match &inbuf {
            InputBuffer::Writable(b) => b,
            InputBuffer::Readable(b) => b,
        };
        let began = Instant::now();
        let obj = self.obj();
        let element: &gst::Element = obj.upcast_ref();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let color = caps::color_spec(&state.input.info);
        if self.settings_changed.swap(false, Ordering::AcqRel) || state.task.is_none() {
            state.task = None;
            state.task = Some(
                self.make_task(color)
                    .map_err(|e| fail(element, "cannot set up segmentation", e))?,
            );
        }
        let task = state.task.as_mut().expect("made just now");
        // A background image uploaded while setting up counts for this frame.
        let mut moved = task.take_setup_transfers();
        let mut out = if task.is_cpu() {
            // System memory in and out: `negotiate` refused texture caps.
            process_on_cpu(
                element,
                &state.input.info,
                &state.out_info,
                inbuf,
                "segmentation failed",
                |frame, out, stride| task.run_cpu(frame, out, stride),
            )?
        } else {
            let gpu = self.core.gpu()?;
            // The dispatch as it runs (its whole batch), not kernel by
            // kernel: a per-kernel profile would hold every stream sharing
            // the instance for as long as it takes.
            let timing = if self.core.clock.due() && task.can_time_model() {
                ModelTiming::Whole
            } else {
                ModelTiming::Off
            };
            let system = frames::system_layout(&state.input, inbuf)
                .map_err(|e| fail(element, "cannot take the input frame", e))?;
            let (composited, ms) = match system {
                // Uploaded here, so that the frame's work is recorded while
                // its bytes are copied and goes in the upload's submission.
                Some(layout) => {
                    let map = frames::map_readable(inbuf)
                        .map_err(|e| fail(element, "cannot take the input frame", e))?;
                    let run = task
                        .upload_run_gpu(&state.uploads, &layout, map.as_slice(), timing)
                        .map_err(|e| fail(element, "segmentation failed", e))?;
                    moved += frames::upload_counts(&layout);
                    run
                }
                None => {
                    let frame = gpu_frame_in(
                        element,
                        &gpu,
                        &state.uploads,
                        &state.input,
                        inbuf,
                        &mut moved,
                    )?;
                    task.run_gpu(&frame, timing)
                        .map_err(|e| fail(element, "segmentation failed", e))?
                }
            };
            if let Some(ms) = ms {
                self.core.clock.record(ms);
            }
            gpu_frame_out(
                element,
                &gpu,
                composited,
                &state.out_info,
                state.out_texture,
                &mut moved,
            )?
        };
        crate::gst::roi::copy(inbuf, out.make_mut(), (1.0, 1.0));
        self.core
            .frame_done(element, inbuf, &mut out, &moved, began)?;
        Ok(PrepareOutputBufferSuccess::Buffer(out))
    }

    fn transform(
        &self,
        _inbuf: &gst::Buffer,
        _outbuf: &mut gst::BufferRef,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        // The work happened while preparing the output buffer.
        Ok(gst::FlowSuccess::Ok)
    }
}
