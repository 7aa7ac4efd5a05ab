//! Property values checked where they are set, the one way every wgnn
//! element does it.
//!
//! A GObject property setter cannot fail, and a value refused only at
//! DEBUG level is lost on the user (`background=#12345` used to become
//! green without a word). So a string property is parsed in `set_property`:
//! a bad value is refused with a GLib warning (printed without `GST_DEBUG`)
//! naming the element, the property, the value and the accepted form; the
//! element keeps its previous value and remembers the refusal, and `start`
//! fails with a bus error naming the property until it is set to a good
//! value. Numeric properties need none of this: their ParamSpec ranges make
//! GLib refuse out-of-range values itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gst::glib;
use gst::prelude::*;

/// The GLib log domain of the warnings.
pub const LOG_DOMAIN: &str = "wgnn";

/// One refused value.
#[derive(Clone, Debug)]
struct Refused {
    value: String,
    accepted: &'static str,
}

/// The refusals an element still has pending, by property name.
#[derive(Debug, Default)]
pub struct Refusals(Mutex<BTreeMap<String, Refused>>);

impl Refusals {
    /// `set_property`'s share for the string property `pspec` of `element`:
    /// `parse` turns the value (`None`: unset) into the setting, or says
    /// why it is wrong. A good value is returned (and clears an earlier
    /// refusal); a bad one is warned about and remembered, and `None` is
    /// returned: the caller keeps its current value.
    pub fn parse<T>(
        &self,
        element: &impl IsA<gst::Object>,
        pspec: &glib::ParamSpec,
        value: &glib::Value,
        accepted: &'static str,
        parse: impl FnOnce(Option<&str>) -> Result<T, String>,
    ) -> Option<T> {
        let given = value.get::<Option<String>>().ok().flatten();
        let name = pspec.name();
        match parse(given.as_deref()) {
            Ok(v) => {
                self.0.lock().unwrap().remove(name);
                Some(v)
            }
            Err(cause) => {
                let given = given.unwrap_or_default();
                let value = shorten(&given).into_owned();
                let cause = short_cause(&cause, &given);
                glib::g_warning!(
                    LOG_DOMAIN,
                    "{}: refused {name}=\"{value}\": {cause}; accepted: {accepted}. The element \
                     will not start until {name} is set to an accepted value",
                    label(element.upcast_ref())
                );
                self.0
                    .lock()
                    .unwrap()
                    .insert(name.to_string(), Refused { value, accepted });
                None
            }
        }
    }

    /// `start`'s share: a settings error naming the first property whose
    /// refused value was not replaced by a good one since.
    pub fn check(&self) -> Result<(), gst::ErrorMessage> {
        let refused = self.0.lock().unwrap();
        match refused.iter().next() {
            None => Ok(()),
            Some((name, r)) => Err(gst::error_msg!(
                gst::LibraryError::Settings,
                (
                    "property {name}: \"{}\" was refused; set it to {}",
                    r.value,
                    r.accepted
                )
            )),
        }
    }
}

/// Whether `pspec`, a property read only when `element` starts (only
/// `mutable_ready`), is refused because the element runs: in PAUSED or
/// PLAYING the running element would not see the new value, and reading it
/// back would lie. Warns naming the element and the property.
pub fn refused_while_running(element: &gst::Element, pspec: &glib::ParamSpec) -> bool {
    let flags = pspec.flags();
    let only_ready = flags.contains(gst::PARAM_FLAG_MUTABLE_READY)
        && !flags.intersects(gst::PARAM_FLAG_MUTABLE_PAUSED | gst::PARAM_FLAG_MUTABLE_PLAYING);
    let state = match element.current_state() {
        gst::State::Paused => "PAUSED",
        gst::State::Playing => "PLAYING",
        _ => return false,
    };
    if !only_ready {
        return false;
    }
    glib::g_warning!(
        LOG_DOMAIN,
        "{}: refused {} while {state}: it is read when the element starts; set it in the \
         READY or NULL state. The element keeps its current value",
        label(element.upcast_ref()),
        pspec.name()
    );
    true
}

