use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::SegmentEffect;
use crate::gpu::TransferStats;
use crate::gst::caps;
use crate::gst::element::{fail, gpu_frame_out, process_on_cpu};
use crate::gst::frames;
use crate::gst::model_element::{
    instance_properties, model_property, Frames, ModelElementImpl, ModelElementImplExt, Shared,
    WgnnModelElement,
};
use crate::gst::property;
use crate::ml::Precision;
use crate::models;
use crate::tasks::{BackgroundSpec, ModelTiming, SegmentOptions, Segmenter};
use crate::video::{ColorSpec, EdgeSoftening, MAX_BLUR_STRENGTH};

crate::gst::element_category!("wgnnsegment", "wgnn selfie segmentation element");

const DEFAULT_MODEL: &str = "selfie/selfie_segmentation.tflite";
const DEFAULT_BLUR: f64 = 12.0;
const DEFAULT_BACKGROUND: &str = "green";
const DEFAULT_THRESHOLD: f64 = 0.5;
const DEFAULT_SOFTNESS: f64 = 1.0;
const DEFAULT_SMOOTHING: f64 = 0.0;
const MAX_SMOOTHING: f64 = 0.95;
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
        // The files module opens only regular files (the setter runs on the
        // application's thread: opening a FIFO here would hang it) and reads
        // the size from the header against the pixel budget, so a
        // decompression bomb is refused here rather than at start.
        crate::files::image_size(path).map_err(|e| not_image(property::io_cause(&e)))?;
    }
    Ok(spec)
}

/// The element's own settings, read live: most may change while playing.
#[derive(Clone, Debug)]
struct Settings {
    effect: SegmentEffect,
    blur_strength: f64,
    background: BackgroundSpec,
    threshold: f64,
    softness: f64,
    smoothing: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            effect: SegmentEffect::default(),
            blur_strength: DEFAULT_BLUR,
            background: BackgroundSpec::parse(DEFAULT_BACKGROUND).unwrap(),
            threshold: DEFAULT_THRESHOLD,
            softness: DEFAULT_SOFTNESS,
            smoothing: DEFAULT_SMOOTHING,
        }
    }
}

impl Settings {
    /// What the segmenter is made with, for frames whose YUV colours
    /// follow `color`.
    fn options(&self, precision: Precision, color: ColorSpec) -> SegmentOptions {
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
            precision,
        }
    }
}

/// A background image that cannot be read fails the start, saying so,
/// rather than as a model error or on the first frame.
fn check_background(settings: &Settings) -> Result<(), gst::ErrorMessage> {
    let (SegmentEffect::Replace, BackgroundSpec::Image(path)) =
        (settings.effect, &settings.background)
    else {
        return Ok(());
    };
    BackgroundSpec::load_image(path).map(|_| ()).map_err(|e| {
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
    })
}

