use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::gpu::TransferStats;
use crate::gst::frame_meter::FrameMeter;
use crate::gst::property::{self, Refusals};
use crate::gst::results::ResultsOut;
use crate::gst::stats::Stats;
use crate::gst::{analytics_meta, pass_through};
use crate::tasks::analytics::{self, Analytics, Config, Event};

crate::gst::element_category!("wgnnanalytics", "wgnn line and zone analytics element");

/// The name of the element messages of the events.
pub const MESSAGE: &str = "wgnn-analytics";

const CONFIG_ACCEPTED: &str =
    "the path of a JSON file of named lines (2 points) and zones (3 or more points)";

#[derive(Clone, Debug, Default)]
struct Settings {
    config: Option<PathBuf>,
    results_location: Option<PathBuf>,
}

struct State {
    analytics: Analytics,
    /// The config's lines and zones for the meta (`analytics_meta::geometry`).
    geometry: String,
    out: ResultsOut,
}

#[derive(Default)]
pub struct WgnnAnalytics {
    settings: Mutex<Settings>,
    meter: FrameMeter,
    size: pass_through::FrameSize,
    refusals: Refusals,
    state: Mutex<Option<State>>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnAnalytics {
    const NAME: &'static str = "GstWgnnAnalytics";
    type Type = super::WgnnAnalytics;
    type ParentType = gst_base::BaseTransform;
}

/// The `config` property: unset, or a file that reads as a configuration.
fn config_file(given: Option<&str>) -> Result<Option<PathBuf>, String> {
    let path = property::input_file(given)?;
    if let Some(p) = &path {
        Config::load(p).map_err(|e| property::cause(&e, p))?;
    }
    Ok(path)
}

impl ObjectImpl for WgnnAnalytics {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("config")
                    .nick("Config")
                    .blurb(
                        "JSON file of the lines and zones, in frame pixels: {\"lines\": \
                         [{\"name\", \"points\": [[x, y], [x, y]]}], \"zones\": [{\"name\", \
                         \"points\": [[x, y], ...]}]}. Read when the element starts",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("results-location")
                    .nick("Results location")
                    .blurb(
                        "File to append one JSON line per frame to (objects with ids, \
                         cumulative line counts, zone counts, events); unset = none",
                    )
                    .mutable_ready()
                    .build(),
            ];
            props.extend(Stats::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let (accepted, parse): (&'static str, property::PathParser) = match pspec.name() {
            "config" => (CONFIG_ACCEPTED, config_file),
            "results-location" => (property::OUTPUT_FILE, property::output_file),
            _ => unreachable!("no other writable properties are registered"),
        };
        let Some(path) = self
            .refusals
            .parse(&*self.obj(), pspec, value, accepted, parse)
        else {
            return;
        };
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "config" => settings.config = path,
            _ => settings.results_location = path,
        }
        gst::debug!(CAT, imp = self, "{} set to {:?}", pspec.name(), value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.meter.property(pspec.name()) {
            return v;
        }
        let settings = self.settings.lock().unwrap();
        let path = match pspec.name() {
            "config" => &settings.config,
            "results-location" => &settings.results_location,
            _ => unreachable!("no other properties are registered"),
        };
        path.as_ref().map(|p| p.display().to_string()).to_value()
    }
}

impl GstObjectImpl for WgnnAnalytics {}

impl ElementImpl for WgnnAnalytics {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn analytics",
                "Filter/Analyzer/Video",
                "Counts the tracked regions of interest crossing lines (each direction) and \
                 inside zones, and posts the events; frames pass through untouched",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(pass_through::templates);
        TEMPLATES.as_ref()
    }
}

impl WgnnAnalytics {
    /// Posts one element message per event.
    fn post(&self, pts: Option<u64>, frame: &analytics::FrameAnalytics) {
        let obj = self.obj();
        for event in &frame.events {
            let mut s = gst::Structure::builder(MESSAGE)
                .field("event", event.kind())
                .build();
            match event {
                Event::LineCrossed {
                    line,
                    id,
                    direction,
                } => {
                    s.set("line", line.as_str());
                    s.set("id", *id);
                    s.set(
                        "direction",
                        if *direction == analytics::Direction::Forward {
                            "forward"
                        } else {
                            "backward"
                        },
                    );
                    if let Some((_, c)) = frame.lines.iter().find(|(n, _)| n == line) {
                        s.set("forward", c.forward);
                        s.set("backward", c.backward);
                    }
                }
                Event::ZoneEntered { zone, id } | Event::ZoneLeft { zone, id } => {
                    s.set("zone", zone.as_str());
                    s.set("id", *id);
                    if let Some((_, n)) = frame.zones.iter().find(|(n, _)| n == zone) {
                        s.set("count", *n);
                    }
                }
            }
            if let Some(pts) = pts {
                s.set("pts", pts);
            }
            pass_through::post(obj.upcast_ref(), s);
        }
    }
}

impl BaseTransformImpl for WgnnAnalytics {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        self.meter.reset();
        let settings = self.settings.lock().unwrap().clone();
        let Some(path) = settings.config else {
            return Err(gst::error_msg!(
                gst::LibraryError::Settings,
                ("property config is not set: set it to {CONFIG_ACCEPTED}")
            ));
        };
        let config = Config::load(&path).map_err(|e| {
            gst::error_msg!(
                gst::LibraryError::Settings,
                (
                    "cannot use config {}: {}",
                    path.display(),
                    property::cause(&e, &path)
                )
            )
        })?;
        let out = ResultsOut::open(
            settings.results_location.as_deref(),
            false,
            &[("config", Some(&path))],
        )?;
        gst::info!(
            CAT,
            imp = self,
            "{} lines and {} zones from {}",
            config.lines.len(),
            config.zones.len(),
            path.display()
        );
        *self.state.lock().unwrap() = Some(State {
            geometry: analytics_meta::geometry(&config),
            analytics: Analytics::new(config),
            out,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        self.size.set(*CAT, incaps)?;
        self.parent_set_caps(incaps, outcaps)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let began = Instant::now();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let (w, h) = self.size.get()?;
        let pts = buf.pts().map(|t| t.nseconds());
        let (results, ids) = analytics_meta::objects(buf, pts, w, h);
        let frame = state
            .analytics
            .frame(&analytics_meta::tracked(&results, &ids));
        analytics_meta::attach(buf, &frame.to_json(), &state.geometry);
        self.post(pts, &frame);
        if let Err(e) = state
            .out
            .append(&analytics::frame_json(&results, &ids, &frame))
        {
            return Err(crate::gst::element::fail(
                self.obj().upcast_ref(),
                "cannot write the results",
                e,
            ));
        }
        gst::log!(
            CAT,
            imp = self,
            "{} objects, {} events",
            results.objects.len(),
            frame.events.len()
        );
        self.meter.frame_done(
            *CAT,
            self.obj().upcast_ref(),
            buf.pts(),
            &TransferStats::default(),
            began,
        );
        Ok(gst::FlowSuccess::Ok)
    }
}
