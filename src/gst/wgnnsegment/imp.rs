use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};
use gst_base::subclass::prelude::*;
use gst_video::prelude::*;

use super::background::BackgroundSpec;
use super::cpu_pass::CpuPass;
use super::gpu_pass::{GpuPass, PassEffect};
use super::SegmentEffect;
use crate::gpu::{Gpu, TransferStats};
use crate::gst::device::DeviceSlot;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::frame_meta::{buffer_for, CAPS_FEATURE_WGPU_TEXTURE};
use crate::gst::frame_meter::FrameMeter;
use crate::gst::stats::Stats;
use crate::gst::{caps, frames, CAT};
use crate::models::{self, Model};
use crate::video::cpu::CpuFrame;
use crate::video::{ColorSpec, EdgeSoftening, MaskOptions, TexturePool, MAX_BLUR_STRENGTH};

const DEFAULT_MODEL: &str = "selfie/selfie_segmentation.tflite";
const DEFAULT_BLUR: f64 = 12.0;
const DEFAULT_BACKGROUND: &str = "green";
const DEFAULT_THRESHOLD: f64 = 0.5;
const DEFAULT_SOFTNESS: f64 = 1.0;
const MAX_SMOOTHING: f64 = 0.95;

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
    profile: bool,
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
            profile: false,
        }
    }
}

impl Settings {
    fn model_path(&self) -> PathBuf {
        self.model
            .clone()
            .unwrap_or_else(|| models::bundled(DEFAULT_MODEL))
    }

    fn effect(&self) -> PassEffect {
        match self.effect {
            SegmentEffect::None => PassEffect::None,
            SegmentEffect::Mask => PassEffect::Mask,
            SegmentEffect::Blur => PassEffect::Blur(self.blur_strength as f32),
            SegmentEffect::Replace => PassEffect::Replace(self.background.clone()),
        }
    }

    /// The mask options; the size is the model's and filled in by the pass.
    fn mask(&self) -> MaskOptions {
        MaskOptions {
            width: 1,
            height: 1,
            // Softness 1 or more covers the whole 0..1 range: the model's own
            // probabilities, which is what effect=mask should show by default.
            edge: (self.softness < 1.0).then_some(EdgeSoftening {
                threshold: self.threshold as f32,
                softness: self.softness as f32,
            }),
            temporal: self.smoothing as f32,
        }
    }
}

/// What `start` settled: the model and where it runs.
struct Started {
    model: Arc<Model>,
    /// `None`: the CPU.
    gpu: Option<Gpu>,
}

// Boxed: one pass per element, and the GPU one is twice the CPU one's size.
enum Pass {
    Gpu(Box<GpuPass>),
    Cpu(Box<CpuPass>),
}

impl Pass {
    fn reset_temporal(&mut self) {
        match self {
            Pass::Gpu(p) => p.reset_temporal(),
            Pass::Cpu(p) => p.reset_temporal(),
        }
    }
}

struct State {
    in_info: gst_video::VideoInfo,
    out_info: gst_video::VideoInfo,
    out_texture: bool,
    uploads: TexturePool,
    pass: Option<Pass>,
}

#[derive(Default)]
pub struct WgnnSegment {
    settings: Mutex<Settings>,
    /// Set when a property the pass is built from changes; the next frame
    /// rebuilds it.
    settings_changed: AtomicBool,
    device: DeviceSlot,
    started: Mutex<Option<Started>>,
    state: Mutex<Option<State>>,
    meter: FrameMeter,
    /// The model's GPU time from the last profiled frame, and when it was taken.
    gpu_ms: Mutex<(f64, Option<Instant>)>,
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
                glib::ParamSpecBoolean::builder("profile")
                    .nick("Profile")
                    .blurb(
                        "Once a second, time the model with GPU timestamp queries (when the \
                         adapter has them) and show it in gpu-ms; that frame waits for the GPU",
                    )
                    .default_value(false)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecDouble::builder("gpu-ms")
                    .nick("Model GPU time")
                    .blurb(
                        "GPU milliseconds of the model on the last profiled frame (-1: not \
                         measured; see profile)",
                    )
                    .minimum(-1.0)
                    .default_value(-1.0)
                    .read_only()
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
            "effect" => settings.effect = value.get().unwrap(),
            "blur-strength" => settings.blur_strength = value.get().unwrap(),
            "background" => {
                let s = value.get::<Option<String>>().unwrap().unwrap_or_default();
                match BackgroundSpec::parse(&s) {
                    Ok(b) => settings.background = b,
                    Err(e) => {
                        // A property setter cannot fail: keep the old value and say why.
                        gst::error!(CAT, imp = self, "{e}; keeping {}", settings.background);
                        return;
                    }
                }
            }
            "threshold" => settings.threshold = value.get().unwrap(),
            "softness" => settings.softness = value.get().unwrap(),
            "smoothing" => settings.smoothing = value.get().unwrap(),
            "device" => settings.device = value.get().unwrap(),
            "profile" => {
                settings.profile = value.get().unwrap();
                // Timing does not change what the pass computes.
                return;
            }
            _ => unreachable!("no other writable properties are registered"),
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
        self.settings_changed.store(true, Ordering::Release);
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
            "effect" => settings.effect.to_value(),
            "blur-strength" => settings.blur_strength.to_value(),
            "background" => settings.background.to_string().to_value(),
            "threshold" => settings.threshold.to_value(),
            "softness" => settings.softness.to_value(),
            "smoothing" => settings.smoothing.to_value(),
            "device" => settings.device.to_value(),
            "profile" => settings.profile.to_value(),
            "gpu-ms" => match *self.gpu_ms.lock().unwrap() {
                (ms, Some(_)) => ms.to_value(),
                _ => (-1.0f64).to_value(),
            },
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
        self.device.set_context(context);
        self.parent_set_context(context)
    }
}

