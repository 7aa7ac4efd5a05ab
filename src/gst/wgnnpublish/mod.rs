//! `wgnnpublish`: sends each frame's results as one JSON message, even
//! when nothing was found: the regions of interest (detections, classes,
//! tracker ids) and what `wgnnanalytics` left on the frame (line and zone
//! counts, events), in the schema of docs/RESULTS.md, with the frame's
//! number in the stream. `method=mqtt` publishes to a broker
//! (`address`, `topic`, `qos` 0 or 1, `client-id`, `username`/`password`),
//! over TLS with `tls=true`: the broker's certificate is checked against the
//! PEM CA certificates of `ca-file` (the system's without it), and
//! `cert-file`/`key-file` give a client certificate where the broker asks for
//! one ([`TlsFiles`](crate::tasks::publish::TlsFiles): rustls, no OpenSSL).
//! The password is never logged and reads back as `***` once set. A file
//! that cannot be read or holds no certificate (or key) fails the start,
//! naming it; so does a broker whose certificate does not check out.
//! `method=file` appends one line per message to `file-location`.
//!
//! ```text
//! gst-launch-1.0 filesrc location=in.mp4 ! decodebin ! wgnnupload ! \
//!     wgnndetect model=yolov8n.onnx ! wgnnanalytics config=door.json ! \
//!     wgnnpublish address=localhost:1883 topic=cameras/door ! fakesink
//! ... ! wgnnpublish address=broker.example:8883 topic=cameras/door tls=true \
//!     ca-file=/etc/ssl/broker-ca.pem username=camera password=... ! fakesink
//! ```
//!
//! It never holds up the video: messages wait in a queue of `max-queue`
//! (the oldest is dropped, and counted, when it is full) for a thread of
//! their own ([`Publisher`](crate::tasks::publish::Publisher)). A broker
//! that goes away is reconnected to, and what waited is sent then. A
//! broker that cannot be reached when the element starts fails the start,
//! naming its address. `messages-sent`, `messages-queued` and
//! `messages-dropped` count them; at EOS the element waits up to
//! `connect-timeout` for the queue to empty and posts the counts as a
//! `wgnn-publish` element message.
//!
//! Frames pass through untouched, in whatever memory they came in.

mod imp;

use gst::glib;

glib::wrapper! {
    pub struct WgnnPublish(ObjectSubclass<imp::WgnnPublish>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

/// Where the messages go.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnPublishMethod")]
pub enum Method {
    /// An MQTT broker (`address`, `topic`).
    #[default]
    #[enum_value(name = "MQTT broker at address, on topic", nick = "mqtt")]
    Mqtt = 0,
    /// A file, one line per message (`file-location`).
    #[enum_value(name = "File at file-location, one line per message", nick = "file")]
    File = 1,
}
