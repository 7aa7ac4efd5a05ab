use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{
    GenerateOutputSuccess, InputBuffer, PrepareOutputBufferSuccess,
};
use gst_base::subclass::prelude::*;

use super::in_flight::{self, InFlight, DEFAULT_FRAMES_IN_FLIGHT};
use super::{Class, Frames};
use crate::gpu::TransferStats;
use crate::gst::caps;
use crate::gst::device::DeviceSlot;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::element::Processing;
use crate::gst::frames::Intake;
use crate::gst::inference_interval::{self, Cadence};
use crate::gst::instance::InstanceSettings;
use crate::gst::precision_choice::{self, PrecisionChoice, PrecisionLog};
use crate::gst::property::{self, Refusals};
use crate::gst::results::ResultsOut;
use crate::gst::stage_clock::{self, StageClock};
use crate::gst::stats::Stats;
use crate::video::TexturePool;

const DEFAULT_DEVICE: DeviceChoice = DeviceChoice::Auto;
const DEFAULT_PRECISION: PrecisionChoice = PrecisionChoice::Auto;
const DEFAULT_POST_MESSAGES: bool = false;

/// The shared settings: the base's own properties and the shared ones a
/// subclass lists (unlisted ones keep their defaults).
#[derive(Clone, Debug)]
pub struct Shared {
    pub model: Option<PathBuf>,
    pub model_proc: Option<PathBuf>,
    pub labels: Option<PathBuf>,
    pub results_location: Option<PathBuf>,
    pub post_messages: bool,
    /// Run the model on one frame in this many.
    pub inference_interval: u32,
    pub device: DeviceChoice,
    pub precision: PrecisionChoice,
    pub instance: InstanceSettings,
    /// Frames submitted before the element waits for the oldest one.
    pub frames_in_flight: u32,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            model: None,
            model_proc: None,
            labels: None,
            results_location: None,
            post_messages: DEFAULT_POST_MESSAGES,
            inference_interval: inference_interval::DEFAULT,
            device: DEFAULT_DEVICE,
            precision: DEFAULT_PRECISION,
            instance: InstanceSettings::default(),
            frames_in_flight: DEFAULT_FRAMES_IN_FLIGHT,
        }
    }
}

impl Shared {
    /// The `model` of an element that has no default one, or the start
    /// error asking for `kind` (a model file).
    pub fn required_model(&self, kind: &str) -> Result<PathBuf, gst::ErrorMessage> {
        self.model.clone().ok_or_else(|| {
            gst::error_msg!(
                gst::ResourceError::NotFound,
                ("no model: set the model property to {kind}")
            )
        })
    }

    /// Opens `results-location` (see [`ResultsOut::open`]), refusing the
    /// files the element reads: the model at `model`, its model-proc
    /// (`model-proc`, or the one beside it) and `labels`.
    pub fn results(&self, model: &Path) -> Result<ResultsOut, gst::ErrorMessage> {
        let proc = match &self.model_proc {
            Some(p) => p.clone(),
            None => model.with_extension("json"),
        };
        let read = [
            ("model", Some(model)),
            ("model-proc", Some(proc.as_path())),
            ("labels", self.labels.as_deref()),
        ];
        ResultsOut::open(self.results_location.as_deref(), self.post_messages, &read)
    }
}