/// The most characters of a user's value a message echoes.
pub const ECHO_CHARS: usize = 80;

/// `value` as a message echoes it: whole up to [`ECHO_CHARS`] characters,
/// else its start and its end (where a path names its file) around an
/// ellipsis, [`ECHO_CHARS`] in all; a 10 MB value must not become a 10 MB
/// warning.
pub fn shorten(value: &str) -> std::borrow::Cow<'_, str> {
    let n = value.chars().count();
    if n <= ECHO_CHARS {
        return value.into();
    }
    let tail = ECHO_CHARS / 2;
    let head = ECHO_CHARS - tail - 1;
    let mut out: String = value.chars().take(head).collect();
    out.push('…');
    out.extend(value.chars().skip(n - tail));
    out.into()
}

/// A parser's `cause` for refusing `value`, with the value (which causes
/// may quote) shortened, and cut itself where it is still long.
fn short_cause(cause: &str, value: &str) -> String {
    let cause = if value.chars().count() > ECHO_CHARS {
        cause.replace(value, &shorten(value))
    } else {
        cause.to_string()
    };
    match cause.char_indices().nth(3 * ECHO_CHARS) {
        Some((i, _)) => format!("{}…", &cause[..i]),
        None => cause,
    }
}

/// How a message names an element: its factory and, where the application
/// named it, its name ("wgnnsegment seg"); else the default name
/// ("wgnnsegment0").
fn label(object: &gst::Object) -> String {
    let name = object.name();
    let factory = object
        .downcast_ref::<gst::Element>()
        .and_then(|e| e.factory())
        .map(|f| f.name().to_string());
    match factory {
        Some(f) if !name.starts_with(f.as_str()) => format!("{f} {name}"),
        _ => name.to_string(),
    }
}

/// A parser of a path property (unset: `None`).
pub type PathParser = fn(Option<&str>) -> Result<Option<PathBuf>, String>;

/// The accepted form of a file the element reads.
pub const INPUT_FILE: &str = "the path of an existing file (empty: unset)";

/// A file the element reads: unset when empty, else a path that exists and
/// is no directory. (Whether its contents are good is for `start` to say,
/// which reads it.)
pub fn input_file(given: Option<&str>) -> Result<Option<PathBuf>, String> {
    let Some(s) = given.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(s);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => Err("it is a directory".into()),
        Ok(_) => Ok(Some(path)),
        Err(e) => Err(io_cause(&e)),
    }
}

/// The accepted form of a file the element writes.
pub const OUTPUT_FILE: &str =
    "the path of a file in an existing directory, not a directory itself (empty: unset)";

/// A file the element writes: unset when empty, else a path that is no
/// directory, in a directory that exists.
pub fn output_file(given: Option<&str>) -> Result<Option<PathBuf>, String> {
    let Some(s) = given.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(s);
    if path.is_dir() || s.ends_with('/') {
        return Err("it is a directory".into());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(Some(path)),
        Ok(_) => Err(format!("{} is not a directory", dir.display())),
        Err(e) => Err(format!("directory {}: {}", dir.display(), io_cause(&e))),
    }
}

/// The accepted form of `model-proc`.
pub const MODEL_PROC: &str =
    "the path of an existing model-proc JSON file (empty: <model stem>.json beside the model)";

/// The `model-proc` property: unset, or a file that exists and reads as a
/// model-proc. (`start` reads it again: the file may change meanwhile.)
pub fn model_proc_file(given: Option<&str>) -> Result<Option<PathBuf>, String> {
    let path = input_file(given)?;
    if let Some(p) = &path {
        crate::tasks::ModelProc::load(p).map_err(|e| cause(&e, p))?;
    }
    Ok(path)
}

/// The accepted form of `labels`.
pub const LABELS: &str =
    "the path of an existing UTF-8 text file with one class name per line (empty: unset)";

