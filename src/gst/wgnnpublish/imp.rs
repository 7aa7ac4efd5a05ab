use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use super::Method;
use crate::gpu::TransferStats;
use crate::gst::frame_meter::FrameMeter;
use crate::gst::property::{self, Refusals};
use crate::gst::stats::Stats;
use crate::gst::{analytics_meta, pass_through};
use crate::tasks::analytics::frame_object;
use crate::tasks::publish::{self, Counts, MqttTarget, Publisher, Target, TlsFiles};

crate::gst::element_category!("wgnnpublish", "wgnn results publishing element");

/// The name of the element message with the counts, posted at EOS.
pub const MESSAGE: &str = "wgnn-publish";

const DEFAULT_METHOD: Method = Method::Mqtt;
const DEFAULT_ADDRESS: &str = "localhost:1883";
const DEFAULT_TOPIC: &str = "wgnn/results";
const DEFAULT_QOS: u32 = 1;
const DEFAULT_MAX_QUEUE: u32 = 1000;
const DEFAULT_CONNECT_TIMEOUT: u32 = 5;
const DEFAULT_TLS: bool = false;
/// What `password` reads back as once set: never the password itself.
const PASSWORD_SET: &str = "***";
const CLIENT_ID_ACCEPTED: &str =
    "1 to 65535 bytes of text (empty: wgnn-<process id>-<element name>)";

#[derive(Clone, Debug)]
struct Settings {
    method: Method,
    address: (String, u16),
    topic: String,
    qos: u32,
    client_id: Option<String>,
    username: Option<String>,
    password: Option<String>,
    tls: bool,
    ca_file: Option<PathBuf>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    file_location: Option<PathBuf>,
    max_queue: u32,
    connect_timeout: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            method: DEFAULT_METHOD,
            address: publish::parse_address(DEFAULT_ADDRESS).expect("the default address parses"),
            topic: DEFAULT_TOPIC.into(),
            qos: DEFAULT_QOS,
            client_id: None,
            username: None,
            password: None,
            tls: DEFAULT_TLS,
            ca_file: None,
            cert_file: None,
            key_file: None,
            file_location: None,
            max_queue: DEFAULT_MAX_QUEUE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

struct State {
    publisher: Publisher,
    frame: u64,
}

#[derive(Default)]
pub struct WgnnPublish {
    settings: Mutex<Settings>,
    meter: FrameMeter,
    size: pass_through::FrameSize,
    refusals: Refusals,
    state: Mutex<Option<State>>,
    /// The counts of the last publisher, once it closed.
    last: Mutex<Counts>,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnPublish {
    const NAME: &'static str = "GstWgnnPublish";
    type Type = super::WgnnPublish;
    type ParentType = gst_base::BaseTransform;
}

fn client_id(given: Option<&str>) -> Result<Option<String>, String> {
    match given.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) if s.len() > usize::from(u16::MAX) => Err("it is too long".into()),
        Some(s) if s.contains('\0') => Err("it holds a NUL character".into()),
        Some(s) => Ok(Some(s.to_string())),
    }
}

fn string(given: Option<&str>) -> Result<Option<String>, String> {
    Ok(given.filter(|s| !s.is_empty()).map(str::to_string))
}

fn path_value(path: &Option<PathBuf>) -> glib::Value {
    path.as_ref().map(|p| p.display().to_string()).to_value()
}

fn counter(name: &str, blurb: &str) -> glib::ParamSpec {
    glib::ParamSpecUInt64::builder(name)
        .nick(name)
        .blurb(blurb)
        .read_only()
        .build()
}