pub struct WgnnModelElement {
    pub(super) settings: Mutex<Shared>,
    frames: Mutex<Option<Arc<Frames>>>,
    /// Which frames `inference-interval` lets the model run on.
    pub(super) cadence: Cadence,
    /// The frames parked with their results on the way.
    pub(super) in_flight: InFlight,
    pub(super) core: Processing,
    pub(super) refusals: Refusals,
    pub(super) precision_log: PrecisionLog,
    pub(super) stages: StageClock,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnModelElement {
    const NAME: &'static str = "GstWgnnModelElement";
    const ABSTRACT: bool = true;
    type Type = super::WgnnModelElement;
    type ParentType = gst_base::BaseTransform;
    type Class = Class;

    fn class_init(class: &mut Class) {
        // The abstract class's own entries; each subclass's class_init
        // replaces them.
        class.cat = || *gst::CAT_RUST;
        class.model_accepted = property::INPUT_FILE;
        class.done = "processed";
        class.start_task = |_, _| {
            Err(gst::error_msg!(
                gst::CoreError::NotImplemented,
                ("an abstract element cannot start")
            ))
        };
        class.stop_task = |_| {};
        class.caps_set = |_, _| Err(gst::loggable_error!(gst::CAT_RUST, "abstract element"));
        class.resize_caps = |_, _, _| true;
        class.flushed = |_| {};
        class.skipped = |_, _| {};
        class.start_analysis = |_, _, _, _| Err(gst::FlowError::NotSupported);
        class.produce = |_, _, _, _| Err(gst::FlowError::NotSupported);
    }

    fn with_class(class: &Class) -> Self {
        WgnnModelElement {
            settings: Mutex::default(),
            frames: Mutex::default(),
            cadence: Cadence::default(),
            in_flight: InFlight::default(),
            core: Processing::new((class.cat)()),
            refusals: Refusals::default(),
            precision_log: PrecisionLog::default(),
            stages: StageClock::default(),
        }
    }
}

fn path_value(path: &Option<PathBuf>) -> glib::Value {
    path.as_ref().map(|p| p.display().to_string()).to_value()
}

impl WgnnModelElement {
    pub(super) fn class(&self) -> &Class {
        let obj = self.obj();
        let class: *const Class = obj.class().as_ref();
        // SAFETY: the class lives as long as the type, which outlives every
        // instance.
        unsafe { &*class }
    }

    /// The negotiated frames, once caps are set.
    pub(super) fn frames(&self) -> Result<Arc<Frames>, gst::FlowError> {
        self.frames
            .lock()
            .unwrap()
            .clone()
            .ok_or(gst::FlowError::NotNegotiated)
    }

    /// A set_caps refusal: on the bus, where the application sees it, as
    /// well as in the log (a bare not-negotiated says nothing).
    fn refuse_caps(&self, reason: String) -> gst::LoggableError {
        gst::element_imp_error!(self, gst::CoreError::Negotiation, ("{reason}"));
        gst::loggable_error!(self.core.cat, "{reason}")
    }

    pub(super) fn on_cpu(&self) -> bool {
        let choice = self.settings.lock().unwrap().device;
        self.core.on_cpu(choice)
    }

    pub(super) fn set_shared(&self, pspec: &glib::ParamSpec, value: &glib::Value) -> bool {
        if property::refused_while_running(self.obj().upcast_ref(), pspec) {
            return true;
        }
        let name = pspec.name();
        if self.core.clock.set(name, value) {
            return true;
        }
        let mut s = self.settings.lock().unwrap();
        if s.instance.set(name, value) {
            return true;
        }
        let file = match name {
            "model" => &mut s.model,
            "model-proc" => &mut s.model_proc,
            "labels" => &mut s.labels,
            "results-location" => &mut s.results_location,
            "post-messages" => {
                s.post_messages = value.get().unwrap_or(DEFAULT_POST_MESSAGES);
                return true;
            }
            inference_interval::PROPERTY => {
                s.inference_interval = value.get().unwrap_or(inference_interval::DEFAULT);
                return true;
            }
            _ => return false,
        };
        let accepted = self.class().model_accepted;
        let (accepted, parse) = property::model_file_property(name, accepted)
            .expect("one of the shared file properties");
        if let Some(path) = self
            .refusals
            .parse(&*self.obj(), pspec, value, accepted, parse)
        {
            *file = path;
        }
        true
    }

