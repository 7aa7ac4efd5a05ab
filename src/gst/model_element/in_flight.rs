//! `frames-in-flight`: a model element holding up to N frames whose GPU
//! work is submitted, their results still on the way, so that a stream's
//! rate is bound by its batch's gather rather than by gather + the GPU's
//! round trip.
//!
//! With N above 1 the base replaces GstBaseTransform's `generate_output`:
//! each input frame is processed up to the submission of its GPU work
//! (`start_analysis` of an element whose frames pass through; `produce`,
//! which waits for nothing on the GPU, of the others) and parked with what
//! it awaits; the oldest parked frame goes out as soon as its result is in,
//! and the element blocks on it only when N frames are parked. Frames leave
//! in the order they came. Every serialized event and query (EOS, caps,
//! segment, drain, allocation) first pushes the parked frames out, in
//! order, so that nothing overtakes them; a flush drops them, and so does
//! `stop` (the pads are inactive then: nothing can be pushed).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;

use super::imp::WgnnModelElement;
use super::Awaited;
use crate::gpu::TransferStats;

pub const PROPERTY: &str = "frames-in-flight";
pub const DEFAULT_FRAMES_IN_FLIGHT: u32 = 1;
pub const MAX_FRAMES_IN_FLIGHT: u32 = 16;

pub fn property() -> glib::ParamSpec {
    glib::ParamSpecUInt::builder(PROPERTY)
        .nick("Frames in flight")
        .blurb(
            "Frames whose GPU work is submitted before the element waits for the oldest one's \
             result, 1 to 16. Above 1 a stream's rate is bound by its batch's gather rather \
             than by gather + the GPU round trip, at the cost of N - 1 frame durations (of the \
             caps' framerate) more latency, which the latency query reports. wgnndetect's GPU \
             results are awaited this way; other elements' frames are done when submitted and \
             leave at once. Read when the element starts",
        )
        .minimum(1)
        .maximum(MAX_FRAMES_IN_FLIGHT)
        .default_value(DEFAULT_FRAMES_IN_FLIGHT)
        .mutable_ready()
        .build()
}

/// A frame between its submission and its push.
pub(super) struct Parked {
    /// The frame to push: the input itself (in place) or the output made
    /// of it.
    buf: gst::Buffer,
    /// What the frame still waits for; `None`: it is done.
    awaited: Option<Box<dyn Awaited>>,
    moved: TransferStats,
    /// The element's host time on the frame so far (parked time left out:
    /// the latency query counts that as N - 1 frames).
    busy: Duration,
    /// Whether the frame is counted once done (a frame `inference-interval`
    /// let pass, or one made by `produce`, already counted, is not).
    count: bool,
}

impl Parked {
    fn ready(&self) -> bool {
        self.awaited.as_ref().is_none_or(|a| a.ready())
    }
}

/// The parked frames of one element, oldest first.
#[derive(Default)]
pub(super) struct InFlight {
    /// The `frames-in-flight` the element started with.
    limit: AtomicU32,
    parked: Mutex<VecDeque<Parked>>,
}

impl InFlight {
    pub fn start(&self, limit: u32) {
        self.limit.store(limit, Ordering::Relaxed);
        self.clear();
    }

    pub fn limit(&self) -> u32 {
        self.limit.load(Ordering::Relaxed).max(1)
    }

    pub fn clear(&self) {
        self.parked.lock().unwrap().clear();
    }

    fn push(&self, parked: Parked) {
        self.parked.lock().unwrap().push_back(parked);
    }

    /// The oldest parked frame when its result is in, or when `limit`
    /// frames are parked (then its caller waits for it).
    fn next_out(&self) -> Option<Parked> {
        let mut parked = self.parked.lock().unwrap();
        let full = parked.len() >= self.limit() as usize;
        if full || parked.front().is_some_and(Parked::ready) {
            parked.pop_front()
        } else {
            None
        }
    }

    fn oldest(&self) -> Option<Parked> {
        self.parked.lock().unwrap().pop_front()
    }

