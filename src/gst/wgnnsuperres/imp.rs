use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::gpu::TransferStats;
use crate::gst::caps::{self, Negotiated};
use crate::gst::element::{fail, gpu_frame_out, process_on_cpu};
use crate::gst::model_element::{
    model_property, Frames, ModelElementImpl, ModelElementImplExt, Shared, WgnnModelElement,
};
use crate::gst::precision_choice::PrecisionChoice;
use crate::models;
use crate::tasks::{UpscaleOptions, Upscaler};

crate::gst::element_category!("wgnnsuperres", "wgnn super-resolution element");

const DEFAULT_SCALE: u32 = 2;
const DEFAULT_COMPARE: bool = false;

#[derive(Clone, Copy, Debug)]
struct Settings {
    scale: u32,
    compare: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            scale: DEFAULT_SCALE,
            compare: DEFAULT_COMPARE,
        }
    }
}

impl Settings {
    /// Output width and height factors.
    fn factors(&self) -> (i32, i32) {
        let s = self.scale as i32;
        (if self.compare { 2 * s } else { s }, s)
    }
}

#[derive(Default)]
pub struct WgnnSuperres {
    settings: Mutex<Settings>,
    /// The settings and precision the element started with: they shape the
    /// caps, so they stay until it stops.
    started: Mutex<Option<(Settings, PrecisionChoice)>>,
    /// Made at the first frame of each caps, for their colours.
    task: Mutex<Option<Upscaler>>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnSuperres {
    const NAME: &'static str = "GstWgnnSuperres";
    type Type = super::WgnnSuperres;
    type ParentType = WgnnModelElement;
}

impl ObjectImpl for WgnnSuperres {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                model_property(
                    "Super-resolution model (TF.js model.json or TFLite: one NHWC RGB input in \
                     0..255, one output `scale` times larger); unset = the bundled ESRGAN-slim \
                     for `scale`. Read when the element starts",
                ),
                glib::ParamSpecUInt::builder("scale")
                    .nick("Scale")
                    .blurb("Upscaling factor (2, 3 or 4); must match the model")
                    .minimum(2)
                    .maximum(4)
                    .default_value(DEFAULT_SCALE)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("compare")
                    .nick("Compare")
                    .blurb(
                        "Side by side: bicubic upscaling on the left, the model on the right \
                         (output twice as wide)",
                    )
                    .default_value(DEFAULT_COMPARE)
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self.set_shared(pspec, value) {
            return;
        }
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "scale" => settings.scale = value.get().unwrap(),
            "compare" => settings.compare = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.shared_property(pspec) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "scale" => settings.scale.to_value(),
            "compare" => settings.compare.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }
}

impl GstObjectImpl for WgnnSuperres {}

impl ElementImpl for WgnnSuperres {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn super-resolution",
                "Filter/Effect/Video/Scaler",
                "Upscales video 2x, 3x or 4x with ESRGAN-slim on the GPU (or the CPU: \
                 device=cpu); compare=true shows bicubic and the model side by side",
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

impl BaseTransformImpl for WgnnSuperres {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;
}

impl WgnnSuperres {
    fn factors(&self) -> (i32, i32) {
        match &*self.started.lock().unwrap() {
            Some((s, _)) => s.factors(),
            None => self.settings.lock().unwrap().factors(),
        }
    }

    fn make_task(&self, color: crate::video::ColorSpec) -> crate::Result<Upscaler> {
        let (settings, precision) = self
            .started
            .lock()
            .unwrap()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        let s = self.started()?;
        let options = UpscaleOptions {
            compare: settings.compare,
            color,
            precision: precision.into(),
            ..UpscaleOptions::new(settings.scale)
        };
        Upscaler::new(&s.device, s.model.clone(), options)
    }
}

impl ModelElementImpl for WgnnSuperres {
    const MODEL_ACCEPTED: &'static str = "the path of an existing super-resolution model file \
         (TF.js model.json or TFLite; empty: the bundled ESRGAN-slim for the scale)";
    const DONE: &'static str = "upscaled";
    const QOS: bool = true;

    fn category() -> gst::DebugCategory {
        *CAT
    }

    fn start_task(&self, shared: &Shared) -> Result<(), gst::ErrorMessage> {
        let settings = *self.settings.lock().unwrap();
        let path = shared.model.clone().unwrap_or_else(|| {
            models::bundled(&format!("esrgan-slim/x{}/model.json", settings.scale))
        });
        // The upscaler builds a graph per frame size and shares no model:
        // the element lists no instance properties, so they stay unset.
        self.start_model(shared, &path, |model| {
            Upscaler::check(model, settings.scale).map(|_| ())
        })?;
        *self.started.lock().unwrap() = Some((settings, shared.precision));
        Ok(())
    }

    fn stop_task(&self) {
        self.task.lock().unwrap().take();
        self.started.lock().unwrap().take();
    }

    fn resize_caps(&self, s: &mut gst::StructureRef, direction: gst::PadDirection) -> bool {
        let (kw, kh) = self.factors();
        let up = direction == gst::PadDirection::Sink;
        caps::scale_dimension(s, "width", kw, up) && caps::scale_dimension(s, "height", kh, up)
    }

    fn caps_set(&self, n: &Negotiated) -> Result<(), gst::LoggableError> {
        let (kw, kh) = self.factors();
        if n.out_info.width() != n.in_info.width() * kw as u32
            || n.out_info.height() != n.in_info.height() * kh as u32
        {
            return Err(gst::loggable_error!(
                CAT,
                "output {}x{} is not the input {}x{} times {kw}x{kh}",
                n.out_info.width(),
                n.out_info.height(),
                n.in_info.width(),
                n.in_info.height()
            ));
        }
        // A new colour spec needs new tensorizers; the upscaler rebuilds its
        // per-size parts by itself.
        self.task.lock().unwrap().take();
        Ok(())
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
        if task.is_none() {
            if self.core().started().is_none() {
                return Err(gst::FlowError::Flushing);
            }
            *task = Some(
                self.make_task(caps::color_spec(&stream.input.info))
                    .map_err(|e| fail(element, "cannot set up super-resolution", e))?,
            );
        }
        let task = task.as_mut().expect("made just now");
        let mut out = if task.is_cpu() {
            // System memory in and out: `negotiate` refused texture caps.
            process_on_cpu(
                element,
                &stream.input.info,
                &stream.out_info,
                inbuf,
                "super-resolution failed",
                |frame, out, stride| task.run_cpu(frame, out, stride),
            )?
        } else {
            let (gpu, frame) = self.gpu_frame(stream, inbuf, moved)?;
            let upscaled = task
                .run_gpu(&frame)
                .map_err(|e| fail(element, "super-resolution failed", e))?;
            gpu_frame_out(
                element,
                &gpu,
                upscaled,
                &stream.out_info,
                stream.out_texture,
                moved,
            )?
        };
        self.precision_log().note(*CAT, element, task.precision());
        let scale = (
            f64::from(stream.out_info.width()) / f64::from(stream.input.info.width().max(1)),
            f64::from(stream.out_info.height()) / f64::from(stream.input.info.height().max(1)),
        );
        // The upscaled frame is the same scene: its ROIs are the input's,
        // scaled. A compare=true output (bicubic | model side by side, twice
        // as wide as it is scaled) is not, so its ROIs are not carried.
        if scale.0 == scale.1 {
            crate::gst::roi::copy(inbuf, out.make_mut(), scale);
        }
        Ok(out)
    }
}
