//! `WgnnModelElement` (GType `GstWgnnModelElement`): the abstract base class
//! of the five model elements (`wgnnsegment`, `wgnnsuperres`, `wgnninfer`,
//! `wgnndetect`, `wgnnclassify`), built the way gst-plugins-rs builds its
//! element families (`RtpBasePay2`): a class struct whose virtual methods
//! the subclasses fill through [`ModelElementImpl`].
//!
//! With `frames-in-flight` above 1 the base holds up to that many frames
//! whose GPU work is submitted, pushing each, in order, once its result is
//! in (`in_flight.rs`).
//!
//! The base owns what is the same in all of them: the properties `device`,
//! `precision`, `precision-used`, `stage-ms` and the counters (inherited), the values
//! of the optional shared properties a subclass lists ([`model_property`],
//! `model-proc`, `labels`, `results-location`, `post-messages`,
//! `inference-interval` (the frames between pass untouched, see
//! [`inference_interval`](crate::gst::inference_interval)), the model
//! instance's and `profile` / `gpu-ms`), the pad templates of elements whose
//! frames pass through, `set_context`, `sink_event`, `query`,
//! `transform_caps`, `start` / `stop` (refusals checked, device opened,
//! model loaded or joined through [`Processing`]), the bus errors, the
//! counters, QoS and latency. A subclass implements what differs: its own
//! properties, making its task at start, and processing a frame.
//!
//! A property whose ParamSpec is only `mutable_ready` is refused in PAUSED
//! and PLAYING with a GLib warning naming the element and the property: the
//! element keeps the value it runs with, so reading it back tells the truth.

mod imp;
mod in_flight;

use std::path::Path;
use std::sync::Arc;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::gpu::{Gpu, TransferStats};
use crate::gst::caps::Negotiated;
use crate::gst::element::{gpu_frame_in, Processing, Started};
use crate::gst::frames::Intake;
use crate::gst::instance::InstanceSettings;
use crate::gst::precision_choice::PrecisionLog;
use crate::gst::profile::ModelClock;
use crate::gst::property::Refusals;
use crate::gst::stage_clock::StageClock;
use crate::models::Model;
use crate::video::{GpuFrame, TexturePool};

pub use imp::Shared;
pub use in_flight::MAX_FRAMES_IN_FLIGHT;