#[derive(Default)]
pub struct WgnnSegment {
    settings: Mutex<Settings>,
    /// Set when a property the segmenter is made with changes; the next
    /// frame makes a new one.
    settings_changed: AtomicBool,
    /// The precision the element started with.
    precision: Mutex<Precision>,
    /// Made at the first frame, and again when a setting changes; new caps
    /// keep it.
    task: Mutex<Option<Segmenter>>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnSegment {
    const NAME: &'static str = "GstWgnnSegment";
    type Type = super::WgnnSegment;
    type ParentType = WgnnModelElement;
}

/// A property read live, in 0..`max`.
fn live_double(
    name: &str,
    nick: &str,
    blurb: &str,
    range: [f64; 2],
    default: f64,
) -> glib::ParamSpec {
    glib::ParamSpecDouble::builder(name)
        .nick(nick)
        .blurb(blurb)
        .minimum(range[0])
        .maximum(range[1])
        .default_value(default)
        .mutable_playing()
        .build()
}

impl ObjectImpl for WgnnSegment {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                model_property(
                    "Segmentation model file (TFLite: one [1,H,W,3] image input, one [1,H,W,1] \
                     mask output); unset = the bundled MediaPipe square model. Read when the \
                     element starts",
                ),
                glib::ParamSpecEnum::builder_with_default("effect", SegmentEffect::default())
                    .nick("Effect")
                    .blurb("What to do with the background")
                    .mutable_playing()
                    .build(),
                live_double(
                    "blur-strength",
                    "Blur strength",
                    "Background blur: Gaussian sigma in frame pixels (effect=blur)",
                    [0.5, MAX_BLUR_STRENGTH as f64],
                    DEFAULT_BLUR,
                ),
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
                live_double(
                    "threshold",
                    "Threshold",
                    "Mask probability at the person's edge (used when softness < 1)",
                    [0.0, 1.0],
                    DEFAULT_THRESHOLD,
                ),
                live_double(
                    "softness",
                    "Softness",
                    "Edge width: the mask becomes smoothstep(threshold - softness, threshold + \
                     softness, p); 0 = hard edge, 1 = the model's own probabilities",
                    [0.0, 1.0],
                    DEFAULT_SOFTNESS,
                ),
                live_double(
                    "smoothing",
                    "Temporal smoothing",
                    "Weight of the previous frames' mask against flicker: 0 = off, up to 0.95",
                    [0.0, MAX_SMOOTHING],
                    DEFAULT_SMOOTHING,
                ),
            ];
            props.extend(instance_properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        // The shared ones (the model, timing, the instance) are read at
        // start or do not change what the segmenter computes.
        if self.set_shared(pspec, value) {
            return;
        }
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "effect" => settings.effect = value.get().unwrap(),
            "blur-strength" => settings.blur_strength = value.get().unwrap(),
            "background" => {
                let obj = self.obj();
                let Some(background) = self.refusals().parse(
                    &*obj,
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
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
        self.settings_changed.store(true, Ordering::Release);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.shared_property(pspec) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "effect" => settings.effect.to_value(),
            "blur-strength" => settings.blur_strength.to_value(),
            "background" => settings.background.to_string().to_value(),
            "threshold" => settings.threshold.to_value(),
            "softness" => settings.softness.to_value(),
            "smoothing" => settings.smoothing.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
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
}

impl BaseTransformImpl for WgnnSegment {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;
}

impl WgnnSegment {
    fn make_task(&self, color: ColorSpec) -> Result<Segmenter, crate::Error> {
        let precision = *self.precision.lock().unwrap();
        let options = self.settings.lock().unwrap().options(precision, color);
        let task = Segmenter::with_instance(&self.started()?.instance, &options)?;
        self.precision_log()
            .note(*CAT, self.obj().upcast_ref(), Some(task.precision()));
        Ok(task)
    }
}

impl ModelElementImpl for WgnnSegment {
    const MODEL_ACCEPTED: &'static str =
        "the path of an existing segmentation model file (empty: the bundled model)";
    const DONE: &'static str = "segmented";
    const QOS: bool = true;

    fn category() -> gst::DebugCategory {
        *CAT
    }

    fn start_task(&self, shared: &Shared) -> Result<(), gst::ErrorMessage> {
        let settings = self.settings.lock().unwrap().clone();
        check_background(&settings)?;
        let path = shared
            .model
            .clone()
            .unwrap_or_else(|| models::bundled(DEFAULT_MODEL));
        let precision = shared.precision.into();
        *self.precision.lock().unwrap() = precision;
        self.start_model(shared, &path, |model| {
            Segmenter::check(model, &settings.options(precision, ColorSpec::default()))
        })?;
        Ok(())
    }

    fn stop_task(&self) {
        self.task.lock().unwrap().take();
    }

    fn flushed(&self) {
        // Frames after a seek are not continuous with the ones before.
        if let Some(t) = &mut *self.task.lock().unwrap() {
            t.reset_temporal();
        }
    }

    fn produce(
        &self,
        stream: &Frames,
        inbuf: &gst::BufferRef,
        moved: &mut TransferStats,
    ) -> Result<gst::Buffer, gst::FlowError> {
        let obj = self.obj();
        let element: &gst::Element = obj.upcast_ref();
        let mut task = self.task.lock().unwrap();
        let color = caps::color_spec(&stream.input.info);
        if self.settings_changed.swap(false, Ordering::AcqRel) || task.is_none() {
            *task = None;
            *task = Some(
                self.make_task(color)
                    .map_err(|e| fail(element, "cannot set up segmentation", e))?,
            );
        }
        let task = task.as_mut().expect("made just now");
        // A background image uploaded while setting up counts for this frame.
        *moved += task.take_setup_transfers();
        let mut out = if task.is_cpu() {
            // System memory in and out: `negotiate` refused texture caps.
            process_on_cpu(
                element,
                &stream.input.info,
                &stream.out_info,
                inbuf,
                "segmentation failed",
                |frame, out, stride| task.run_cpu(frame, out, stride),
            )?
        } else {
            let gpu = self.core().gpu()?;
            let clock = &self.core().clock;
            // The dispatch as it runs (its whole batch), not kernel by
            // kernel: a per-kernel profile would hold every stream sharing
            // the instance for as long as it takes.
            let timing = if clock.due() && task.can_time_model() {
                ModelTiming::Whole
            } else {
                ModelTiming::Off
            };
            let system = frames::system_layout(&stream.input, inbuf)
                .map_err(|e| fail(element, "cannot take the input frame", e))?;
            let (composited, ms) = match system {
                // Uploaded here, so that the frame's work is recorded while
                // its bytes are copied and goes in the upload's submission.
                Some(layout) => {
                    let map = frames::map_readable(inbuf)
                        .map_err(|e| fail(element, "cannot take the input frame", e))?;
                    let run = task
                        .upload_run_gpu(&stream.uploads, &layout, map.as_slice(), timing)
                        .map_err(|e| fail(element, "segmentation failed", e))?;
                    *moved += frames::upload_counts(&layout);
                    run
                }
                None => {
                    let (_, frame) = self.gpu_frame(stream, inbuf, moved)?;
                    task.run_gpu(&frame, timing)
                        .map_err(|e| fail(element, "segmentation failed", e))?
                }
            };
            if let Some(ms) = ms {
                clock.record(ms);
            }
            gpu_frame_out(
                element,
                &gpu,
                composited,
                &stream.out_info,
                stream.out_texture,
                moved,
            )?
        };
        crate::gst::roi::copy(inbuf, out.make_mut(), (1.0, 1.0));
        Ok(out)
    }
}
