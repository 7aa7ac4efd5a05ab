use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::{metas, Tracker};
use crate::gpu::TransferStats;
use crate::gst::element::{fail, settings_error};
use crate::gst::frame_meter::FrameMeter;
use crate::gst::property::{self, Refusals};
use crate::gst::results::{self, ResultsOut};
use crate::gst::stats::Stats;
use crate::gst::{caps, inference_interval, roi};
use crate::tasks::track::{self, TrackInfo, TrackerOptions};
use crate::tasks::Detection;

crate::gst::element_category!("wgnntrack", "wgnn object tracking element");

const DEFAULT_TRACKER: Tracker = Tracker::ByteTrack;
const DEFAULT_MAX_AGE: u32 = track::DEFAULT_MAX_AGE;
const DEFAULT_MIN_HITS: u32 = track::DEFAULT_MIN_HITS;
const DEFAULT_IOU_THRESHOLD: f64 = track::DEFAULT_IOU_THRESHOLD as f64;
const DEFAULT_HIGH_THRESHOLD: f64 = track::DEFAULT_HIGH_THRESHOLD as f64;
const DEFAULT_LOW_THRESHOLD: f64 = track::DEFAULT_LOW_THRESHOLD as f64;
const DEFAULT_POST_MESSAGES: bool = false;

#[derive(Clone, Debug)]
struct Settings {
    tracker: Tracker,
    max_age: u32,
    min_hits: u32,
    iou_threshold: f64,
    high_threshold: f64,
    low_threshold: f64,
    results_location: Option<PathBuf>,
    post_messages: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tracker: DEFAULT_TRACKER,
            max_age: DEFAULT_MAX_AGE,
            min_hits: DEFAULT_MIN_HITS,
            iou_threshold: DEFAULT_IOU_THRESHOLD,
            high_threshold: DEFAULT_HIGH_THRESHOLD,
            low_threshold: DEFAULT_LOW_THRESHOLD,
            results_location: None,
            post_messages: DEFAULT_POST_MESSAGES,
        }
    }
}

impl Settings {
    fn options(&self) -> TrackerOptions {
        TrackerOptions {
            kind: self.tracker.into(),
            max_age: self.max_age,
            min_hits: self.min_hits,
            iou_threshold: self.iou_threshold as f32,
            high_threshold: self.high_threshold as f32,
            low_threshold: self.low_threshold as f32,
        }
    }
}

/// A started element's tracker and outputs.
struct State {
    tracker: track::Tracker,
    results: ResultsOut,
    /// The frame size, from the caps.
    size: Option<(u32, u32)>,
}

#[derive(Default)]
pub struct WgnnTrack {
    settings: Mutex<Settings>,
    state: Mutex<Option<State>>,
    meter: FrameMeter,
    refusals: Refusals,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnTrack {
    const NAME: &'static str = "GstWgnnTrack";
    type Type = super::WgnnTrack;
    type ParentType = gst_base::BaseTransform;
}

fn threshold(name: &str, nick: &str, blurb: &str, default: f64) -> glib::ParamSpec {
    glib::ParamSpecDouble::builder(name)
        .nick(nick)
        .blurb(blurb)
        .minimum(0.0)
        .maximum(1.0)
        .default_value(default)
        .mutable_ready()
        .build()
}

impl ObjectImpl for WgnnTrack {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecEnum::builder_with_default("tracker", DEFAULT_TRACKER)
                    .nick("Tracker")
                    .blurb("How detections are matched to tracks. Read when the element starts")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("max-age")
                    .nick("Maximum age")
                    .blurb("Frames a track that is not seen keeps its id (then it is dropped)")
                    .minimum(1)
                    .maximum(100_000)
                    .default_value(DEFAULT_MAX_AGE)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("min-hits")
                    .nick("Minimum hits")
                    .blurb("Detection frames in a row before a new track gets its id (1: at once)")
                    .minimum(1)
                    .maximum(1000)
                    .default_value(DEFAULT_MIN_HITS)
                    .mutable_ready()
                    .build(),
                threshold(
                    "iou-threshold",
                    "IoU threshold",
                    "Least overlap (intersection over union) of a track's expected box and a \
                     detection that continues it, 0..1",
                    DEFAULT_IOU_THRESHOLD,
                ),
                threshold(
                    "high-threshold",
                    "High threshold",
                    "Detections at or above this confidence start tracks (ByteTrack's first \
                     pass), 0..1",
                    DEFAULT_HIGH_THRESHOLD,
                ),
                threshold(
                    "low-threshold",
                    "Low threshold",
                    "Detections below this confidence are ignored; ByteTrack's second pass \
                     continues tracks with the ones up to high-threshold. At most \
                     high-threshold",
                    DEFAULT_LOW_THRESHOLD,
                ),
            ];
            props.extend(results::properties());
            props.extend(Stats::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let obj = self.obj();
        if property::refused_while_running(obj.upcast_ref(), pspec) {
            return;
        }
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "tracker" => s.tracker = value.get().unwrap_or(DEFAULT_TRACKER),
            "max-age" => s.max_age = value.get().unwrap_or(DEFAULT_MAX_AGE),
            "min-hits" => s.min_hits = value.get().unwrap_or(DEFAULT_MIN_HITS),
            "iou-threshold" => s.iou_threshold = value.get().unwrap_or(DEFAULT_IOU_THRESHOLD),
            "high-threshold" => s.high_threshold = value.get().unwrap_or(DEFAULT_HIGH_THRESHOLD),
            "low-threshold" => s.low_threshold = value.get().unwrap_or(DEFAULT_LOW_THRESHOLD),
            "results-location" => {
                if let Some(path) = self.refusals.parse(
                    &*obj,
                    pspec,
                    value,
                    property::OUTPUT_FILE,
                    property::output_file,
                ) {
                    s.results_location = path;
                }
            }
            "post-messages" => s.post_messages = value.get().unwrap_or(DEFAULT_POST_MESSAGES),
            _ => unreachable!("no other writable properties are registered"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.meter.property(pspec.name()) {
            return v;
        }
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "tracker" => s.tracker.to_value(),
            "max-age" => s.max_age.to_value(),
            "min-hits" => s.min_hits.to_value(),
            "iou-threshold" => s.iou_threshold.to_value(),
            "high-threshold" => s.high_threshold.to_value(),
            "low-threshold" => s.low_threshold.to_value(),
            "results-location" => s
                .results_location
                .as_ref()
                .map(|p| p.display().to_string())
                .to_value(),
            "post-messages" => s.post_messages.to_value(),
            _ => unreachable!("no other properties are registered"),
        }
    }
}

