//! Errors in a user's words: a bus error's message without GStreamer's
//! debug string (source file, function, element path: logged at DEBUG), and
//! a model that cannot be loaded named once.

use std::path::Path;

use gst::prelude::*;

use crate::error::Error;

/// The message of a bus error, for one line on stderr. The debug string
/// goes to `log::debug!`.
pub fn bus_error_text(e: &gst::message::Error) -> String {
    let src = e
        .src()
        .map(|s| s.path_string().to_string())
        .unwrap_or_default();
    log::debug!(
        "bus error from {src}: {} ({})",
        e.error(),
        e.debug().unwrap_or_default()
    );
    e.error().message().trim_end_matches('.').to_string()
}

/// "cannot load model PATH: CAUSE", with the path said once even where the
/// cause names it too.
pub fn model_failure(path: &Path, error: &Error) -> String {
    let cause = match error {
        Error::Model {
            location, message, ..
        } if location == "file" => message.clone(),
        Error::Model {
            location, message, ..
        } => format!("{location}: {message}"),
        other => other.to_string(),
    };
    let shown = path.display().to_string();
    let cause = cause
        .strip_prefix(&format!("{shown}: "))
        .unwrap_or(&cause)
        .to_string();
    format!("cannot load model {shown}: {cause}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_model_is_named_once() {
        let path = Path::new("/no/such/model.tflite");
        let e = crate::models::load(path).unwrap_err();
        let line = model_failure(path, &e);
        assert_eq!(line.matches("/no/such/model.tflite").count(), 1, "{line}");
        assert!(
            line.starts_with("cannot load model /no/such/model.tflite: "),
            "{line}"
        );
        assert!(!line.contains("file:"), "{line}");
    }

    #[test]
    fn a_cause_that_repeats_the_path_is_trimmed() {
        let path = Path::new("m.json");
        let e = Error::Invalid("m.json: not a super-resolution model".into());
        assert_eq!(
            model_failure(path, &e),
            "cannot load model m.json: not a super-resolution model"
        );
    }
}
