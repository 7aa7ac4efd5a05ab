//! wgnnpublish over TLS with a user name and password (issue 42), against
//! a real Mosquitto the test starts: a TLS listener that wants a password
//! (its file made by Debian's `mosquitto_passwd`), one that wants a client
//! certificate, and a plain one for the test's subscriber. The
//! certificates are made here with rcgen: a CA, the broker's certificate
//! for localhost and a client's signed by it, and a second CA that signed
//! nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use gst::prelude::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use super::publish::{counts_at_eos, free_port, subscribe, Broker};
use crate::common;
use crate::common::harness::{init, launch, start_error};

const USER: &str = "camera";
const PASSWORD: &str = "door-4-secret";
const FRAMES: u64 = 4;

/// A CA's certificate (PEM) and what signs with it.
fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// Writes `text` to `dir/name`, readable by the broker (which drops root
/// for the user `mosquitto`).
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// The broker with its TLS ports (password; client certificate), the two
/// CA files (the one that signed the broker's certificate and one that did
/// not) and a client certificate and key.
struct TlsBroker {
    broker: Broker,
    tls_port: u16,
    client_port: u16,
    ca: PathBuf,
    other_ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn tls_broker(name: &str) -> TlsBroker {
    let dir = common::scratch(name);
    let (ca_pem, issuer) = ca("wgnn test CA");
    let (other_pem, _) = ca("wgnn other CA");
    // A certificate for `name` signed by the CA, and its key.
    let signed = |name: &str, file: &str| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (
            write(&dir, &format!("{file}.pem"), &cert.pem()),
            write(&dir, &format!("{file}.key"), &key.serialize_pem()),
        )
    };
    let ca = write(&dir, "ca.pem", &ca_pem);
    let other_ca = write(&dir, "other-ca.pem", &other_pem);
    let (cert, key) = signed("localhost", "broker");
    let (client_cert, client_key) = signed("wgnn-camera", "client");
    let passwords = dir.join("passwords");
    let made = Command::new("mosquitto_passwd")
        .args(["-b", "-c"])
        .arg(&passwords)
        .args([USER, PASSWORD])
        .status()
        .expect("mosquitto_passwd (Debian's mosquitto package) must be installed");
    assert!(made.success());
    write(
        &dir,
        "passwords",
        &std::fs::read_to_string(&passwords).unwrap(),
    );
    let files = format!(
        "cafile {}\ncertfile {}\nkeyfile {}\n",
        ca.display(),
        cert.display(),
        key.display()
    );
    let (tls_port, client_port) = (free_port(), free_port());
    let broker = Broker::with_listeners(
        &dir,
        format!(
            "listener {tls_port} 127.0.0.1\nallow_anonymous false\npassword_file {}\n{files}\
             listener {client_port} 127.0.0.1\nallow_anonymous true\n\
             require_certificate true\n{files}",
            passwords.display(),
        ),
    );
    for port in [tls_port, client_port] {
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "no TLS listener on {port}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    TlsBroker {
        broker,
        tls_port,
        client_port,
        ca,
        other_ca,
        client_cert,
        client_key,
    }
}

/// A pipeline of FRAMES small frames into wgnnpublish with `properties`.
fn pipeline(properties: &str) -> String {
    format!(
        "videotestsrc num-buffers={FRAMES} ! video/x-raw,width=32,height=32 ! \
         wgnnpublish name=p {properties} ! fakesink"
    )
}

/// What the subscriber has received.
type Received = std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>;

