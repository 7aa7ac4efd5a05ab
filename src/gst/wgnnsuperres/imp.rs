use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};
use gst_base::subclass::prelude::*;

use crate::gpu::TransferStats;
use crate::gst::caps;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::element::{fail, gpu_frame_in, gpu_frame_out, process_on_cpu, Processing};
use crate::gst::frames::Intake;
use crate::gst::instance::InstanceSettings;
use crate::gst::precision_choice::{self, PrecisionChoice, PrecisionLog};
use crate::gst::property::{self, Refusals};
use crate::gst::stats::Stats;
use crate::models;
use crate::tasks::{UpscaleOptions, Upscaler};
use crate::video::TexturePool;

crate::gst::element_category!("wgnnsuperres", "wgnn super-resolution element");

const DEFAULT_SCALE: u32 = 2;
const MODEL_ACCEPTED: &str = "the path of an existing super-resolution model file (TF.js \
     model.json or TFLite; empty: the bundled ESRGAN-slim for the scale)";

#[derive(Clone, Debug)]
struct Settings {
    model: Option<PathBuf>,
    scale: u32,
    compare: bool,
    device: DeviceChoice,
    precision: PrecisionChoice,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model: None,
            scale: DEFAULT_SCALE,
            compare: false,
            device: DeviceChoice::default(),
            precision: PrecisionChoice::default(),
        }
    }
}

impl Settings {
    fn model_path(&self) -> PathBuf {
        self.model
            .clone()
            .unwrap_or_else(|| models::bundled(&format!("esrgan-slim/x{}/model.json", self.scale)))
    }

    /// Output width and height factors.
    fn factors(&self) -> (i32, i32) {
        let s = self.scale as i32;
        (if self.compare { 2 * s } else { s }, s)
    }
}

struct State {
    input: Intake,
    out_info: gst_video::VideoInfo,
    out_texture: bool,
    uploads: TexturePool,
    task: Option<Upscaler>,
}

pub struct WgnnSuperres {
    settings: Mutex<Settings>,
    // `start` keeps the settings: they shape the caps, so they are frozen
    // until the element stops.
    core: Processing<Settings>,
    refusals: Refusals,
    state: Mutex<Option<State>>,
    precision_log: PrecisionLog,
}