impl GstObjectImpl for WgnnTrack {}

impl ElementImpl for WgnnTrack {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn object tracking",
                "Filter/Analyzer/Video",
                "Gives the regions of interest from upstream ids that persist across frames \
                 (IoU or ByteTrack), and predicts them on frames the detector skipped; the frame \
                 passes through untouched, in any memory",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let any = caps::any_memory_caps();
            [
                ("sink", gst::PadDirection::Sink),
                ("src", gst::PadDirection::Src),
            ]
            .into_iter()
            .map(|(name, dir)| {
                gst::PadTemplate::new(name, dir, gst::PadPresence::Always, &any).unwrap()
            })
            .collect()
        });
        TEMPLATES.as_ref()
    }
}

impl WgnnTrack {
    /// Tracks `buf`'s regions (or predicts them where the detector skipped
    /// it) and writes the tracks onto its metas.
    fn track(&self, state: &mut State, buf: &mut gst::BufferRef, width: u32, height: u32) {
        let tracked: Vec<(i32, TrackInfo)> = if inference_interval::is_skipped(buf) {
            let tracks = state.tracker.predict();
            let ids = metas::attach_predicted(buf, &tracks, width, height);
            ids.into_iter().zip(tracks).collect()
        } else {
            let (ids, detections): (Vec<i32>, Vec<Detection>) =
                metas::detections(buf, width, height).into_iter().unzip();
            let found = state.tracker.update(&detections);
            ids.into_iter()
                .zip(found)
                .filter_map(|(id, t)| Some((id, t?)))
                .collect()
        };
        gst::log!(CAT, imp = self, "{} tracked objects", tracked.len());
        metas::write(buf, &tracked);
    }
}

impl BaseTransformImpl for WgnnTrack {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        let s = self.settings.lock().unwrap().clone();
        let tracker = track::Tracker::new(s.options()).map_err(|e| settings_error(&e))?;
        let results = ResultsOut::open(s.results_location.as_deref(), s.post_messages, &[])?;
        self.meter.reset();
        *self.state.lock().unwrap() = Some(State {
            tracker,
            results,
            size: None,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, _outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let info = gst_video::VideoInfo::from_caps(incaps)
            .map_err(|_| gst::loggable_error!(CAT, "not video caps: {incaps}"))?;
        if let Some(state) = &mut *self.state.lock().unwrap() {
            state.size = Some((info.width(), info.height()));
        }
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        if let gst::EventView::FlushStop(_) = event.view() {
            if let Some(state) = &mut *self.state.lock().unwrap() {
                state.tracker.reset();
            }
        }
        self.parent_sink_event(event)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let began = Instant::now();
        let obj = self.obj();
        let element: &gst::Element = obj.upcast_ref();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let (width, height) = state.size.ok_or(gst::FlowError::NotNegotiated)?;
        self.track(state, buf, width, height);
        if state.results.wanted() {
            let results = roi::frame_results(buf, width, height);
            state
                .results
                .emit(element, &results)
                .map_err(|e| fail(element, "cannot write the results", e))?;
        }
        self.meter
            .frame_done(*CAT, element, buf.pts(), &TransferStats::default(), began);
        Ok(gst::FlowSuccess::Ok)
    }
}