/// Publishes FRAMES frames with `properties` to `topic` and returns the
/// frame numbers of what `got` received since.
fn deliver(got: &Received, topic: &str, properties: &str) -> Vec<u64> {
    let before = got.lock().unwrap().len();
    let pipeline = launch(&pipeline(&format!("topic={topic} {properties}")));
    pipeline.set_state(gst::State::Playing).unwrap();
    assert_eq!(counts_at_eos(&pipeline), (FRAMES, 0, 0), "{properties}");
    pipeline.set_state(gst::State::Null).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while ((got.lock().unwrap().len() - before) as u64) < FRAMES && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let payloads = got.lock().unwrap()[before..].to_vec();
    payloads
        .iter()
        .map(|p| {
            let v: serde_json::Value = serde_json::from_slice(p).unwrap();
            v["frame"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn tls_with_a_password_or_a_client_certificate_delivers_every_frame() {
    init();
    let b = tls_broker("publish-tls");
    // One subscriber (a second with its client id would take its session).
    let (subscriber, got) = subscribe(b.broker.port, "wgnn/test/tls/#");
    let all: Vec<u64> = (0..FRAMES).collect();
    let with_password = format!(
        "address=localhost:{} tls=true ca-file={} username={USER} password={PASSWORD}",
        b.tls_port,
        b.ca.display()
    );
    assert_eq!(deliver(&got, "wgnn/test/tls/password", &with_password), all);
    let with_certificate = format!(
        "address=localhost:{} tls=true ca-file={} cert-file={} key-file={}",
        b.client_port,
        b.ca.display(),
        b.client_cert.display(),
        b.client_key.display()
    );
    assert_eq!(
        deliver(&got, "wgnn/test/tls/certificate", &with_certificate),
        all
    );
    let _ = subscriber.disconnect();
    // Set, the password reads back as a mask, never itself.
    let publish = gst::ElementFactory::make("wgnnpublish").build().unwrap();
    assert_eq!(publish.property::<Option<String>>("password"), None);
    publish.set_property("password", PASSWORD);
    assert_eq!(
        publish.property::<Option<String>>("password").unwrap(),
        "***"
    );
}

#[test]
fn a_wrong_password_an_unrelated_ca_or_no_client_certificate_is_refused_in_one_line() {
    init();
    let b = tls_broker("publish-tls-refused");
    let address = format!("localhost:{}", b.tls_port);
    let wrong_password = start_error(&pipeline(&format!(
        "address={address} tls=true ca-file={} username={USER} password=not-{PASSWORD} \
         connect-timeout=5",
        b.ca.display()
    )));
    let unrelated_ca = start_error(&pipeline(&format!(
        "address={address} tls=true ca-file={} username={USER} password={PASSWORD} \
         connect-timeout=5",
        b.other_ca.display()
    )));
    let client_address = format!("localhost:{}", b.client_port);
    let no_certificate = start_error(&pipeline(&format!(
        "address={client_address} tls=true ca-file={} connect-timeout=5",
        b.ca.display()
    )));
    for (error, at, says) in [
        (
            &wrong_password,
            &address,
            "the broker refused the connection: not authorized (check username and password)",
        ),
        (
            &unrelated_ca,
            &address,
            "TLS: the broker's certificate was refused: it is not signed by a CA of ca-file",
        ),
        (
            &no_certificate,
            &client_address,
            "TLS: the broker ended the handshake: it wants a client certificate (cert-file and \
             key-file)",
        ),
    ] {
        let line = error.split(" Some(").next().unwrap();
        assert!(
            line.starts_with(&format!(
                "cannot connect to the MQTT broker at {at}: {says}"
            )),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
        assert!(
            !error.contains(PASSWORD),
            "the password is never shown: {error}"
        );
    }
}

#[test]
fn bad_tls_files_are_refused_at_start() {
    init();
    let dir = common::scratch("publish-tls-files");
    let not_pem = write(&dir, "not.pem", "a CA certificate, honestly\n");
    let (ca_pem, _) = ca("wgnn test CA");
    let ca = write(&dir, "ca.pem", &ca_pem);
    // Nothing listens there: each start fails on its files first.
    let address = format!("127.0.0.1:{}", free_port());
    for (properties, says) in [
        (
            format!("tls=true ca-file={}", not_pem.display()),
            format!(
                "ca-file {}: no certificate in it (a PEM file of '-----BEGIN CERTIFICATE-----' \
                 blocks)",
                not_pem.display()
            ),
        ),
        (
            format!(
                "tls=true ca-file={} cert-file={}",
                ca.display(),
                ca.display()
            ),
            "cert-file needs key-file (the client certificate's private key)".to_string(),
        ),
        (
            format!(
                "tls=true ca-file={} cert-file={} key-file={}",
                ca.display(),
                ca.display(),
                not_pem.display()
            ),
            format!("key-file {}: no PEM private key in it", not_pem.display()),
        ),
        (
            format!("ca-file={}", ca.display()),
            "ca-file, cert-file and key-file are for TLS: set tls=true, or unset them".to_string(),
        ),
    ] {
        let error = start_error(&pipeline(&format!("address={address} {properties}")));
        assert!(error.starts_with(&says), "{properties}: {error}");
    }
}