impl Default for WgnnSuperres {
    fn default() -> Self {
        WgnnSuperres {
            settings: Mutex::default(),
            core: Processing::new(*CAT),
            refusals: Refusals::default(),
            state: Mutex::default(),
            precision_log: PrecisionLog::default(),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnSuperres {
    const NAME: &'static str = "GstWgnnSuperres";
    type Type = super::WgnnSuperres;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for WgnnSuperres {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("model")
                    .nick("Model")
                    .blurb(
                        "Super-resolution model (TF.js model.json or TFLite: one NHWC RGB input \
                         in 0..255, one output `scale` times larger); unset = the bundled \
                         ESRGAN-slim for `scale`. Read when the element starts",
                    )
                    .mutable_ready()
                    .build(),
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
            props.extend(Stats::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "model" => {
                match self.refusals.parse(
                    &*self.obj(),
                    pspec,
                    value,
                    MODEL_ACCEPTED,
                    property::input_file,
                ) {
                    Some(model) => settings.model = model,
                    None => return,
                }
            }
            "scale" => settings.scale = value.get().unwrap(),
            "compare" => settings.compare = value.get().unwrap(),
            "device" => settings.device = value.get().unwrap(),
            "precision" => settings.precision = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.core.meter.property(pspec.name()) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "precision-used" => self.precision_log.used(),
            "model" => settings
                .model
                .as_ref()
                .map(|p| p.display().to_string())
                .to_value(),
            "scale" => settings.scale.to_value(),
            "compare" => settings.compare.to_value(),
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

    fn set_context(&self, context: &gst::Context) {
        self.core.set_context(context);
        self.parent_set_context(context)
    }
}

impl WgnnSuperres {
    fn on_cpu(&self) -> bool {
        let choice = self.settings.lock().unwrap().device;
        self.core.on_cpu(choice)
    }

    fn factors(&self) -> (i32, i32) {
        match self.core.started() {
            Some(s) => s.settings.factors(),
            None => self.settings.lock().unwrap().factors(),
        }
    }

    fn make_task(&self, color: crate::video::ColorSpec) -> crate::Result<Upscaler> {
        let s = self
            .core
            .started()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        let options = UpscaleOptions {
            compare: s.settings.compare,
            color,
            precision: s.settings.precision.into(),
            ..UpscaleOptions::new(s.settings.scale)
        };
        Upscaler::new(&s.device, s.model.clone(), options)
    }
}

impl BaseTransformImpl for WgnnSuperres {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        let settings = self.settings.lock().unwrap().clone();
        let obj = self.obj();
        self.core.start(
            obj.upcast_ref(),
            settings.clone(),
            &settings.model_path(),
            settings.device,
            // The upscaler builds a graph per frame size and shares no model.
            &InstanceSettings::default(),
            |model, settings| Upscaler::check(model, settings.scale).map(|_| ()),
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
        let (kw, kh) = self.factors();
        let on_cpu = self.on_cpu();
        let out = caps::processing_transform(direction, caps, filter, on_cpu, |s, d| {
            let up = d == gst::PadDirection::Sink;
            caps::scale_dimension(s, "width", kw, up) && caps::scale_dimension(s, "height", kh, up)
        });
        if on_cpu {
            self.core
                .explain_refused_textures(self.obj().upcast_ref(), caps, filter);
        }
        gst::trace!(CAT, imp = self, "{direction:?} {caps} -> {out}");
        Some(out)
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let n = caps::negotiate("upscaled", incaps, outcaps, self.on_cpu())
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
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
        gst::debug!(CAT, imp = self, "upscaling {incaps} into {outcaps}");
        let mut state = self.state.lock().unwrap();
        // A new colour spec needs new tensorizers; the upscaler rebuilds its
        // per-size parts by itself.
        *state = Some(State {
            input: Intake::negotiated(*CAT, &n),
            out_info: n.out_info,
            out_texture: n.out_texture,
            uploads: TexturePool::new(),
            task: None,
        });
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.core.query(direction, query, |q| {
            BaseTransformImplExt::parent_query(self, direction, q)
        })
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
        if state.task.is_none() {
            if self.core.started().is_none() {
                return Err(gst::FlowError::Flushing);
            }
            let task = self
                .make_task(caps::color_spec(&state.input.info))
                .map_err(|e| fail(element, "cannot set up super-resolution", e))?;
            state.task = Some(task);
        }
        let task = state.task.as_mut().expect("made just now");
        let mut moved = TransferStats::default();
        let mut out = if task.is_cpu() {
            // System memory in and out: `negotiate` refused texture caps.
            let out = process_on_cpu(
                element,
                &state.input.info,
                &state.out_info,
                inbuf,
                "super-resolution failed",
                |frame, out, stride| task.run_cpu(frame, out, stride),
            )?;
            self.precision_log.note(*CAT, element, task.precision());
            out
        } else {
            let gpu = self.core.gpu()?;
            let frame = gpu_frame_in(
                element,
                &gpu,
                &state.uploads,
                &state.input,
                inbuf,
                &mut moved,
            )?;
            let upscaled = task
                .run_gpu(&frame)
                .map_err(|e| fail(element, "super-resolution failed", e))?;
            self.precision_log.note(*CAT, element, task.precision());
            gpu_frame_out(
                element,
                &gpu,
                upscaled,
                &state.out_info,
                state.out_texture,
                &mut moved,
            )?
        };
        let scale = (
            f64::from(state.out_info.width()) / f64::from(state.input.info.width().max(1)),
            f64::from(state.out_info.height()) / f64::from(state.input.info.height().max(1)),
        );
        // The upscaled frame is the same scene: its ROIs are the input's,
        // scaled. A compare=true output (bicubic | model side by side, twice
        // as wide as it is scaled) is not, so its ROIs are not carried.
        if scale.0 == scale.1 {
            crate::gst::roi::copy(inbuf, out.make_mut(), scale);
        }
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