/// The `labels` property: unset, or a file that exists and reads as
/// labels.
pub fn labels_file(given: Option<&str>) -> Result<Option<PathBuf>, String> {
    let path = input_file(given)?;
    if let Some(p) = &path {
        crate::tasks::Labels::from_file(p).map_err(|e| cause(&e, p))?;
    }
    Ok(path)
}

/// The accepted form and parser of the file properties `wgnndetect` and
/// `wgnnclassify` share (`model`, whose accepted form `model_accepted` is
/// the element's own, `model-proc`, `labels`, `results-location`); `None`
/// for other names.
pub fn model_file_property(
    name: &str,
    model_accepted: &'static str,
) -> Option<(&'static str, PathParser)> {
    Some(match name {
        "model" => (model_accepted, input_file as PathParser),
        "model-proc" => (MODEL_PROC, model_proc_file),
        "labels" => (LABELS, labels_file),
        "results-location" => (OUTPUT_FILE, output_file),
        _ => return None,
    })
}

/// What `e` says about the file at `path`, without naming the path again
/// (messages name it once, before the cause): wgnn's errors about a file
/// start with its path.
pub fn cause(e: &crate::Error, path: &Path) -> String {
    let s = e.to_string();
    let prefix = format!("{}: ", path.display());
    match s.strip_prefix(&prefix) {
        // "file" is the loaders' location for the file as a whole.
        Some(rest) if !rest.is_empty() => rest.strip_prefix("file: ").unwrap_or(rest).to_string(),
        _ => s,
    }
}

/// An I/O error as a short cause, without the "(os error N)" tail.
pub fn io_cause(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_with_an_ellipsis() {
        assert_eq!(shorten("short"), "short");
        let exact = "x".repeat(ECHO_CHARS);
        assert_eq!(shorten(&exact), exact);
        let long = format!("/{}/model.tflite", "d".repeat(10 << 20));
        let short = shorten(&long);
        assert_eq!(short.chars().count(), ECHO_CHARS);
        assert!(short.starts_with("/ddd") && short.ends_with("d/model.tflite"));
        assert!(short.contains('…'));
        // Multi-byte characters are cut between characters.
        let wide = "é".repeat(ECHO_CHARS + 1);
        assert_eq!(shorten(&wide).chars().count(), ECHO_CHARS);
        // A cause quoting the value quotes it shortened; a long cause is cut.
        let cause = short_cause(&format!("not a colour: {long}"), &long);
        assert_eq!(cause, format!("not a colour: {short}"));
        let cause = short_cause(&"y".repeat(10_000), "v");
        assert_eq!(cause.chars().count(), 3 * ECHO_CHARS + 1);
    }

    #[test]
    fn input_files() {
        assert_eq!(input_file(None), Ok(None));
        assert_eq!(input_file(Some("")), Ok(None));
        let here = env!("CARGO_MANIFEST_DIR");
        let toml = format!("{here}/Cargo.toml");
        assert_eq!(input_file(Some(&toml)), Ok(Some(PathBuf::from(&toml))));
        assert_eq!(input_file(Some(here)), Err("it is a directory".into()));
        assert_eq!(
            input_file(Some("/nonexistent/x.tflite")),
            Err("no such file".into())
        );
    }

    #[test]
    fn output_files() {
        assert_eq!(output_file(Some("")), Ok(None));
        let dir = std::env::temp_dir();
        let file = dir.join("wgnn-property-test.jsonl");
        assert_eq!(
            output_file(Some(file.to_str().unwrap())),
            Ok(Some(file.clone()))
        );
        assert_eq!(output_file(Some("results.jsonl")).map(|_| ()), Ok(()));
        assert_eq!(
            output_file(Some(dir.to_str().unwrap())),
            Err("it is a directory".into())
        );
        let err = output_file(Some("/nonexistent/dir/r.jsonl")).unwrap_err();
        assert!(
            err.contains("/nonexistent/dir") && err.contains("no such file"),
            "{err}"
        );
    }
}