    pub(super) fn shared_property(&self, pspec: &glib::ParamSpec) -> Option<glib::Value> {
        let name = pspec.name();
        if let Some(v) = self.core.property(name) {
            return Some(v);
        }
        let s = self.settings.lock().unwrap();
        if let Some(v) = s.instance.get(name) {
            return Some(v);
        }
        Some(match name {
            "model" => path_value(&s.model),
            "model-proc" => path_value(&s.model_proc),
            "labels" => path_value(&s.labels),
            "results-location" => path_value(&s.results_location),
            "post-messages" => s.post_messages.to_value(),
            inference_interval::PROPERTY => s.inference_interval.to_value(),
            "device" => s.device.to_value(),
            "precision" => s.precision.to_value(),
            in_flight::PROPERTY => s.frames_in_flight.to_value(),
            "precision-used" => self.precision_log.used(),
            stage_clock::PROPERTY => self.stages.value(),
            _ => return None,
        })
    }
}

impl ObjectImpl for WgnnModelElement {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecEnum::builder_with_default("device", DEFAULT_DEVICE)
                    .nick("Device")
                    .blurb(
                        "Where the model and the frame processing run. Read when the element \
                         starts",
                    )
                    .mutable_ready()
                    .build(),
                precision_choice::property(),
                precision_choice::used_property(),
                in_flight::property(),
                StageClock::property(),
            ];
            props.extend(Stats::properties());
            props.extend(DeviceSlot::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if property::refused_while_running(self.obj().upcast_ref(), pspec) {
            return;
        }
        if self
            .core
            .slot
            .set_property(self.obj().upcast_ref(), pspec, value)
        {
            return;
        }
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "device" => s.device = value.get().unwrap_or(DEFAULT_DEVICE),
            "precision" => s.precision = value.get().unwrap_or(DEFAULT_PRECISION),
            in_flight::PROPERTY => {
                s.frames_in_flight = value.get().unwrap_or(DEFAULT_FRAMES_IN_FLIGHT)
            }
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        self.shared_property(pspec)
            .expect("every registered property is shared")
    }

    fn constructed(&self) {
        self.parent_constructed();
        if self.class().qos {
            self.obj().set_property("qos", true);
        }
    }
}

impl GstObjectImpl for WgnnModelElement {}

