//! Sending each frame's results away without holding up the video, and
//! without GStreamer: a bounded queue the streaming thread pushes to (the
//! oldest message makes room when it is full, and is counted dropped), and
//! a thread that delivers from it to an MQTT broker (reconnecting when the
//! broker goes away) or appends to a file. `wgnnpublish` is its element.

mod mqtt;
mod queue;
mod target;
mod tls;

pub use queue::Counts;
pub use target::{
    check_topic, parse_address, MqttTarget, Target, ADDRESS_ACCEPTED, TOPIC_ACCEPTED,
};
pub use tls::TlsFiles;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};
use queue::Shared;

/// What delivers: a broker's client, or a file's thread.
enum Sink {
    Mqtt(mqtt::Mqtt),
    File(JoinHandle<()>),
}

/// A running publisher.
pub struct Publisher {
    shared: Arc<Shared>,
    sink: Option<Sink>,
}

impl Publisher {
    /// Starts publishing to `target` through a queue of `max_queue`
    /// messages. A broker must answer within `connect_timeout`; the error
    /// names its address and why it could not be reached.
    pub fn start(
        target: &Target,
        max_queue: usize,
        connect_timeout: Duration,
    ) -> Result<Publisher> {
        let shared = Arc::new(Shared::new(max_queue));
        let sink = match target {
            Target::Mqtt(t) => {
                // The files first: a bad one is named before any connection.
                let tls = t
                    .tls
                    .as_ref()
                    .map(TlsFiles::client_config)
                    .transpose()
                    .map_err(Error::invalid)?;
                Sink::Mqtt(
                    mqtt::Mqtt::connect(t, tls, shared.clone(), connect_timeout).map_err(
                        |cause| {
                            Error::invalid(format!(
                                "cannot connect to the MQTT broker at {}: {cause}",
                                t.address()
                            ))
                        },
                    )?,
                )
            }
            Target::File(path) => Sink::File(file_thread(path, shared.clone())?),
        };
        Ok(Publisher {
            shared,
            sink: Some(sink),
        })
    }

    /// Queues one message; never waits.
    pub fn send(&self, message: Vec<u8>) {
        self.shared.push(message);
    }

    pub fn counts(&self) -> Counts {
        self.shared.counts()
    }

    /// Whether the broker (or file) is taking messages now.
    pub fn connected(&self) -> bool {
        self.shared.connected.load(Ordering::Acquire)
    }

    /// Waits up to `timeout` for everything queued to be delivered; true
    /// when it was.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.shared.drain(timeout)
    }

    /// Stops: what is still queued is counted dropped. Returns the final
    /// counts.
    pub fn close(mut self) -> Counts {
        self.shutdown();
        self.shared.counts()
    }

    fn shutdown(&mut self) {
        self.shared.stop();
        match self.sink.take() {
            Some(Sink::Mqtt(m)) => m.close(),
            Some(Sink::File(t)) => {
                let _ = t.join();
            }
            None => {}
        }
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Opens `path` for appending (created if missing) and starts the thread
/// that appends each message as one line. A write error drops the message
/// and counts it.
fn file_thread(path: &Path, shared: Arc<Shared>) -> Result<JoinHandle<()>> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::File {
            path: path.to_path_buf(),
            message: format!("cannot open for appending: {e}"),
        })?;
    shared.set_connected(true);
    std::thread::Builder::new()
        .name("wgnn-publish-file".into())
        .spawn(move || {
            while let Some(mut message) = shared.next() {
                message.push(b'\n');
                // One write per line, so that a reader never sees half of one.
                if file.write_all(&message).and_then(|_| file.flush()).is_ok() {
                    shared.delivered();
                } else {
                    shared.dropped.fetch_add(1, Ordering::Relaxed);
                    shared.in_flight.fetch_sub(1, Ordering::Relaxed);
                }
            }
        })
        .map_err(|e| Error::invalid(format!("cannot start the publishing thread: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_method_appends_one_line_per_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        std::fs::write(&path, "kept\n").unwrap();
        let p = Publisher::start(&Target::File(path.clone()), 16, Duration::from_secs(1)).unwrap();
        for i in 0..5 {
            p.send(format!("{{\"n\":{i}}}").into_bytes());
        }
        assert!(p.flush(Duration::from_secs(5)));
        let counts = p.close();
        assert_eq!(
            counts,
            Counts {
                sent: 5,
                queued: 0,
                dropped: 0
            }
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 6, "{text}");
        assert!(text.starts_with("kept\n"));
    }

    #[test]
    fn an_unreachable_broker_is_named_at_start() {
        // A port nothing listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = Target::Mqtt(MqttTarget {
            host: "127.0.0.1".into(),
            port,
            topic: "t".into(),
            qos: 1,
            client_id: "wgnn-test".into(),
            credentials: None,
            tls: None,
        });
        let err = Publisher::start(&target, 4, Duration::from_secs(2))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            err,
            format!("cannot connect to the MQTT broker at 127.0.0.1:{port}: connection refused")
        );
    }
}