glib::wrapper! {
    pub struct WgnnModelElement(ObjectSubclass<imp::WgnnModelElement>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

/// The class struct: what the base asks of each subclass.
#[repr(C)]
pub struct Class {
    parent: gst_base::ffi::GstBaseTransformClass,
    cat: fn() -> gst::DebugCategory,
    model_accepted: &'static str,
    done: &'static str,
    qos: bool,
    in_place: bool,
    start_task: fn(&WgnnModelElement, &Shared) -> Result<(), gst::ErrorMessage>,
    stop_task: fn(&WgnnModelElement),
    caps_set: fn(&WgnnModelElement, &Negotiated) -> Result<(), gst::LoggableError>,
    resize_caps: fn(&WgnnModelElement, &mut gst::StructureRef, gst::PadDirection) -> bool,
    flushed: fn(&WgnnModelElement),
    skipped: fn(&WgnnModelElement, &mut gst::BufferRef),
    start_analysis: fn(
        &WgnnModelElement,
        &Frames,
        &mut gst::BufferRef,
        &mut TransferStats,
    ) -> FrameResult<Submitted>,
    produce: fn(
        &WgnnModelElement,
        &Frames,
        &gst::BufferRef,
        &mut TransferStats,
    ) -> FrameResult<gst::Buffer>,
}

/// The negotiated frames, from `set_caps`: the input, the output's layout,
/// and the textures input frames are uploaded into (new for each caps: a new
/// resolution keeps the task but not the frames' textures).
pub struct Frames {
    pub input: Intake,
    pub out_info: gst_video::VideoInfo,
    pub out_texture: bool,
    pub uploads: TexturePool,
}

type FrameResult<T> = Result<T, gst::FlowError>;

/// What a frame still waits for once its GPU work is submitted (`None`:
/// nothing, it is done).
pub type Submitted = Option<Box<dyn Awaited>>;

/// What a frame whose GPU work is submitted still waits for (see
/// [`ModelElementImpl::start_analysis`]): held with the frame while
/// `frames-in-flight` lets the element take further frames.
pub trait Awaited: Send {
    /// Whether [`Awaited::finish`] would return without waiting for the
    /// GPU.
    fn ready(&self) -> bool;

    /// Waits for the result and attaches it to `buf` (the frame it was
    /// started on), adding the bytes moved to `moved`. A failure is posted
    /// as the element's usual error.
    fn finish(
        self: Box<Self>,
        buf: &mut gst::BufferRef,
        moved: &mut TransferStats,
    ) -> FrameResult<()>;
}

unsafe impl ClassStruct for Class {
    type Type = imp::WgnnModelElement;
}

impl std::ops::Deref for Class {
    type Target = glib::Class<gst_base::BaseTransform>;

    fn deref(&self) -> &Self::Target {
        unsafe { &*(&self.parent as *const _ as *const _) }
    }
}

/// What a model element implements. Its `impl BaseTransformImpl` sets only
/// `MODE` (`AlwaysInPlace` for an element whose frames pass through, which
/// then implements [`analyse`](Self::analyse); `NeverInPlace` for one that
/// makes a new frame, which implements [`produce`](Self::produce)).
pub trait ModelElementImpl:
    BaseTransformImpl + ObjectSubclass<Type: IsA<WgnnModelElement>>
{
    /// The accepted form of `model` that a refusal names.
    const MODEL_ACCEPTED: &'static str;
    /// What the element makes of a frame ("analysed", "upscaled"), for
    /// negotiation errors.
    const DONE: &'static str;
    /// Whether late frames are dropped before they cost a model run.
    const QOS: bool = false;

    /// The element's debug category.
    fn category() -> gst::DebugCategory;

    /// Reads the element's own settings, starts the model
    /// ([`ModelElementImplExt::start_model`]) and readies the task. On an
    /// error the base stops what was started.
    fn start_task(&self, shared: &Shared) -> Result<(), gst::ErrorMessage>;

    /// Drops the task (the base then leaves the model).
    fn stop_task(&self);

    /// New caps (`Frames` made from `negotiated` follow): a task made for
    /// the old ones may need making again. Fails the negotiation with the
    /// reason.
    fn caps_set(&self, _negotiated: &Negotiated) -> Result<(), gst::LoggableError> {
        Ok(())
    }

    /// `NeverInPlace`: what a caps structure becomes on the other pad
    /// (`false`: none); the frame's size by default.
    fn resize_caps(&self, _s: &mut gst::StructureRef, _direction: gst::PadDirection) -> bool {
        true
    }

    /// After a flush (a seek): the frames that follow are not continuous
    /// with the ones before.
    fn flushed(&self) {}

    /// `AlwaysInPlace`: a frame `inference-interval` let pass without a
    /// model run.
    fn skipped(&self, _buf: &mut gst::BufferRef) {}

    /// `AlwaysInPlace`: runs the model on `buf` (one of `frames`),
    /// attaching what it found, adding the bytes moved to `moved`.
    fn analyse(
        &self,
        _frames: &Frames,
        _buf: &mut gst::BufferRef,
        _moved: &mut TransferStats,
    ) -> FrameResult<()> {
        Err(gst::FlowError::NotSupported)
    }

    /// `AlwaysInPlace`: [`analyse`](Self::analyse) up to the submission of
    /// the frame's GPU work, returning what the frame still waits for
    /// (`None`: nothing, it is done), so that the element may take further
    /// frames meanwhile (`frames-in-flight`). By default the whole of
    /// `analyse`.
    fn start_analysis(
        &self,
        frames: &Frames,
        buf: &mut gst::BufferRef,
        moved: &mut TransferStats,
    ) -> FrameResult<Submitted> {
        self.analyse(frames, buf, moved).map(|()| None)
    }

    /// `NeverInPlace`: the output frame of `inbuf` (one of `frames`; its
    /// timing and counters are the base's), adding the bytes moved to
    /// `moved`.
    fn produce(
        &self,
        _frames: &Frames,
        _inbuf: &gst::BufferRef,
        _moved: &mut TransferStats,
    ) -> FrameResult<gst::Buffer> {
        Err(gst::FlowError::NotSupported)
    }
}

/// What the base offers its subclasses.
pub trait ModelElementImplExt: ModelElementImpl {
    /// The base's part of this element.
    fn model_element(&self) -> &imp::WgnnModelElement {
        let obj = self.obj();
        let base: *const imp::WgnnModelElement = obj.upcast_ref::<WgnnModelElement>().imp();
        // SAFETY: the base's private struct lives in the same instance as
        // `self`, so it outlives this borrow of `self`.
        unsafe { &*base }
    }

    /// `set_property`'s first call: refuses a `mutable_ready` property in
    /// PAUSED or PLAYING, or sets a shared one the subclass lists. Whether
    /// the property was dealt with.
    fn set_shared(&self, pspec: &glib::ParamSpec, value: &glib::Value) -> bool {
        self.model_element().set_shared(pspec, value)
    }

    /// `property`'s first call: the value of a shared property.
    fn shared_property(&self, pspec: &glib::ParamSpec) -> Option<glib::Value> {
        self.model_element().shared_property(pspec)
    }

    /// The element's pending refusals (see [`Refusals::parse`]).
    fn refusals(&self) -> &Refusals {
        &self.model_element().refusals
    }

    fn core(&self) -> &Processing {
        &self.model_element().core
    }

    fn precision_log(&self) -> &PrecisionLog {
        &self.model_element().precision_log
    }

    /// Where the task's stages of the frame being processed go
    /// (`stage-ms`).
    fn stage_clock(&self) -> &StageClock {
        &self.model_element().stages
    }

    /// Loads (or joins) the model at `path` on the device `shared` asks for
    /// and checks it fits the element.
    fn start_model(
        &self,
        shared: &Shared,
        path: &Path,
        check: impl FnOnce(&Model) -> crate::Result<()>,
    ) -> Result<Arc<Started>, gst::ErrorMessage> {
        let obj = self.obj();
        self.core().start(
            obj.upcast_ref(),
            path,
            shared.device,
            &shared.instance,
            check,
        )
    }

    /// What `start` settled, or a setup error while stopped.
    fn started(&self) -> crate::Result<Arc<Started>> {
        self.core()
            .started()
            .ok_or_else(|| crate::Error::invalid("the element is not started"))
    }

    /// The pipeline's GPU and the GPU frame of `buf` (one of `frames`),
    /// for a frame that arrives while the task runs there.
    fn gpu_frame(
        &self,
        frames: &Frames,
        buf: &gst::BufferRef,
        moved: &mut TransferStats,
    ) -> FrameResult<(Gpu, Arc<GpuFrame>)> {
        let gpu = self.core().gpu()?;
        let obj = self.obj();
        let frame = gpu_frame_in(
            obj.upcast_ref(),
            &gpu,
            &frames.uploads,
            &frames.input,
            buf,
            moved,
        )?;
        Ok((gpu, frame))
    }
}

impl<T: ModelElementImpl> ModelElementImplExt for T {}

unsafe impl<T: ModelElementImpl> IsSubclassable<T> for WgnnModelElement {
    fn class_init(class: &mut glib::Class<Self>) {
        Self::parent_class_init::<T>(class);
        let class = class.as_mut();
        fn imp<T: ModelElementImpl>(obj: &WgnnModelElement) -> &T {
            // SAFETY: these entries are T's class's, so `obj` is a T.
            unsafe { obj.unsafe_cast_ref::<T::Type>() }.imp()
        }
        class.cat = T::category;
        class.model_accepted = T::MODEL_ACCEPTED;
        class.done = T::DONE;
        class.qos = T::QOS;
        class.in_place = matches!(
            T::MODE,
            gst_base::subclass::BaseTransformMode::AlwaysInPlace
        );
        class.start_task = |obj, shared| imp::<T>(obj).start_task(shared);
        class.stop_task = |obj| imp::<T>(obj).stop_task();
        class.caps_set = |obj, n| imp::<T>(obj).caps_set(n);
        class.resize_caps = |obj, s, d| imp::<T>(obj).resize_caps(s, d);
        class.flushed = |obj| imp::<T>(obj).flushed();
        class.skipped = |obj, buf| imp::<T>(obj).skipped(buf);
        class.start_analysis =
            |obj, frames, buf, moved| imp::<T>(obj).start_analysis(frames, buf, moved);
        class.produce = |obj, frames, inbuf, moved| imp::<T>(obj).produce(frames, inbuf, moved);
    }
}

/// The properties of an element whose model may be shared and batched
/// (the instance's) and timed (`profile`, `gpu-ms`).
pub fn instance_properties() -> Vec<glib::ParamSpec> {
    let mut props = ModelClock::properties();
    props.extend(InstanceSettings::properties());
    props
}

/// The `model` property of an element, described by `blurb`.
pub fn model_property(blurb: &str) -> glib::ParamSpec {
    file_property("model", "Model", blurb)
}

/// A shared file property the element reads when it starts (`model`,
/// `model-proc`, `labels`), described by `blurb`.
pub fn file_property(name: &str, nick: &str, blurb: &str) -> glib::ParamSpec {
    glib::ParamSpecString::builder(name)
        .nick(nick)
        .blurb(blurb)
        .mutable_ready()
        .build()
}
