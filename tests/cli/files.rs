//! What the CLI tests check about the files a job leaves: that an existing
//! output survives a failed job unchanged, that no temporary file is left,
//! the H.264 profile and chroma format of a written file, and that stderr
//! carries no Rust source paths or closure names.

use crate::common;

use gst::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant, SystemTime};

/// An existing file whose content and modification time must survive.
pub struct Kept {
    path: PathBuf,
    content: Vec<u8>,
    modified: SystemTime,
}

impl Kept {
    /// Writes `content` at `path` and remembers it.
    pub fn new(path: &Path, content: &[u8]) -> Kept {
        std::fs::write(path, content).unwrap();
        Kept {
            path: path.to_path_buf(),
            content: content.to_vec(),
            modified: std::fs::metadata(path).unwrap().modified().unwrap(),
        }
    }

    pub fn path(&self) -> &str {
        self.path.to_str().unwrap()
    }

    pub fn assert_unchanged(&self, what: &str) {
        let now = std::fs::read(&self.path)
            .unwrap_or_else(|e| panic!("{what}: {} is gone: {e}", self.path.display()));
        assert_eq!(now, self.content, "{what}: {} changed", self.path.display());
        let modified = std::fs::metadata(&self.path).unwrap().modified().unwrap();
        assert_eq!(
            modified,
            self.modified,
            "{what}: {} was touched",
            self.path.display()
        );
    }
}

/// The temporary outputs (`*.partial`) in `dir`.
pub fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".partial"))
        .collect()
}

/// No Rust source paths, closure names or source folders in what a user
/// reads.
pub fn assert_clean(stderr: &str) {
    for line in stderr.lines() {
        for bad in [".rs:", "{{closure}}", "src/"] {
            assert!(!line.contains(bad), "'{bad}' in a user-facing line: {line}");
        }
    }
}

/// One line of stderr (clap's usage hint aside) that names the problem.
pub fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
        .filter(|l| !l.contains("XDG_RUNTIME_DIR"))
        .collect();
    assert_eq!(lines.len(), 1, "one line expected: {stderr}");
    lines[0]
}

/// The H.264 profile and chroma format of the video stream in an MP4 or MKV
/// file, as h264parse reads them from the stream's parameter sets.
pub fn h264_caps(path: &Path) -> (String, String) {
    gst::init().unwrap();
    let demux = if path.extension().is_some_and(|e| e == "mkv") {
        "matroskademux"
    } else {
        "qtdemux"
    };
    let mut found = None;
    let pipeline = common::harness::pull_samples(
        &format!(
            "filesrc location=\"{}\" ! {demux} ! h264parse ! appsink name=sink sync=false",
            path.display()
        ),
        |sample| {
            if found.is_none() {
                let s = sample.caps().unwrap().structure(0).unwrap().to_owned();
                found = Some((
                    s.get::<String>("profile").unwrap_or_default(),
                    s.get::<String>("chroma-format").unwrap_or_default(),
                ));
            }
        },
    );
    common::harness::stop(&pipeline);
    found.unwrap_or_else(|| panic!("{}: no H.264 sample", path.display()))
}

/// A `frames`-frame H.264 MP4 of GStreamer's test pattern at `w` x `h`.
pub fn test_video(path: &Path, w: u32, h: u32, frames: u32) {
    gst::init().unwrap();
    let pipeline = common::harness::launch(&format!(
        "videotestsrc num-buffers={frames} pattern=ball ! video/x-raw,width={w},height={h} ! \
         videoconvert ! x264enc speed-preset=ultrafast ! mp4mux ! filesink location=\"{}\"",
        path.display()
    ));
    pipeline.set_state(gst::State::Playing).unwrap();
    common::harness::expect_eos(&pipeline, 120, "writing a test video");
    common::harness::stop(&pipeline);
}

/// Waits until the job's temporary output in `dir` holds `bytes` or more
/// (frames are being written), failing if `child` exits first.
pub fn wait_for_output(child: &mut Child, dir: &Path, bytes: u64) {
    // On a loaded machine (several test binaries at once) the first frames
    // can take long: the bound only catches a job that never writes.
    let began = Instant::now();
    loop {
        let written = leftovers(dir)
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .max()
            .unwrap_or(0);
        if written >= bytes {
            return;
        }
        assert!(
            began.elapsed() < Duration::from_secs(300),
            "no output after five minutes"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the job ended before the signal"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
