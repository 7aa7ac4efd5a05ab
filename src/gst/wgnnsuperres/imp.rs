use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};
use gst_base::subclass::prelude::*;

use super::gpu_pass::GpuPass;
use crate::gpu::{Gpu, TransferStats};
use crate::gst::device::DeviceSlot;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::frame_meta::buffer_for;
use crate::gst::frame_meter::FrameMeter;
use crate::gst::stats::Stats;
use crate::gst::{caps, frames, CAT};
use crate::models::{self, Model};
use crate::video::TexturePool;

const DEFAULT_SCALE: u32 = 2;

#[derive(Clone, Debug)]
struct Settings {
    model: Option<PathBuf>,
    scale: u32,
    compare: bool,
    device: DeviceChoice,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model: None,
            scale: DEFAULT_SCALE,
            compare: false,
            device: DeviceChoice::default(),
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

/// What `start` settled; the settings are frozen then because they shape
/// the caps.
struct Started {
    settings: Settings,
    model: Arc<Model>,
    /// `None`: the CPU.
    gpu: Option<Gpu>,
}

struct State {
    in_info: gst_video::VideoInfo,
    out_info: gst_video::VideoInfo,
    out_texture: bool,
    uploads: TexturePool,
    pass: Option<GpuPass>,
}

#[derive(Default)]
pub struct WgnnSuperres {
    settings: Mutex<Settings>,
    device: DeviceSlot,
    started: Mutex<Option<Started>>,
    state: Mutex<Option<State>>,
    meter: FrameMeter,
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
                settings.model = value
                    .get::<Option<String>>()
                    .unwrap()
                    .filter(|s| !s.is_empty())
                    .map(PathBuf::from)
            }
            "scale" => settings.scale = value.get().unwrap(),
            "compare" => settings.compare = value.get().unwrap(),
            "device" => settings.device = value.get().unwrap(),
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.meter.property(pspec.name()) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "model" => settings
                .model
                .as_ref()
                .map(|p| p.display().to_string())
                .to_value(),
            "scale" => settings.scale.to_value(),
            "compare" => settings.compare.to_value(),
            "device" => settings.device.to_value(),
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
                "Upscales video 2x, 3x or 4x with ESRGAN-slim on the GPU; compare=true shows \
                 bicubic and the model side by side",
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
        self.device.set_context(context);
        self.parent_set_context(context)
    }
}

impl WgnnSuperres {
    fn on_cpu(&self) -> bool {
        matches!(&*self.started.lock().unwrap(), Some(s) if s.gpu.is_none())
    }

    fn fail(&self, what: &str, e: impl std::fmt::Display) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Failed, ["{}: {}", what, e]);
        gst::FlowError::Error
    }

    fn factors(&self) -> (i32, i32) {
        match &*self.started.lock().unwrap() {
            Some(s) => s.settings.factors(),
            None => self.settings.lock().unwrap().factors(),
        }
    }
}

impl BaseTransformImpl for WgnnSuperres {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.meter.reset();
        let settings = self.settings.lock().unwrap().clone();
        let path = settings.model_path();
        let model = models::load(&path).map_err(|e| {
            gst::error_msg!(
                gst::ResourceError::OpenRead,
                ["cannot use model {}: {}", path.display(), e]
            )
        })?;
        check_model(&model, settings.scale)
            .map_err(|e| gst::error_msg!(gst::ResourceError::OpenRead, ["{}", e]))?;
        let obj = self.obj();
        let gpu = settings.device.open(&self.device, obj.upcast_ref())?;
        if gpu.is_none() {
            return Err(gst::error_msg!(
                gst::ResourceError::Settings,
                ["device=cpu: super-resolution runs on the GPU only in this build"]
            ));
        }
        gst::info!(
            CAT,
            imp = self,
            "model {} (x{}) on the {}",
            path.display(),
            settings.scale,
            gpu.as_ref().map(|g| g.describe()).unwrap_or("CPU".into())
        );
        *self.started.lock().unwrap() = Some(Started {
            settings,
            model: Arc::new(model),
            gpu,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        self.started.lock().unwrap().take();
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        let (kw, kh) = self.factors();
        let out = caps::processing_transform(direction, caps, filter, self.on_cpu(), |s, d| {
            let up = d == gst::PadDirection::Sink;
            caps::scale_dimension(s, "width", kw, up) && caps::scale_dimension(s, "height", kh, up)
        });
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
        // A new colour spec needs new tensorizers; the pass rebuilds its
        // per-size parts by itself.
        *state = Some(State {
            in_info: n.in_info,
            out_info: n.out_info,
            out_texture: n.out_texture,
            uploads: TexturePool::new(),
            pass: None,
        });
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.meter.query(&self.device, direction, query, |q| {
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
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let gpu = self.device.get().ok_or(gst::FlowError::NotNegotiated)?;
        if state.pass.is_none() {
            let started = self.started.lock().unwrap();
            let s = started.as_ref().ok_or(gst::FlowError::Flushing)?;
            let pass = GpuPass::new(
                &gpu,
                s.model.clone(),
                s.settings.scale,
                s.settings.compare,
                caps::color_spec(&state.in_info),
            )
            .map_err(|e| self.fail("cannot set up super-resolution", e))?;
            state.pass = Some(pass);
        }
        let mut moved = TransferStats::default();
        let (frame, m) = frames::frame_in(&gpu, &state.uploads, &state.in_info, inbuf)
            .map_err(|e| self.fail("cannot take the input frame", e))?;
        moved += m;
        let upscaled = state
            .pass
            .as_mut()
            .unwrap()
            .run(&frame)
            .map_err(|e| self.fail("super-resolution failed", e))?;
        let mut out = if state.out_texture {
            buffer_for(Arc::new(upscaled))
        } else {
            let (b, m) = frames::download(&gpu, &upscaled, &state.out_info)
                .map_err(|e| self.fail("cannot read the result back", e))?;
            moved += m;
            b
        };
        frames::copy_timing(inbuf, &mut out)?;
        self.meter
            .frame_done(self.obj().upcast_ref(), inbuf.pts(), &moved, began);
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

/// An upscaler takes one image and gives one image `scale` times larger;
/// checked on a small probe size so a wrong model fails at start.
fn check_model(model: &Model, scale: u32) -> crate::Result<()> {
    let bad = |what: String| {
        crate::Error::invalid(format!(
            "{}: not a super-resolution model wgnnsuperres can run with scale={scale}: {what}",
            model.path().display()
        ))
    };
    if model.inputs().len() != 1 || model.outputs().is_empty() {
        return Err(bad("it needs one image input and an image output".into()));
    }
    let probe = match model.inputs()[0].shape.as_slice() {
        [_, None, None, Some(3)] => (8, 8),
        [_, Some(h), Some(w), Some(3)] => (*h, *w),
        other => return Err(bad(format!("input shape {other:?} is not [1, H, W, 3]"))),
    };
    let shapes = model.output_shapes(Some(probe))?;
    let s = scale as usize;
    if shapes[0] != [1, probe.0 * s, probe.1 * s, 3] {
        return Err(bad(format!(
            "a {}x{} input gives {:?}, not [1, {}, {}, 3]",
            probe.1,
            probe.0,
            shapes[0],
            probe.0 * s,
            probe.1 * s
        )));
    }
    Ok(())
}