impl ElementImpl for WgnnModelElement {
    fn pad_templates() -> &'static [gst::PadTemplate] {
        // An element whose frames pass through takes any memory; one that
        // makes new frames replaces these.
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

impl BaseTransformImpl for WgnnModelElement {
    const MODE: gst_base::subclass::BaseTransformMode = gst_base::subclass::BaseTransformMode::Both;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        self.cadence.restart();
        self.stages.reset();
        let shared = self.settings.lock().unwrap().clone();
        self.in_flight.start(shared.frames_in_flight);
        (self.class().start_task)(&self.obj(), &shared).inspect_err(|_| {
            (self.class().stop_task)(&self.obj());
            self.core.stop();
        })
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        // The pads are inactive: parked frames cannot be pushed.
        self.in_flight.clear();
        self.frames.lock().unwrap().take();
        (self.class().stop_task)(&self.obj());
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
        let obj = self.obj();
        let on_cpu = self.on_cpu();
        let out = if self.class().in_place {
            let out = self.parent_transform_caps(direction, caps, None)?;
            self.core
                .pass_through_caps(obj.upcast_ref(), on_cpu, out, caps, filter)
        } else {
            let resize = self.class().resize_caps;
            let out =
                caps::processing_transform(direction, caps, on_cpu, |s, d| resize(&obj, s, d));
            if on_cpu {
                self.core
                    .explain_refused_textures(obj.upcast_ref(), caps, filter);
            }
            match direction {
                gst::PadDirection::Sink if !on_cpu => caps::readable_by_peer(obj.upcast_ref(), out),
                _ => out,
            }
        };
        // device=cpu works on system memory only. Where textures are all a
        // peer offers or takes (`wgnnupload ! wgnnsegment device=cpu`, or a
        // texture capsfilter after it), or nothing is known yet (linking),
        // it still lists them, so that set_caps refuses them with the
        // reason on the bus instead of a bare "could not link"; a peer
        // that also offers or takes system memory gets that.
        let for_textures = on_cpu && filter.is_none_or(|f| caps::only_textures(f));
        let out = if for_textures {
            caps::and_textures(out)
        } else {
            out
        };
        let out = caps::filtered(out, filter);
        gst::trace!(self.core.cat, imp = self, "{direction:?} {caps} -> {out}");
        Some(out)
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let cat = self.core.cat;
        let n = caps::negotiate(self.class().done, incaps, outcaps, self.on_cpu())
            .map_err(|e| self.refuse_caps(e))?;
        gst::debug!(cat, imp = self, "{incaps} -> {outcaps}");
        (self.class().caps_set)(&self.obj(), &n)?;
        *self.frames.lock().unwrap() = Some(Arc::new(Frames {
            input: Intake::negotiated(cat, &n),
            out_info: n.out_info,
            out_texture: n.out_texture,
            uploads: TexturePool::new(),
        }));
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        self.core.users.sink_event(&event);
        match event.view() {
            gst::EventView::FlushStart(_) => self.in_flight.clear(),
            gst::EventView::FlushStop(_) => {
                self.in_flight.clear();
                self.cadence.restart();
                (self.class().flushed)(&self.obj());
            }
            // Nothing overtakes a parked frame: caps, segments and EOS go
            // after it. A frame that fails has posted its error.
            _ if event.is_serialized() => {
                let _ = self.drain_in_flight();
            }
            _ => {}
        }
        self.parent_sink_event(event)
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        if direction == gst::PadDirection::Sink && query.is_serialized() {
            // A drain or allocation query: the parked frames go first.
            let _ = self.drain_in_flight();
        }
        let answered = self.core.query(direction, query, |q| {
            BaseTransformImplExt::parent_query(self, direction, q)
        });
        let upstream = answered && direction == gst::PadDirection::Src;
        if let (true, gst::QueryViewMut::Latency(q)) = (upstream, query.view_mut()) {
            let fps = self
                .frames
                .lock()
                .unwrap()
                .as_ref()
                .map(|f| f.input.info.fps());
            let extra = fps.map_or(gst::ClockTime::ZERO, |f| self.in_flight.extra_latency(f));
            let (live, min, max) = q.result();
            q.set(live, min + extra, max.map(|m| m + extra));
        }
        answered
    }

    fn generate_output(&self) -> Result<GenerateOutputSuccess, gst::FlowError> {
        if self.in_flight.limit() == 1 {
            return self.parent_generate_output();
        }
        self.generate_in_flight()
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let began = Instant::now();
        let obj = self.obj();
        let interval = self.settings.lock().unwrap().inference_interval;
        if !self.cadence.due(interval) {
            // Not counted: no model ran on it.
            (self.class().skipped)(&obj, buf);
            return Ok(gst::FlowSuccess::Ok);
        }
        let mut moved = TransferStats::default();
        let awaited = (self.class().start_analysis)(&obj, &*self.frames()?, buf, &mut moved)?;
        if let Some(a) = awaited {
            a.finish(buf, &mut moved)?;
        }
        self.stages.frame(began.elapsed());
        self.core
            .meter
            .frame_done(self.core.cat, obj.upcast_ref(), buf.pts(), &moved, began);
        Ok(gst::FlowSuccess::Ok)
    }

    fn prepare_output_buffer(
        &self,
        inbuf: InputBuffer,
    ) -> Result<PrepareOutputBufferSuccess, gst::FlowError> {
        if self.class().in_place {
            return self.parent_prepare_output_buffer(inbuf);
        }
        let inbuf: &gst::BufferRef = match &inbuf {
            InputBuffer::Writable(b) => b,
            InputBuffer::Readable(b) => b,
        };
        let began = Instant::now();
        let obj = self.obj();
        let mut moved = TransferStats::default();
        let frames = self.frames()?;
        let mut out = (self.class().produce)(&obj, &frames, inbuf, &mut moved)?;
        self.stages.frame(began.elapsed());
        self.core
            .frame_done(obj.upcast_ref(), inbuf, &mut out, &moved, began)?;
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
