//! The library's one error type. Every fallible entry point returns it, so that
//! callers (elements, CLIs) can turn any failure into one line naming the cause.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable adapter: none at all, or none matching `WGPU_ADAPTER_NAME`/`WGPU_BACKEND`.
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),

    #[error("could not open a device on adapter '{adapter}': {reason}")]
    RequestDevice { adapter: String, reason: String },

    /// The device was lost (driver reset, destroyed) or reported an error no
    /// error scope captured. Later GPU calls on the same handle fail with this.
    #[error("GPU device failed: {0}")]
    DeviceFailed(String),

    /// The device was lost (a driver reset, or destroyed); every later call
    /// on it fails with this.
    #[error("the GPU device was lost: {0}")]
    DeviceLost(String),

    /// A texture or buffer larger than the device allows.
    #[error("too large for the GPU: {0}")]
    TooLarge(String),

    /// A wgpu validation or out-of-memory error captured by an error scope.
    #[error("GPU error in {what}: {message}")]
    Gpu { what: String, message: String },

    /// A CPU<->GPU transfer that cannot be done as asked (range, alignment, mapping).
    #[error("transfer failed: {0}")]
    Transfer(String),

    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },

    /// A model file that cannot be loaded or turned into a graph: `location`
    /// names the operator or layer (or the part of the file) at fault.
    #[error("{}: {location}: {message}", path.display())]
    Model {
        path: PathBuf,
        location: String,
        message: String,
    },

    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::Invalid(message.into())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
