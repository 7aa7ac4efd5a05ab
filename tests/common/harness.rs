//! What the element tests share: registration, caps strings, timed buffers,
//! named elements inside a parsed harness, and the error a pipeline posts
//! when it cannot start.

use gst::prelude::*;
use gst_check::Harness;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub fn init() {
    wgnn::gst::register_static().unwrap();
}

pub fn caps(format: &str, w: u32, h: u32) -> String {
    format!("video/x-raw,format={format},width={w},height={h},framerate=30/1")
}

/// A buffer at `pts_ms` lasting one 30 fps frame (33 ms).
pub fn buffer(bytes: &[u8], pts_ms: u64) -> gst::Buffer {
    let mut b = gst::Buffer::from_slice(bytes.to_vec());
    let r = b.get_mut().unwrap();
    r.set_pts(gst::ClockTime::from_mseconds(pts_ms));
    r.set_duration(gst::ClockTime::from_mseconds(33));
    b
}

pub fn bytes(b: &gst::Buffer) -> Vec<u8> {
    b.map_readable().unwrap().to_vec()
}

/// The element called `name` in a harness made with `Harness::new_parse`.
pub fn element(h: &Harness, name: &str) -> gst::Element {
    h.element()
        .unwrap()
        .downcast::<gst::Bin>()
        .unwrap()
        .by_name(name)
        .unwrap()
}

/// Starts `launch` and returns the error it posts (message and debug text).
pub fn start_error(launch: &str) -> String {
    let pipeline = gst::parse::launch(launch).unwrap();
    let result = pipeline.set_state(gst::State::Playing);
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(gst::ClockTime::from_seconds(30), &[gst::MessageType::Error])
        .unwrap_or_else(|| panic!("{launch}: no error on the bus (state change {result:?})"));
    let gst::MessageView::Error(e) = msg.view() else {
        unreachable!()
    };
    pipeline.set_state(gst::State::Null).unwrap();
    format!("{} {:?}", e.error(), e.debug())
}