impl ObjectImpl for WgnnPublish {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props =
                vec![
                glib::ParamSpecEnum::builder_with_default("method", DEFAULT_METHOD)
                    .nick("Method")
                    .blurb("Where the messages go")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("address")
                    .nick("Address")
                    .blurb("The MQTT broker, host:port")
                    .default_value(Some(DEFAULT_ADDRESS))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("topic")
                    .nick("Topic")
                    .blurb("The MQTT topic to publish to (no wildcards)")
                    .default_value(Some(DEFAULT_TOPIC))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("qos")
                    .nick("QoS")
                    .blurb(
                        "MQTT quality of service: 0 (at most once: sent when written to the \
                         connection) or 1 (at least once: sent when the broker acknowledged it)",
                    )
                    .maximum(1)
                    .default_value(DEFAULT_QOS)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("client-id")
                    .nick("Client id")
                    .blurb("The MQTT client id (unset: wgnn-<process id>-<element name>)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("username")
                    .nick("User name")
                    .blurb("The MQTT user name, where the broker wants one")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("password")
                    .nick("Password")
                    .blurb(
                        "The MQTT password, with username (reads back as *** once set; never \
                         logged)",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("tls")
                    .nick("TLS")
                    .blurb(
                        "Connect over TLS, the broker's certificate checked against ca-file \
                         (or the system's CA certificates without it)",
                    )
                    .default_value(DEFAULT_TLS)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("ca-file")
                    .nick("CA file")
                    .blurb("With tls: PEM CA certificates the broker's certificate must chain to")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("cert-file")
                    .nick("Certificate file")
                    .blurb("With tls: a PEM client certificate, for brokers that ask for one")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("key-file")
                    .nick("Key file")
                    .blurb("With cert-file: the client certificate's PEM private key")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("file-location")
                    .nick("File location")
                    .blurb(
                        "With method=file: the file to append one JSON line per frame to \
                         (created if missing; what it holds is kept)",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("max-queue")
                    .nick("Max queue")
                    .blurb(
                        "Messages that may wait for the broker; when full, the oldest is \
                         dropped (and counted in messages-dropped)",
                    )
                    .minimum(1)
                    .maximum(1_000_000)
                    .default_value(DEFAULT_MAX_QUEUE)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("connect-timeout")
                    .nick("Connect timeout")
                    .blurb(
                        "Seconds to wait for the broker at start (no answer: the start fails), \
                         and for the queue to empty at EOS",
                    )
                    .minimum(1)
                    .maximum(600)
                    .default_value(DEFAULT_CONNECT_TIMEOUT)
                    .mutable_ready()
                    .build(),
                counter("messages-sent", "Messages delivered since the element started"),
                counter(
                    "messages-queued",
                    "Messages waiting now: queued, or sent and not yet acknowledged",
                ),
                counter(
                    "messages-dropped",
                    "Messages lost: pushed out of a full queue, or left when the element \
                     stopped",
                ),
            ];
            props.extend(Stats::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let obj = self.obj();
        let mut settings = self.settings.lock().unwrap();
        let name = pspec.name();
        match name {
            "method" => settings.method = value.get().unwrap(),
            "qos" => settings.qos = value.get().unwrap(),
            "max-queue" => settings.max_queue = value.get().unwrap(),
            "connect-timeout" => settings.connect_timeout = value.get().unwrap(),
            "tls" => settings.tls = value.get().unwrap(),
            "ca-file" | "cert-file" | "key-file" => {
                let Some(path) = self.refusals.parse(
                    &*obj,
                    pspec,
                    value,
                    property::INPUT_FILE,
                    property::input_file,
                ) else {
                    return;
                };
                *match name {
                    "ca-file" => &mut settings.ca_file,
                    "cert-file" => &mut settings.cert_file,
                    _ => &mut settings.key_file,
                } = path;
            }
            "address" => {
                let parse = |g: Option<&str>| publish::parse_address(g.unwrap_or(""));
                match self
                    .refusals
                    .parse(&*obj, pspec, value, publish::ADDRESS_ACCEPTED, parse)
                {
                    Some(a) => settings.address = a,
                    None => return,
                }
            }
            "topic" => {
                let parse = |g: Option<&str>| publish::check_topic(g.unwrap_or(""));
                match self
                    .refusals
                    .parse(&*obj, pspec, value, publish::TOPIC_ACCEPTED, parse)
                {
                    Some(t) => settings.topic = t,
                    None => return,
                }
            }
            "client-id" => {
                match self
                    .refusals
                    .parse(&*obj, pspec, value, CLIENT_ID_ACCEPTED, client_id)
                {
                    Some(c) => settings.client_id = c,
                    None => return,
                }
            }
            "username" => settings.username = string(value.get().unwrap()).unwrap_or_default(),
            "password" => settings.password = string(value.get().unwrap()).unwrap_or_default(),
            "file-location" => {
                match self.refusals.parse(
                    &*obj,
                    pspec,
                    value,
                    property::OUTPUT_FILE,
                    property::output_file,
                ) {
                    Some(p) => settings.file_location = p,
                    None => return,
                }
            }
            _ => unreachable!("no other writable properties are registered"),
        }
        if name != "password" {
            gst::debug!(CAT, imp = self, "{name} set to {value:?}");
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.meter.property(pspec.name()) {
            return v;
        }
        let counts = || {
            self.state
                .lock()
                .unwrap()
                .as_ref()
                .map(|s| s.publisher.counts())
                .unwrap_or(*self.last.lock().unwrap())
        };
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "method" => settings.method.to_value(),
            "address" => {
                MqttTarget::format_address(&settings.address.0, settings.address.1).to_value()
            }
            "topic" => settings.topic.to_value(),
            "qos" => settings.qos.to_value(),
            "client-id" => settings.client_id.to_value(),
            "username" => settings.username.to_value(),
            "password" => settings.password.as_ref().map(|_| PASSWORD_SET).to_value(),
            "tls" => settings.tls.to_value(),
            "ca-file" => path_value(&settings.ca_file),
            "cert-file" => path_value(&settings.cert_file),
            "key-file" => path_value(&settings.key_file),
            "file-location" => path_value(&settings.file_location),
            "max-queue" => settings.max_queue.to_value(),
            "connect-timeout" => settings.connect_timeout.to_value(),
            "messages-sent" => counts().sent.to_value(),
            "messages-queued" => counts().queued.to_value(),
            "messages-dropped" => counts().dropped.to_value(),
            _ => unreachable!("no other readable properties are registered"),
        }
    }
}

impl GstObjectImpl for WgnnPublish {}

impl ElementImpl for WgnnPublish {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn publish",
                "Filter/Metadata/Video",
                "Sends each frame's results (regions of interest, ids, analytics) as one JSON \
                 message to an MQTT broker or a file, never holding up the frames, which pass \
                 through untouched",
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

impl WgnnPublish {
    /// The target the settings name, or the settings error that stops the
    /// start.
    fn target(&self, s: &Settings) -> Result<Target, gst::ErrorMessage> {
        Ok(match s.method {
            Method::File => Target::File(s.file_location.clone().ok_or_else(|| {
                gst::error_msg!(
                    gst::LibraryError::Settings,
                    (
                        "method=file needs file-location: set it to {}",
                        property::OUTPUT_FILE
                    )
                )
            })?),
            Method::Mqtt
                if !s.tls
                    && [&s.ca_file, &s.cert_file, &s.key_file]
                        .iter()
                        .any(|f| f.is_some()) =>
            {
                return Err(gst::error_msg!(
                    gst::LibraryError::Settings,
                    ("ca-file, cert-file and key-file are for TLS: set tls=true, or unset them")
                ));
            }
            Method::Mqtt => Target::Mqtt(MqttTarget {
                host: s.address.0.clone(),
                port: s.address.1,
                topic: s.topic.clone(),
                qos: s.qos as u8,
                client_id: s.client_id.clone().unwrap_or_else(|| {
                    format!("wgnn-{}-{}", std::process::id(), self.obj().name())
                }),
                credentials: s
                    .username
                    .clone()
                    .map(|u| (u, s.password.clone().unwrap_or_default())),
                tls: s.tls.then(|| TlsFiles {
                    ca: s.ca_file.clone(),
                    cert: s.cert_file.clone(),
                    key: s.key_file.clone(),
                }),
            }),
        })
    }

    /// Waits for the queue to empty (up to `connect-timeout`) and posts
    /// the counts.
    fn drain_and_report(&self) {
        let timeout = Duration::from_secs(u64::from(self.settings.lock().unwrap().connect_timeout));
        let counts = {
            let state = self.state.lock().unwrap();
            let Some(state) = state.as_ref() else { return };
            if !state.publisher.flush(timeout) {
                gst::warning!(CAT, imp = self, "messages still queued after {timeout:?}");
            }
            state.publisher.counts()
        };
        self.post_counts(&counts);
    }

    fn post_counts(&self, c: &Counts) {
        let obj = self.obj();
        let s = gst::Structure::builder(MESSAGE)
            .field("sent", c.sent)
            .field("queued", c.queued)
            .field("dropped", c.dropped)
            .build();
        pass_through::post(obj.upcast_ref(), s);
    }
}

impl BaseTransformImpl for WgnnPublish {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = true;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refusals.check()?;
        self.meter.reset();
        let settings = self.settings.lock().unwrap().clone();
        let target = self.target(&settings)?;
        let timeout = Duration::from_secs(u64::from(settings.connect_timeout));
        let publisher = Publisher::start(&target, settings.max_queue as usize, timeout)
            .map_err(|e| gst::error_msg!(gst::ResourceError::OpenWrite, ("{e}")))?;
        *self.last.lock().unwrap() = Counts::default();
        *self.state.lock().unwrap() = Some(State {
            publisher,
            frame: 0,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(state) = self.state.lock().unwrap().take() {
            let counts = state.publisher.close();
            gst::info!(CAT, imp = self, "closed: {counts:?}");
            *self.last.lock().unwrap() = counts;
        }
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        self.size.set(*CAT, incaps)?;
        self.parent_set_caps(incaps, outcaps)
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        if let gst::EventView::Eos(_) = event.view() {
            self.drain_and_report();
        }
        self.parent_sink_event(event)
    }

    fn transform_ip_passthrough(
        &self,
        buf: &gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let began = Instant::now();
        let mut state = self.state.lock().unwrap();
        let state = state.as_mut().ok_or(gst::FlowError::NotNegotiated)?;
        let (w, h) = self.size.get()?;
        let pts = buf.pts().map(|t| t.nseconds());
        let (results, ids) = analytics_meta::objects(buf, pts, w, h);
        let mut message = frame_object(&results, &ids);
        if let Some(members) = analytics_meta::read(buf) {
            message.extend(members);
        }
        message.insert("frame".into(), state.frame.into());
        state.frame += 1;
        state
            .publisher
            .send(serde_json::Value::Object(message).to_string().into_bytes());
        let c = state.publisher.counts();
        gst::log!(
            CAT,
            imp = self,
            "{} objects; sent {}, queued {}, dropped {}",
            results.objects.len(),
            c.sent,
            c.queued,
            c.dropped
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
