//! `results-location` and `post-messages`: what the analysing elements
//! found on each frame, as JSON lines appended to a file and as element
//! messages on the bus (`gst-launch-1.0 -m` prints them).

use std::io::Write;
use std::path::{Path, PathBuf};

use gst::glib;
use gst::prelude::*;

use crate::tasks::FrameResults;

/// The name of the element messages `post-messages` posts.
pub const MESSAGE: &str = "wgnn-results";

/// The two properties, for an element's `properties()`.
pub fn properties() -> Vec<glib::ParamSpec> {
    vec![
        glib::ParamSpecString::builder("results-location")
            .nick("Results location")
            .blurb(
                "File to append one JSON line per frame to (objects in frame pixels); unset = \
                 none. Opened when the element starts",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("post-messages")
            .nick("Post messages")
            .blurb("Post each frame's results as a 'wgnn-results' element message on the bus")
            .default_value(false)
            .mutable_ready()
            .build(),
    ]
}

/// Whether `a` and `b` are one file (the same device and inode, through
/// links); a path that does not exist is no file yet.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Where a started element sends each frame's results.
#[derive(Debug, Default)]
pub struct ResultsOut {
    file: Option<(PathBuf, std::fs::File)>,
    post: bool,
}

impl ResultsOut {
    /// Opens `location` for appending (created if missing; what it holds is
    /// kept). Fails the state change naming the file, and refuses a file the
    /// element reads (`read`: each property and its file, if any), which
    /// appending would damage.
    pub fn open(
        location: Option<&Path>,
        post: bool,
        read: &[(&str, Option<&Path>)],
    ) -> Result<ResultsOut, gst::ErrorMessage> {
        let file = match location {
            None => None,
            Some(path) => {
                if let Some((name, _)) = read
                    .iter()
                    .find(|(_, f)| f.is_some_and(|f| same_file(path, f)))
                {
                    return Err(gst::error_msg!(
                        gst::LibraryError::Settings,
                        (
                            "cannot use results-location {}: it is the {name} file, which the \
                             element reads",
                            path.display()
                        )
                    ));
                }
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| {
                        gst::error_msg!(
                            gst::ResourceError::OpenWrite,
                            (
                                "cannot open results-location {}: {}",
                                path.display(),
                                crate::gst::property::io_cause(&e)
                            ),
                            ["{}", e]
                        )
                    })?;
                Some((path.to_path_buf(), f))
            }
        };
        Ok(ResultsOut { file, post })
    }

    /// Whether anything wants the results (else callers skip building them).
    pub fn wanted(&self) -> bool {
        self.file.is_some() || self.post
    }

    /// Appends `line` (one JSON object, no newline) to the file, if any;
    /// a write error is returned naming the file.
    pub fn append(&mut self, line: &str) -> crate::Result<()> {
        if let Some((path, file)) = &mut self.file {
            // One write per line, so that a reader never sees half a line
            // from us between frames.
            let mut bytes = Vec::with_capacity(line.len() + 1);
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            file.write_all(&bytes)
                .and_then(|_| file.flush())
                .map_err(|e| crate::Error::File {
                    path: path.clone(),
                    message: format!("cannot append results: {e}"),
                })?;
        }
        Ok(())
    }

    /// Appends `results` as one line and posts it; a write error is returned
    /// naming the file (the element stops the stream with it).
    pub fn emit(&mut self, element: &gst::Element, results: &FrameResults) -> crate::Result<()> {
        if !self.wanted() {
            return Ok(());
        }
        let line = results.to_json_line();
        self.append(&line)?;
        if self.post {
            let mut s = gst::Structure::builder(MESSAGE)
                .field("width", results.width)
                .field("height", results.height)
                .field("objects", results.objects.len() as u32)
                .field("json", line)
                .build();
            if let Some(pts) = results.pts {
                s.set("pts", pts);
            }
            let _ = element.post_message(gst::message::Element::builder(s).src(element).build());
        }
        Ok(())
    }
}