impl WgnnSegment {
    /// Before start, `device=cpu` already rules out texture caps, so a
    /// pipeline that cannot work fails to link instead of at the first frame.
    fn on_cpu(&self) -> bool {
        match &*self.started.lock().unwrap() {
            Some(s) => s.gpu.is_none(),
            None => self.settings.lock().unwrap().device == DeviceChoice::Cpu,
        }
    }

    fn fail(&self, what: &str, e: impl std::fmt::Display) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Failed, ["{}: {}", what, e]);
        gst::FlowError::Error
    }

    fn build_pass(&self, frame_color: ColorSpec) -> Result<Pass, crate::Error> {
        let settings = self.settings.lock().unwrap().clone();
        let started = self.started.lock().unwrap();
        let started = started
            .as_ref()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))?;
        match &started.gpu {
            Some(gpu) => Ok(Pass::Gpu(Box::new(GpuPass::new(
                gpu,
                &started.model,
                &settings.effect(),
                settings.mask(),
                frame_color,
            )?))),
            None => Ok(Pass::Cpu(Box::new(CpuPass::new(
                &started.model,
                &settings.effect(),
                settings.mask(),
                frame_color,
            )?))),
        }
    }
}

impl WgnnSegment {
    /// Maps `inbuf` as the negotiated video, runs `pass` on it and returns a
    /// new system-memory buffer laid out as `out_info`.
    fn run_on_cpu(
        &self,
        pass: &mut CpuPass,
        in_info: &gst_video::VideoInfo,
        out_info: &gst_video::VideoInfo,
        inbuf: &gst::BufferRef,
    ) -> Result<gst::Buffer, gst::FlowError> {
        let format = caps::video_format(in_info).map_err(|e| self.fail("bad input caps", e))?;
        let mapped =
            gst_video::VideoFrameRef::from_buffer_ref_readable(inbuf, in_info).map_err(|e| {
                self.fail(
                    "cannot take the input frame",
                    format!(
                        "a buffer of {} bytes cannot be mapped as a {format} {}x{} frame: {e}",
                        inbuf.size(),
                        in_info.width(),
                        in_info.height()
                    ),
                )
            })?;
        let frame = (0..mapped.n_planes())
            .map(|p| {
                let stride = mapped.plane_stride()[p as usize];
                let stride = usize::try_from(stride)
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| {
                        crate::Error::invalid(format!(
                            "plane {p} has stride {stride}; it must be positive"
                        ))
                    })?;
                let data = mapped
                    .plane_data(p)
                    .map_err(|e| crate::Error::invalid(format!("plane {p}: {e}")))?;
                Ok((data, stride))
            })
            .collect::<Result<Vec<_>, crate::Error>>()
            .and_then(|planes: Vec<(&[u8], usize)>| {
                CpuFrame::new(format, mapped.width(), mapped.height(), &planes)
            })
            .map_err(|e| self.fail("cannot take the input frame", e))?;
        let mut out = gst::Buffer::with_size(out_info.size())
            .map_err(|e| self.fail("cannot allocate the output frame", e))?;
        {
            let out = out.get_mut().expect("a new buffer is writable");
            let mut written = gst_video::VideoFrameRef::from_buffer_ref_writable(out, out_info)
                .map_err(|e| self.fail("cannot map the output frame", e))?;
            let stride = written.plane_stride()[0] as usize;
            let data = written
                .plane_data_mut(0)
                .map_err(|e| self.fail("cannot map the output frame", e))?;
            pass.run(&frame, data, stride)
                .map_err(|e| self.fail("segmentation failed", e))?;
        }
        Ok(out)
    }
}