/// The gst-launch description in a pipelines/ file: comments dropped, lines
/// joined, the program name and its flags removed.
pub fn description(text: &str) -> String {
    let joined = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.trim().trim_end_matches('\\').trim())
        .collect::<Vec<_>>()
        .join(" ");
    let rest = joined
        .trim()
        .strip_prefix("gst-launch-1.0")
        .expect("a pipelines/ file holds one gst-launch-1.0 line");
    rest.split_whitespace()
        .skip_while(|w| w.starts_with('-'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses a gst-launch description into a pipeline.
pub fn launch(desc: &str) -> gst::Pipeline {
    gst::parse::launch(desc)
        .unwrap_or_else(|e| panic!("{desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .unwrap()
}

/// The context that puts the wgnn elements of whatever it is set on on the
/// process's shared device (`common::gpu()`), as one application's
/// pipelines share theirs. Set before the elements start, it spares each
/// pipeline a device of its own, whose first frame compiles every kernel of
/// its model again (seconds a model on lavapipe). Not for tests that count
/// a device's own objects or transfers (they take `common::own_gpu()`).
pub fn shared_device() -> gst::Context {
    wgnn::gst::device::context_for(&super::gpu())
}

/// `Harness::new_parse(desc)` with its elements on the shared device (see
/// [`shared_device`]).
pub fn harness_on_shared_device(desc: &str) -> Harness {
    let bin =
        gst::parse::bin_from_description(desc, true).unwrap_or_else(|e| panic!("{desc}: {e}"));
    bin.set_context(&shared_device());
    Harness::with_element(&bin, Some("sink"), Some("src"))
}

/// Plays `desc` and hands every sample of its appsink `sink` to `each`
/// until EOS (one at a time: decoders' buffer pools are small). The pipeline
/// is left playing; [`stop`] it when done.
pub fn pull_samples(desc: &str, mut each: impl FnMut(&gst::Sample)) -> gst::Pipeline {
    let pipeline = launch(desc);
    let sink = pipeline
        .by_name("sink")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    while let Ok(sample) = sink.pull_sample() {
        each(&sample);
    }
    pipeline
}

/// Pushes `frames` copies of `data` (RGBA, `width` x `height`, 30 fps) into
/// the pipeline's appsrc `src`, then EOS.
pub fn push_rgba_frames(
    pipeline: &gst::Pipeline,
    data: &[u8],
    width: u32,
    height: u32,
    frames: u64,
) {
    let src = pipeline
        .by_name("src")
        .unwrap()
        .downcast::<gst_app::AppSrc>()
        .unwrap();
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, width, height)
        .fps(gst::Fraction::new(30, 1))
        .build()
        .unwrap();
    src.set_caps(Some(&info.to_caps().unwrap()));
    src.set_format(gst::Format::Time);
    for i in 0..frames {
        src.push_buffer(buffer(data, i * 33)).unwrap();
    }
    src.end_of_stream().unwrap();
}

pub fn stop(pipeline: &gst::Pipeline) {
    pipeline.set_state(gst::State::Null).unwrap();
}

/// The first EOS or error message of a playing pipeline, waiting at most
/// `secs` seconds.
pub fn eos_or_error(pipeline: &impl IsA<gst::Element>, secs: u64) -> gst::Message {
    pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(secs),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .unwrap_or_else(|| panic!("no EOS or error in {secs} s"))
}

/// Waits for EOS (at most `secs` seconds), failing with the error's text,
/// after `what`, when an error comes first.
pub fn expect_eos(pipeline: &impl IsA<gst::Element>, secs: u64, what: &str) {
    let msg = eos_or_error(pipeline, secs);
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{what}: {} ({:?})", e.error(), e.debug());
    }
}

/// Collects the log lines of one debug category from objects whose name
/// contains a marker, with that category's threshold raised while it lives.
/// Thresholds and log functions are process-wide: one capture at a time
/// (the others wait), so that one test resetting a threshold cannot take
/// the lines another test is waiting for.
pub struct LogCapture {
    lines: Arc<Mutex<Vec<(gst::DebugLevel, String)>>>,
    function: Option<gst::log::DebugLogFunction>,
    pattern: &'static str,
    _turn: MutexGuard<'static, ()>,
}

impl LogCapture {
    /// Raises categories matching `pattern` to `level` and keeps the lines
    /// of category `category` from objects whose name contains `object`.
    pub fn start(
        pattern: &'static str,
        level: gst::DebugLevel,
        category: &'static str,
        object: &'static str,
    ) -> LogCapture {
        static TURN: Mutex<()> = Mutex::new(());
        let turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        gst::log::set_active(true);
        gst::log::set_threshold_for_name(pattern, level);
        let function = gst::log::add_log_function(move |cat, level, _, _, _, obj, msg| {
            if cat.name() == category && obj.is_some_and(|o| o.to_string().contains(object)) {
                if let Some(m) = msg.get() {
                    sink.lock().unwrap().push((level, m.to_string()));
                }
            }
        });
        LogCapture {
            lines,
            function: Some(function),
            pattern,
            _turn: turn,
        }
    }

    /// The lines so far (all levels up to the threshold).
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// The lines so far logged at exactly `level`.
    pub fn lines_at(&self, level: gst::DebugLevel) -> Vec<String> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .filter(|(l, _)| *l == level)
            .map(|(_, m)| m.clone())
            .collect()
    }
}

impl Drop for LogCapture {
    fn drop(&mut self) {
        if let Some(f) = self.function.take() {
            gst::log::remove_log_function(f);
        }
        gst::log::unset_threshold_for_name(self.pattern);
    }
}

/// The GLib warnings of wgnn's log domain (`wgnn::gst::property::LOG_DOMAIN`:
/// refused property values) so far in this process that mention `marker`
/// (give each test's elements names of their own). The handler that
/// collects them is installed at the first call and stays: it takes the
/// domain's warnings from GLib's default handler, which would print them.
pub fn wgnn_warnings(marker: &str) -> Vec<String> {
    static WARNINGS: std::sync::OnceLock<Arc<Mutex<Vec<String>>>> = std::sync::OnceLock::new();
    let all = WARNINGS.get_or_init(|| {
        let all = Arc::new(Mutex::new(Vec::new()));
        let sink = all.clone();
        gst::glib::log_set_handler(
            Some(wgnn::gst::property::LOG_DOMAIN),
            gst::glib::LogLevels::LEVEL_WARNING,
            false,
            false,
            move |_, _, message| sink.lock().unwrap().push(message.to_string()),
        );
        all
    });
    all.lock()
        .unwrap()
        .iter()
        .filter(|m| m.contains(marker))
        .cloned()
        .collect()
}
