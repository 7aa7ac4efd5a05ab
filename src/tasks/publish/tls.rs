//! TLS to an MQTT broker (rustls with the ring provider: no OpenSSL): the
//! broker's certificate checked against the CA certificates of a PEM file,
//! or the system's where none is given, and an optional client certificate.
//! The files are read and checked when the publisher starts, so that a bad
//! one is named then, before any connection is tried.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};

/// The files TLS takes, as the user named them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TlsFiles {
    /// PEM CA certificates the broker's must chain to (None: the system's).
    pub ca: Option<PathBuf>,
    /// A PEM client certificate (chain) and its PEM private key.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl TlsFiles {
    /// The client configuration, or one line naming the file at fault.
    pub fn client_config(&self) -> Result<ClientConfig, String> {
        let roots = match &self.ca {
            Some(path) => file_roots(path)?,
            None => system_roots()?,
        };
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("TLS: {e}"))?
                .with_root_certificates(roots);
        match (&self.cert, &self.key) {
            (None, None) => Ok(builder.with_no_client_auth()),
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(certificates(cert, "cert-file")?, private_key(key)?)
                .map_err(|e| {
                    format!(
                        "cert-file {} and key-file {} do not go together: {e}",
                        cert.display(),
                        key.display()
                    )
                }),
            (Some(_), None) => {
                Err("cert-file needs key-file (the client certificate's private key)".into())
            }
            (None, Some(_)) => Err("key-file needs cert-file (the client certificate)".into()),
        }
    }
}

/// The file's bytes, or the line saying why it cannot be read.
fn read(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    crate::files::read_regular(path)
        .map_err(|e| format!("{what} {}: cannot read it: {e}", path.display()))
}

/// Every certificate of a PEM file; at least one.
fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read(path, what)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what} {}: {}", path.display(), pem_cause(&e)))?;
    if certs.is_empty() {
        return Err(format!(
            "{what} {}: no certificate in it (a PEM file of '-----BEGIN CERTIFICATE-----' \
             blocks)",
            path.display()
        ));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = read(path, "key-file")?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        let cause = match e {
            pem::Error::NoItemsFound => {
                "no PEM private key in it (a '-----BEGIN ... PRIVATE KEY-----' block)".into()
            }
            e => pem_cause(&e),
        };
        format!("key-file {}: {cause}", path.display())
    })
}

/// What is wrong with a PEM file, in words (the crate's own text shows
/// some causes as lists of bytes).
fn pem_cause(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => "a PEM block has no END line".into(),
        pem::Error::IllegalSectionStart { .. } => "a PEM BEGIN line is malformed".into(),
        pem::Error::Base64Decode(_) => "a PEM block is not valid base64".into(),
        pem::Error::NoItemsFound => "nothing of the kind in it".into(),
        other => other.to_string(),
    }
}

fn file_roots(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(path, "ca-file")? {
        roots
            .add(cert)
            .map_err(|e| format!("ca-file {}: not a CA certificate: {e}", path.display()))?;
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if roots.is_empty() {
        return Err(
            "tls: the system has no CA certificates to check the broker's against; set ca-file"
                .into(),
        );
    }
    Ok(roots)
}

/// rustls' error in `e` or its sources (an I/O error carries it inside).
fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut source = Some(e);
    while let Some(e) = source {
        let inner = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map_or(e, |inner| inner as &(dyn std::error::Error + 'static));
        if let Some(found) = inner.downcast_ref::<rustls::Error>() {
            return Some(found);
        }
        source = e.source();
    }
    None
}

/// What went wrong in the TLS handshake, where `e` (from the connection)
/// holds rustls' error; None for other errors.
pub fn handshake_cause(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let why = match rustls_error(e)? {
        rustls::Error::InvalidCertificate(c) => format!(
            "the broker's certificate was refused: {}",
            match c {
                CertificateError::UnknownIssuer => {
                    "it is not signed by a CA of ca-file (or of the system's, without ca-file)"
                        .into()
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    "it is not for the host name of address".into()
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "it has expired".into()
                }
                other => other.to_string(),
            }
        ),
        rustls::Error::AlertReceived(alert) => format!(
            "the broker ended the handshake: {}",
            match alert {
                AlertDescription::CertificateRequired | AlertDescription::HandshakeFailure => {
                    "it wants a client certificate (cert-file and key-file) or other TLS \
                     settings"
                        .to_string()
                }
                AlertDescription::BadCertificate
                | AlertDescription::UnknownCA
                | AlertDescription::CertificateUnknown => {
                    "it did not accept the client certificate".into()
                }
                // The numbers are RFC 8446's alert descriptions.
                other => format!("TLS alert {}", u8::from(*other)),
            }
        ),
        other => other.to_string(),
    };
    Some(format!("TLS: {why}"))
}