    /// What holding N - 1 frames adds to the latency at `fps` (nothing
    /// where the framerate is unknown).
    pub fn extra_latency(&self, fps: gst::Fraction) -> gst::ClockTime {
        let extra = u64::from(self.limit() - 1);
        if fps.numer() <= 0 || fps.denom() <= 0 || extra == 0 {
            return gst::ClockTime::ZERO;
        }
        let ns = u128::from(extra) * 1_000_000_000 * fps.denom() as u128;
        gst::ClockTime::from_nseconds(ns.div_ceil(fps.numer() as u128) as u64)
    }
}

impl WgnnModelElement {
    /// `generate_output` with frames in flight: parks the queued input
    /// frame, then returns the oldest parked frame if it may go.
    pub(super) fn generate_in_flight(
        &self,
    ) -> Result<gst_base::subclass::base_transform::GenerateOutputSuccess, gst::FlowError> {
        use gst_base::subclass::base_transform::{BaseTransformImplExt, GenerateOutputSuccess};
        if let Some(buf) = self.take_queued_buffer() {
            let parked = self.park(buf)?;
            self.in_flight.push(parked);
        }
        match self.in_flight.next_out() {
            Some(p) => Ok(GenerateOutputSuccess::Buffer(self.finish_parked(p)?)),
            None => Ok(GenerateOutputSuccess::NoOutput),
        }
    }

    /// Processes `buf` up to the submission of its GPU work.
    fn park(&self, buf: gst::Buffer) -> Result<Parked, gst::FlowError> {
        let began = Instant::now();
        let obj = self.obj();
        let frames = self.frames()?;
        let mut moved = TransferStats::default();
        if !self.class().in_place {
            // `produce` waits for nothing on the GPU: the frame is done.
            let mut out = (self.class().produce)(&obj, &frames, &buf, &mut moved)?;
            self.stages.frame(began.elapsed());
            self.core
                .frame_done(obj.upcast_ref(), &buf, &mut out, &moved, began)?;
            return Ok(Parked {
                buf: out,
                awaited: None,
                moved,
                busy: began.elapsed(),
                count: false,
            });
        }
        let mut buf = buf;
        let interval = self.settings.lock().unwrap().inference_interval;
        if !self.cadence.due(interval) {
            (self.class().skipped)(&obj, buf.make_mut());
            return Ok(Parked {
                buf,
                awaited: None,
                moved,
                busy: Duration::ZERO,
                count: false,
            });
        }
        let awaited = (self.class().start_analysis)(&obj, &frames, buf.make_mut(), &mut moved)?;
        Ok(Parked {
            buf,
            awaited,
            moved,
            busy: began.elapsed(),
            count: true,
        })
    }

    /// Waits for what `parked` awaits, finishes the frame and counts it.
    fn finish_parked(&self, parked: Parked) -> Result<gst::Buffer, gst::FlowError> {
        let began = Instant::now();
        let Parked {
            mut buf,
            awaited,
            mut moved,
            busy,
            count,
        } = parked;
        if let Some(a) = awaited {
            a.finish(buf.make_mut(), &mut moved)?;
        }
        if count {
            let took = busy + began.elapsed();
            self.stages.frame(took);
            let obj = self.obj();
            self.core
                .meter
                .frame_took(self.core.cat, obj.upcast_ref(), buf.pts(), &moved, took);
        }
        Ok(buf)
    }

    /// Pushes every parked frame out, oldest first, waiting for each; drops
    /// the rest when one fails.
    pub(super) fn drain_in_flight(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        while let Some(p) = self.in_flight.oldest() {
            let pushed = self
                .finish_parked(p)
                .and_then(|buf| self.obj().src_pad().push(buf));
            if let Err(e) = pushed {
                gst::debug!(self.core.cat, imp = self, "draining stopped: {e:?}");
                self.in_flight.clear();
                return Err(e);
            }
        }
        Ok(gst::FlowSuccess::Ok)
    }
}
