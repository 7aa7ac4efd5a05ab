//! MQTT through `rumqttc`: a sending thread that hands queued messages to
//! the client while the connection is up, and a connection thread that
//! drives it, counts deliveries and reconnects.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rumqttc::{
    Client, ConnectReturnCode, ConnectionError, Event, MqttOptions, Outgoing, Packet, QoS,
    TlsConfiguration, Transport,
};
use rustls::ClientConfig;

use super::queue::Shared;
use super::target::MqttTarget;

/// The pause between attempts while the broker cannot be reached.
const RECONNECT_PAUSE: Duration = Duration::from_millis(250);

/// Messages the client holds between the sending thread and the
/// connection: small, so that what waits is counted in our queue.
const CLIENT_CAPACITY: usize = 8;

/// The running client and its threads.
pub(super) struct Mqtt {
    client: Client,
    threads: Vec<JoinHandle<()>>,
}

/// Why a connection attempt failed, in one line.
fn cause(e: &ConnectionError) -> String {
    if let Some(cause) = super::tls::handshake_cause(e) {
        return cause;
    }
    match e {
        ConnectionError::Io(e) => match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
            std::io::ErrorKind::TimedOut => "timed out".into(),
            _ => {
                let s = e.to_string();
                s.split(" (os error").next().unwrap_or(&s).to_string()
            }
        },
        ConnectionError::ConnectionRefused(code) => format!(
            "the broker refused the connection: {}",
            match code {
                ConnectReturnCode::BadUserNamePassword => "bad user name or password",
                ConnectReturnCode::NotAuthorized => "not authorized (check username and password)",
                ConnectReturnCode::BadClientId => "client id refused",
                ConnectReturnCode::ServiceUnavailable => "service unavailable",
                ConnectReturnCode::RefusedProtocolVersion => "protocol version refused",
                ConnectReturnCode::Success => "success",
            }
        ),
        ConnectionError::NetworkTimeout => "no answer (network timeout)".into(),
        // rumqttc's text repeats "TLS: I/O:"; what went wrong is the last
        // source's.
        ConnectionError::Tls(e) => {
            let mut last: &dyn std::error::Error = e;
            while let Some(next) = last.source() {
                last = next;
            }
            format!("TLS: {last}")
        }
        other => other.to_string(),
    }
}

impl Mqtt {
    /// Connects to `target` (over TLS with `tls`), waiting up to `timeout`
    /// for the broker's answer: a broker that cannot be reached at start is
    /// an error naming its address. Later losses are reconnected in the
    /// background.
    pub fn connect(
        target: &MqttTarget,
        tls: Option<ClientConfig>,
        shared: Arc<Shared>,
        timeout: Duration,
    ) -> Result<Mqtt, String> {
        let mut options = MqttOptions::new(&target.client_id, &target.host, target.port);
        options.set_keep_alive(Duration::from_secs(5));
        options.set_clean_session(true);
        if let Some((user, password)) = &target.credentials {
            options.set_credentials(user, password);
        }
        if let Some(config) = tls {
            options.set_transport(Transport::Tls(TlsConfiguration::Rustls(Arc::new(config))));
        }
        let qos = if target.qos == 0 {
            QoS::AtMostOnce
        } else {
            QoS::AtLeastOnce
        };
        let (client, mut connection) = Client::new(options, CLIENT_CAPACITY);
        let (first_tx, first_rx) = mpsc::channel::<Result<(), String>>();
        let conn_shared = shared.clone();
        let conn = std::thread::Builder::new()
            .name("wgnn-mqtt-conn".into())
            .spawn(move || {
                let shared = conn_shared;
                let mut first = Some(first_tx);
                loop {
                    if shared.stop.load(Ordering::Acquire) {
                        // Let a DISCONNECT go out, briefly, where connected.
                        let until = Instant::now() + Duration::from_millis(200);
                        while first.is_none() && Instant::now() < until {
                            if connection.recv_timeout(Duration::from_millis(50)).is_err() {
                                break;
                            }
                        }
                        return;
                    }
                    match connection.recv_timeout(Duration::from_millis(100)) {
                        Ok(Ok(Event::Incoming(Packet::ConnAck(_)))) => {
                            shared.set_connected(true);
                            if let Some(tx) = first.take() {
                                let _ = tx.send(Ok(()));
                            }
                        }
                        Ok(Ok(Event::Incoming(Packet::PubAck(_)))) if qos == QoS::AtLeastOnce => {
                            shared.delivered()
                        }
                        Ok(Ok(Event::Outgoing(Outgoing::Publish(_)))) if qos == QoS::AtMostOnce => {
                            shared.delivered()
                        }
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => {
                            shared.set_connected(false);
                            if let Some(tx) = first.take() {
                                let _ = tx.send(Err(cause(&e)));
                                return;
                            }
                            std::thread::sleep(RECONNECT_PAUSE);
                        }
                        Err(rumqttc::RecvTimeoutError::Timeout) => {}
                        Err(rumqttc::RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .map_err(|e| format!("cannot start the MQTT connection thread: {e}"))?;
        let answer = first_rx.recv_timeout(timeout);
        let result = match answer {
            Ok(Ok(())) => Ok(()),
            Ok(Err(cause)) => Err(cause),
            Err(_) => Err(format!("no answer in {} s", timeout.as_secs_f64())),
        };
        if let Err(cause) = result {
            shared.stop();
            drop(client);
            let _ = conn.join();
            return Err(cause);
        }
        let sender_client = client.clone();
        let topic = target.topic.clone();
        let send_shared = shared.clone();
        let sender = std::thread::Builder::new()
            .name("wgnn-mqtt-send".into())
            .spawn(move || {
                while let Some(message) = send_shared.next() {
                    if sender_client.publish(&topic, qos, false, message).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start the MQTT sending thread: {e}"))?;
        Ok(Mqtt {
            client,
            threads: vec![conn, sender],
        })
    }

    /// Disconnects and joins the threads (the queue is stopped already).
    pub fn close(self) {
        let _ = self.client.try_disconnect();
        drop(self.client);
        for t in self.threads {
            let _ = t.join();
        }
    }
}
