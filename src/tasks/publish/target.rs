//! Where results go, as the user names it: a broker address and topic
//! checked before anything connects.

use std::path::PathBuf;

use super::tls::TlsFiles;

/// The accepted form of an address.
pub const ADDRESS_ACCEPTED: &str = "host:port, e.g. localhost:1883 or [::1]:1883";

/// The accepted form of a topic.
pub const TOPIC_ACCEPTED: &str =
    "an MQTT topic name without wildcards ('#', '+'), e.g. wgnn/results";

/// `host:port` split; the host may be a bracketed IPv6 address.
pub fn parse_address(s: &str) -> Result<(String, u16), String> {
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("'{s}' has no ':port'"))?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(format!("'{s}' has no host name"));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("the port of '{s}' is not a number from 1 to 65535"))?;
    Ok((host.to_string(), port))
}

/// A topic messages can be published to: MQTT refuses wildcards there.
pub fn check_topic(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("it is empty".into());
    }
    if s.contains(['#', '+']) {
        return Err("a topic to publish to cannot hold the wildcards '#' or '+'".into());
    }
    if s.contains('\0') {
        return Err("it holds a NUL character".into());
    }
    if s.len() > usize::from(u16::MAX) {
        return Err("it is longer than MQTT's 65535 bytes".into());
    }
    Ok(s.to_string())
}

/// An MQTT broker and how to publish there.
#[derive(Clone, Debug, PartialEq)]
pub struct MqttTarget {
    pub host: String,
    pub port: u16,
    pub topic: String,
    /// 0 (at most once) or 1 (at least once).
    pub qos: u8,
    pub client_id: String,
    /// User name and password, where the broker wants them.
    pub credentials: Option<(String, String)>,
    /// TLS, with the files it takes; None: plain TCP.
    pub tls: Option<TlsFiles>,
}

impl MqttTarget {
    /// `host:port` as the user wrote it, for messages.
    pub fn address(&self) -> String {
        MqttTarget::format_address(&self.host, self.port)
    }

    /// `host:port`, the host bracketed where it is an IPv6 address.
    pub fn format_address(host: &str, port: u16) -> String {
        if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    }
}

/// Where a publisher sends.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Mqtt(MqttTarget),
    /// A file each message is appended to as one line.
    File(PathBuf),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_topics() {
        assert_eq!(
            parse_address("localhost:1883").unwrap(),
            ("localhost".into(), 1883)
        );
        assert_eq!(parse_address("[::1]:8883").unwrap(), ("::1".into(), 8883));
        for bad in ["localhost", ":1883", "host:0", "host:99999", "host:x"] {
            assert!(parse_address(bad).is_err(), "{bad}");
        }
        assert!(check_topic("wgnn/results").is_ok());
        for bad in ["", "wgnn/#", "a/+/b", "a\0b"] {
            assert!(check_topic(bad).is_err(), "{bad:?}");
        }
        let t = MqttTarget {
            host: "::1".into(),
            port: 1,
            topic: "t".into(),
            qos: 0,
            client_id: "c".into(),
            credentials: None,
            tls: None,
        };
        assert_eq!(t.address(), "[::1]:1");
    }
}