impl BaseTransformImpl for WgnnSegment {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.meter.reset();
        *self.gpu_ms.lock().unwrap() = (-1.0, None);
        let settings = self.settings.lock().unwrap().clone();
        let path = settings.model_path();
        let model = models::load(&path).map_err(|e| {
            gst::error_msg!(
                gst::ResourceError::OpenRead,
                ["cannot use model {}: {}", path.display(), e]
            )
        })?;
        super::gpu_pass::ModelShape::of(&model)
            .map_err(|e| gst::error_msg!(gst::ResourceError::OpenRead, ["{}", e]))?;
        if let PassEffect::Replace(BackgroundSpec::Image(p)) = settings.effect() {
            // Fail now rather than on the first frame.
            BackgroundSpec::load_image(&p)
                .map_err(|e| gst::error_msg!(gst::ResourceError::OpenRead, ["{}", e]))?;
        }
        let obj = self.obj();
        let gpu = settings.device.open(&self.device, obj.upcast_ref())?;
        gst::info!(
            CAT,
            imp = self,
            "model {} on the {}",
            path.display(),
            gpu.as_ref().map(|g| g.describe()).unwrap_or("CPU".into())
        );
        *self.started.lock().unwrap() = Some(Started {
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
        let on_cpu = self.on_cpu();
        let out = caps::processing_transform(direction, caps, filter, on_cpu, |_, _| true);
        let has_texture = |c: &gst::Caps| {
            !c.is_any()
                && c.iter_with_features()
                    .any(|(_, f)| f.contains(CAPS_FEATURE_WGPU_TEXTURE))
        };
        if on_cpu && (has_texture(caps) || filter.is_some_and(has_texture)) {
            // A link or negotiation that needed texture memory fails with a
            // bare "could not link" or not-negotiated; say why here.
            gst::debug!(
                CAT,
                imp = self,
                "device=cpu takes system memory only: refusing memory:WgpuTexture caps"
            );
        }
        gst::trace!(CAT, imp = self, "{direction:?} {caps} -> {out}");
        Some(out)
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let n = caps::negotiate("segmented", incaps, outcaps, self.on_cpu())
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        gst::debug!(CAT, imp = self, "segmenting {incaps} into {outcaps}");
        let mut state = self.state.lock().unwrap();
        // A new resolution keeps the model but not the frames' textures.
        let pass = state.take().and_then(|s| s.pass);
        *state = Some(State {
            in_info: n.in_info,
            out_info: n.out_info,
            out_texture: n.out_texture,
            uploads: TexturePool::new(),
            pass,
        });
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.meter.query(&self.device, direction, query, |q| {
            BaseTransformImplExt::parent_query(self, direction, q)
        })
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        if let gst::EventView::FlushStop(_) = event.view() {
            // Frames after a seek are not continuous with the ones before.
            if let Some(p) = self
                .state
                .lock()
                .unwrap()
                .as_mut()
                .and_then(|s| s.pass.as_mut())
            {
                p.reset_temporal();
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
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let color = caps::color_spec(&state.in_info);
        if self.settings_changed.swap(false, Ordering::AcqRel) || state.pass.is_none() {
            state.pass = None;
            state.pass = Some(
                self.build_pass(color)
                    .map_err(|e| self.fail("cannot set up segmentation", e))?,
            );
        }
        let mut moved = TransferStats::default();
        let mut out = match state.pass.as_mut().unwrap() {
            Pass::Gpu(pass) => {
                let gpu = self.device.get().ok_or(gst::FlowError::NotNegotiated)?;
                let (frame, m) = frames::frame_in(&gpu, &state.uploads, &state.in_info, inbuf)
                    .map_err(|e| self.fail("cannot take the input frame", e))?;
                moved += m;
                let profile = self.settings.lock().unwrap().profile && {
                    let last = self.gpu_ms.lock().unwrap().1;
                    last.is_none_or(|t| t.elapsed().as_secs_f64() >= 1.0)
                };
                let (composited, m, ms) = pass
                    .run(&frame, profile)
                    .map_err(|e| self.fail("segmentation failed", e))?;
                moved += m;
                if let Some(ms) = ms {
                    *self.gpu_ms.lock().unwrap() = (ms, Some(Instant::now()));
                }
                if state.out_texture {
                    buffer_for(Arc::new(composited))
                } else {
                    let (b, m) = frames::download(&gpu, &composited, &state.out_info)
                        .map_err(|e| self.fail("cannot read the result back", e))?;
                    moved += m;
                    b
                }
            }
            // System memory in and out: `negotiate` refused texture caps.
            Pass::Cpu(pass) => self.run_on_cpu(pass, &state.in_info, &state.out_info, inbuf)?,
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
