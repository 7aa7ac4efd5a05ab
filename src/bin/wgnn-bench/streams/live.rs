//! The streams' pipelines, run and measured (see the module above); needs
//! GStreamer.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gst::prelude::*;
use serde_json::json;
use wgnn::gpu::{live, Gpu, SubmitStats};
use wgnn::gst::MAX_FRAMES_IN_FLIGHT;
use wgnn::ml::Precision;
use wgnn::tasks::instance::MAX_BATCH_SIZE;
use wgnn::video::VideoFormat;

use super::spread::{self, GpuShare};
use super::stages::{StageMs, Totals};
use super::track::AnalyticsConfig;
use super::Task;

/// How long the first frame of every stream may take (models are built and
/// shaders compiled on the first frames; software adapters are slow).
const FIRST_FRAME_TIMEOUT: Duration = Duration::from_secs(180);
/// Frames every stream shows before its latency is asked again: more than
/// the elements remember for their latency answer (src/gst/latency.rs).
const SETTLE_FRAMES: u64 = 33;
/// How long the streams may take to process those frames: 5 s, or a fifth
/// more than the frame rate needs for them where that is longer.
fn settle_timeout(fps: u32) -> Duration {
    Duration::from_secs(5).max(Duration::from_secs_f64(
        1.2 * SETTLE_FRAMES as f64 / f64::from(fps.max(1)),
    ))
}
/// Not counted: after the latency is settled.
const WARMUP: Duration = Duration::from_secs(2);
/// A late frame is dropped by the sink past this, as a video sink does.
const MAX_LATENESS_NS: i64 = 20_000_000;

impl Task {
    fn name(self) -> &'static str {
        match self {
            Task::Segment => "segment",
            Task::Detect => "detect",
            Task::Track => "track",
        }
    }

    fn default_model(self) -> PathBuf {
        wgnn::models::bundled(match self {
            Task::Segment => "selfie/selfie_segmentation.tflite",
            Task::Detect | Task::Track => "mediapipe/face_detection_short_range.tflite",
        })
    }

    /// The elements after wgnnupload; the model element is named `model`,
    /// the analytics element (its `config` set per run) `analytics`.
    fn elements(self) -> &'static str {
        match self {
            Task::Segment => "wgnnsegment name=model effect=blur",
            Task::Detect => "wgnndetect name=model ! wgnnoverlay",
            Task::Track => {
                "wgnndetect name=model ! wgnntrack ! wgnnanalytics name=analytics ! wgnnoverlay"
            }
        }
    }
}

#[derive(Clone)]
pub struct Options {
    pub streams: Vec<u32>,
    pub task: Task,
    /// None: N, at most 64.
    pub batch_size: Option<u32>,
    pub max_batch_latency_ms: u32,
    pub seconds: u32,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    pub format: VideoFormat,
    pub model: Option<PathBuf>,
    /// The model elements' `precision`.
    pub precision: Precision,
    /// A queue after wgnnupload and before the sink (`--queues`).
    pub queues: bool,
    /// An H.264 byte-stream file each stream decodes in a loop instead of
    /// the still photo (`--video`), with this decoder (`--decoder`).
    pub video: Option<PathBuf>,
    pub decoder: String,
    /// The model elements' `frames-in-flight`.
    pub frames_in_flight: u32,
}

/// The largest batch the elements take (their `batch-size` range).
const MAX_BATCH: u32 = MAX_BATCH_SIZE as u32;
const DEFAULT_BATCH_CAP: u32 = 64;

/// `--streams`: a comma-separated list of stream counts, each at least 1.
pub fn parse_streams(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let n: u32 = part.trim().parse().map_err(|_| {
            format!("--streams: '{part}' is not a number of streams (a list such as 1,8,32)")
        })?;
        if n == 0 {
            return Err("--streams: 0 streams; each count must be at least 1".into());
        }
        out.push(n);
    }
    Ok(out)
}

impl Options {
    /// The flags agree with each other (checked before a device is opened).
    pub fn validate(&self) -> Result<(), String> {
        if self.fps == 0 {
            return Err("--fps must be at least 1".into());
        }
        if self.seconds == 0 {
            return Err("--seconds must be at least 1".into());
        }
        if self.width == 0 || self.height == 0 {
            return Err(format!(
                "--width and --height must be at least 1 (got {}x{})",
                self.width, self.height
            ));
        }
        if let Some(b) = self.batch_size {
            if b == 0 || b > MAX_BATCH {
                return Err(format!("--batch-size {b}: must be 1 to {MAX_BATCH}"));
            }
        }
        if self.max_batch_latency_ms > 1000 {
            return Err(format!(
                "--max-batch-latency {}: must be 0 to 1000 ms",
                self.max_batch_latency_ms
            ));
        }
        if !(1..=MAX_FRAMES_IN_FLIGHT).contains(&self.frames_in_flight) {
            return Err(format!(
                "--frames-in-flight {}: must be 1 to {MAX_FRAMES_IN_FLIGHT}",
                self.frames_in_flight
            ));
        }
        if let Some(m) = &self.model {
            if !m.is_file() {
                return Err(format!("--model {}: no such file", m.display()));
            }
        }
        if let Some(v) = &self.video {
            if !v.is_file() {
                return Err(format!("--video {}: no such file", v.display()));
            }
        }
        Ok(())
    }

    /// The head of a stream's pipeline, up to the frames wgnnupload takes,
    /// and what it needs of GStreamer.
    fn source(&self) -> (String, String) {
        let caps = format!(
            "video/x-raw,format={},width={},height={},pixel-aspect-ratio=1/1",
            self.format.name(),
            self.width,
            self.height
        );
        match &self.video {
            // Paced at the clip's own rate by identity's clock wait before
            // the decoder, as a camera delivers; videorate holds --fps
            // whatever the clip's rate.
            Some(_) => (
                format!(
                    "multifilesrc name=src loop=true ! h264parse ! identity sync=true ! {} ! videoconvert ! \
                     videoscale ! videorate ! {caps},framerate={}/1",
                    self.decoder, self.fps
                ),
                format!(
                    "multifilesrc, h264parse, {}, videoconvert, videoscale, videorate",
                    self.decoder
                ),
            ),
            None => (
                format!(
                    "filesrc name=src ! pngdec ! videoconvert ! videoscale ! {caps} ! \
                     imagefreeze is-live=true ! video/x-raw,framerate={}/1",
                    self.fps
                ),
                "pngdec, imagefreeze, videoconvert, videoscale".to_string(),
            ),
        }
    }

    /// The file each stream reads: the clip, or the bundled photo.
    fn source_file(&self) -> PathBuf {
        self.video.clone().unwrap_or_else(source_photo)
    }

    fn batch_for(&self, streams: u32) -> u32 {
        self.batch_size
            .unwrap_or_else(|| streams.min(DEFAULT_BATCH_CAP))
    }

    pub fn describe(&self) -> String {
        format!(
            "{} x {}x{} {} at {} fps, {} s measured after {} s warm-up, model {} ({}), {} frames \
             in flight, source {}{}{}",
            self.task.name(),
            self.width,
            self.height,
            self.format.name(),
            self.fps,
            self.seconds,
            WARMUP.as_secs(),
            self.model().display(),
            self.precision,
            self.frames_in_flight,
            self.source_file().display(),
            match &self.video {
                Some(_) => format!(" decoded by {}", self.decoder),
                None => String::new(),
            },
            if self.queues { ", with queues" } else { "" }
        )
    }

    fn model(&self) -> PathBuf {
        self.model
            .clone()
            .unwrap_or_else(|| self.task.default_model())
    }
}

fn source_photo() -> PathBuf {
    wgnn::assets_dir().join("samples/astronaut.png")
}

/// One N's results.
pub struct RunReport {
    pub task: Task,
    pub streams: u32,
    pub batch_size: u32,
    /// The model elements' `frames-in-flight`.
    pub frames_in_flight: u32,
    /// Streams that rendered the frames the window holds (within one frame
    /// and 1%) with nothing dropped.
    pub sustained: u32,
    pub fps_min: f64,
    pub fps_mean: f64,
    pub frames_expected: f64,
    /// Frames dropped in the window (QoS messages: the sinks' late frames
    /// and the model elements' QoS skips), all streams.
    pub dropped: u64,
    /// Capture (the frame's running time) to the sink's render, ms.
    pub latency_mean_ms: f64,
    pub latency_max_ms: f64,
    /// From the first stream's model element: None where the elements have
    /// no such property (built before shared instances) or nothing was
    /// batched in the window.
    pub mean_batch: Option<f64>,
    pub gpu_ms_batch: Option<f64>,
    /// The share of the window the shared instance's model kept the GPU
    /// busy: its batches in the window times GPU ms per batch. The model
    /// only: uploads and overlays are not timed.
    pub gpu_busy_percent: Option<f64>,
    pub cpu_percent_per_stream: Option<f64>,
    /// Queue submissions and error-scope pairs (`Gpu::submits`) per frame
    /// the sinks rendered in the window, all streams' work on all GPUs:
    /// each submission is serialized on its device's queue. None where no
    /// frame was rendered.
    pub submits_per_frame: Option<(f64, f64)>,
    /// Regions of interest per frame leaving the model element, warm-up
    /// included (every frame is the same photo): what the detector found,
    /// which the tracker's cost grows with.
    pub objects_per_frame: Option<f64>,
    pub rss_bytes: Option<u64>,
    /// wgnn's live buffers and textures on the device, bytes.
    pub gpu_live_bytes: i64,
    /// wgpu's allocator report (allocated, reserved) where the backend has one.
    pub gpu_allocator: Option<(u64, u64)>,
    /// The first stream's model element's `precision-used`: what the model
    /// computed in and why.
    pub precision_used: Option<String>,
    /// Every stream's model element's `stage-ms` over the window: a
    /// frame's mean host ms in each stage.
    pub stage_ms: Option<StageMs>,
    /// The most batches of the instance in flight at once (submitted
    /// before the GPU was seen to finish the ones before), the whole run.
    pub batches_in_flight: Option<u64>,
    /// Properties the elements lack (reported as n/a).
    pub missing: Vec<&'static str>,
    /// wgnn's live objects on the device while the streams ran, and after
    /// they all stopped.
    pub live_running: live::Counts,
    pub live_after_stop: live::Counts,
    /// Each GPU's streams, with `--gpus`/`--gpu` (the columns above are
    /// the total, and the instance's figures the first GPU's).
    pub per_gpu: Vec<GpuShare>,
}

impl RunReport {
    pub fn all_sustained(&self) -> bool {
        self.sustained == self.streams
    }

    /// `precision-used`'s first word (f32, f16), or n/a.
    fn precision_short(&self) -> &str {
        self.precision_used
            .as_deref()
            .and_then(|p| p.split_whitespace().next())
            .unwrap_or("n/a")
    }

    pub fn gpu_ms_frame(&self) -> Option<f64> {
        match (self.gpu_ms_batch, self.mean_batch) {
            (Some(ms), Some(b)) if b > 0.0 => Some(ms / b),
            _ => None,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "task": self.task.name(),
            "streams": self.streams,
            "batch_size": self.batch_size,
            "frames_in_flight": self.frames_in_flight,
            "sustained_streams": self.sustained,
            "sustained": self.all_sustained(),
            "fps_min": self.fps_min,
            "fps_mean": self.fps_mean,
            "frames_expected_per_stream": self.frames_expected,
            "dropped": self.dropped,
            "latency_mean_ms": self.latency_mean_ms,
            "latency_max_ms": self.latency_max_ms,
            "mean_batch": self.mean_batch,
            "gpu_ms_per_batch": self.gpu_ms_batch,
            "gpu_ms_per_frame": self.gpu_ms_frame(),
            "gpu_busy_percent": self.gpu_busy_percent,
            "cpu_percent_per_stream": self.cpu_percent_per_stream,
            "submissions_per_frame": self.submits_per_frame.map(|s| s.0),
            "error_scopes_per_frame": self.submits_per_frame.map(|s| s.1),
            "objects_per_frame": self.objects_per_frame,
            "precision_used": self.precision_used,
            "stage_ms_per_frame": self.stage_ms.map(StageMs::to_json),
            "batches_in_flight": self.batches_in_flight,
            "rss_bytes": self.rss_bytes,
            "gpu_live_bytes": self.gpu_live_bytes,
            "gpu_allocated_bytes": self.gpu_allocator.map(|a| a.0),
            "gpu_reserved_bytes": self.gpu_allocator.map(|a| a.1),
            "missing_properties": self.missing,
            "live_running": live_json(&self.live_running),
            "live_after_stop": live_json(&self.live_after_stop),
            "per_gpu": self.per_gpu.iter().map(GpuShare::to_json).collect::<Vec<_>>(),
        })
    }

    pub fn header() -> String {
        format!(
            "{:>7} {:>5} {:>9} {:>7} {:>8} {:>6} {:>13} {:>6} {:>8} {:>8} {:>6} {:>10} {:>6} {:>6} {:>5} {} {:>8} {:>8}",
            "streams",
            "batch",
            "sustained",
            "min fps",
            "mean fps",
            "drops",
            "latency ms",
            "mean b",
            "GPU ms/b",
            "GPU ms/f",
            "busy %",
            "CPU %/strm",
            "subs/f",
            "obj/f",
            "prec",
            StageMs::header(),
            "RSS MiB",
            "GPU MiB"
        )
    }

    pub fn row(&self) -> String {
        let opt = |v: Option<f64>, digits: usize| {
            v.map_or("n/a".to_string(), |v| format!("{v:.digits$}"))
        };
        format!(
            "{:>7} {:>5} {:>9} {:>7.1} {:>8.1} {:>6} {:>13} {:>6} {:>8} {:>8} {:>6} {:>10} {:>6} {:>6} {:>5} {} {:>8} {:>8.1}",
            self.streams,
            self.batch_size,
            format!(
                "{} {}",
                self.sustained,
                if self.all_sustained() { "yes" } else { "no" }
            ),
            self.fps_min,
            self.fps_mean,
            self.dropped,
            format!("{:.1}/{:.1}", self.latency_mean_ms, self.latency_max_ms),
            opt(self.mean_batch, 1),
            opt(self.gpu_ms_batch, 3),
            opt(self.gpu_ms_frame(), 3),
            opt(self.gpu_busy_percent, 1),
            opt(self.cpu_percent_per_stream, 1),
            opt(self.submits_per_frame.map(|s| s.0), 2),
            opt(self.objects_per_frame, 1),
            self.precision_short(),
            StageMs::row(self.stage_ms.as_ref()),
            opt(self.rss_bytes.map(mib), 1),
            mib(self.gpu_live_bytes.max(0) as u64),
        )
    }
}

/// Submissions and error scopes so far on all of `gpus`.
fn submits(gpus: &[Gpu]) -> SubmitStats {
    let mut sum = SubmitStats::default();
    for g in gpus {
        sum += g.submits();
    }
    sum
}

fn live_json(c: &live::Counts) -> serde_json::Value {
    json!({
        "buffers": c.buffers,
        "buffer_bytes": c.buffer_bytes,
        "textures": c.textures,
        "texture_bytes": c.texture_bytes,
        "compute_pipelines": c.compute_pipelines,
        "render_pipelines": c.render_pipelines,
        "graphs": c.graphs,
    })
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

/// What one stream's sink saw while the window was open.
#[derive(Default)]
struct Tally {
    /// Frames rendered since the pipeline started (for the warm-up).
    seen: u64,
    /// Frames out of the model element since the pipeline started, and the
    /// regions of interest on them.
    modelled: u64,
    objects: u64,
    frames: u64,
    latency_sum_ms: f64,
    latency_max_ms: f64,
}

struct Stream {
    pipeline: gst::Pipeline,
    model: gst::Element,
    tally: Arc<Mutex<Tally>>,
    /// QoS messages (each one a dropped frame) while the window was open.
    dropped: Arc<AtomicU64>,
    error: Arc<Mutex<Option<String>>>,
}

impl Stream {
    fn error(&self) -> Option<String> {
        self.error.lock().unwrap().clone()
    }
}

/// The batching properties the lead's elements have; each one absent from
/// this build's elements is left unset and reported as n/a.
const INSTANCE_PROPERTIES: [&str; 9] = [
    "model-instance-id",
    "batch-size",
    "max-batch-latency",
    "batches",
    "batched-frames",
    "profile",
    "gpu-ms",
    "precision-used",
    "stage-ms",
];

/// `--queues`: a short queue before the model elements (a stream that
/// cannot keep up shows as drops, not as frames piling up), and a longer
/// one before the sink, which holds each frame until its running time plus
/// the pipeline's latency.
const QUEUE_IN: &str = "queue max-size-buffers=3 max-size-bytes=0 max-size-time=0 ! ";
const QUEUE_OUT: &str = "queue max-size-buffers=30 max-size-bytes=0 max-size-time=0 ! ";

fn build_stream(
    options: &Options,
    index: u32,
    instance: &str,
    batch: u32,
    context: &gst::Context,
    analytics: Option<&AnalyticsConfig>,
    measuring: &Arc<AtomicBool>,
) -> Result<Stream, String> {
    let (source, needs) = options.source();
    let desc = format!(
        "{source} ! wgnnupload ! {q_in}{elements} ! \
         video/x-raw(memory:WgpuTexture) ! {q_out}fakesink name=sink sync=true qos=true max-lateness={MAX_LATENESS_NS} \
         signal-handoffs=true",
        elements = options.task.elements(),
        q_in = if options.queues { QUEUE_IN } else { "" },
        q_out = if options.queues { QUEUE_OUT } else { "" },
    );
    let pipeline = gst::parse::launch(&desc)
        .map_err(|e| format!("stream {index}: {e} (needs GStreamer's {needs})"))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| format!("stream {index}: not a pipeline"))?;
    pipeline.set_property("name", format!("stream{index}"));
    let by_name = |name: &str| {
        pipeline
            .by_name(name)
            .ok_or_else(|| format!("stream {index}: no element {name}"))
    };
    let src = by_name("src")?;
    src.set_property(
        "location",
        options.source_file().to_string_lossy().to_string(),
    );
    if let Some(config) = analytics {
        let config = config.path().to_string_lossy().to_string();
        by_name("analytics")?.set_property("config", Some(config));
    }
    let model = by_name("model")?;
    model.set_property("model", Some(options.model().to_string_lossy().to_string()));
    if model.find_property("model-instance-id").is_some() {
        model.set_property("model-instance-id", Some(instance));
    }
    if model.find_property("batch-size").is_some() {
        model.set_property("batch-size", batch);
    }
    if model.find_property("max-batch-latency").is_some() {
        model.set_property("max-batch-latency", options.max_batch_latency_ms);
    }
    model.set_property_from_str("precision", options.precision.name());
    if model.find_property("frames-in-flight").is_some() {
        model.set_property("frames-in-flight", options.frames_in_flight);
    }
    // One stream times the shared instance's batches: timing makes that
    // batch wait for the GPU, so only one element asks.
    if index == 0 && model.find_property("profile").is_some() {
        model.set_property("profile", true);
    }
    // Every element takes this device, whichever asks first.
    pipeline.set_context(context);

    let tally = Arc::new(Mutex::new(Tally::default()));
    let sink = by_name("sink")?;
    {
        let tally = tally.clone();
        let measuring = measuring.clone();
        sink.connect("handoff", false, move |args| {
            let latency = args
                .first()
                .and_then(|v| v.get::<gst::Element>().ok())
                .zip(args.get(1).and_then(|v| v.get::<gst::Buffer>().ok()))
                .zip(args.get(2).and_then(|v| v.get::<gst::Pad>().ok()))
                .and_then(|((sink, buffer), pad)| frame_latency(&sink, &buffer, &pad));
            let mut t = tally.lock().unwrap();
            t.seen += 1;
            if measuring.load(Ordering::Acquire) {
                t.frames += 1;
                if let Some(ms) = latency {
                    t.latency_sum_ms += ms;
                    t.latency_max_ms = t.latency_max_ms.max(ms);
                }
            }
            None
        });
    }
    // The detector's objects, counted as they leave it: the sink may drop
    // a late frame.
    if let Some(pad) = model.static_pad("src") {
        let tally = tally.clone();
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(buffer) = info.buffer() {
                let objects = buffer
                    .iter_meta::<gst_video::VideoRegionOfInterestMeta>()
                    .count() as u64;
                let mut t = tally.lock().unwrap();
                t.modelled += 1;
                t.objects += objects;
            }
            gst::PadProbeReturn::Ok
        });
    }
    let dropped = Arc::new(AtomicU64::new(0));
    let error = Arc::new(Mutex::new(None));
    {
        let dropped = dropped.clone();
        let error = error.clone();
        let measuring = measuring.clone();
        let bus = pipeline.bus().expect("a pipeline has a bus");
        // Handled on the posting thread: nothing runs a main loop here, and
        // a drop is counted when it happens, inside the window or not.
        bus.set_sync_handler(move |_, message| {
            match message.view() {
                gst::MessageView::Qos(_) if measuring.load(Ordering::Acquire) => {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
                gst::MessageView::Error(e) => {
                    let mut slot = error.lock().unwrap();
                    if slot.is_none() {
                        let from = e
                            .src()
                            .map(|s| s.name().to_string())
                            .unwrap_or_else(|| "pipeline".into());
                        *slot = Some(format!("{from}: {}", e.error()));
                    }
                }
                // Late frames are counted as drops; the sinks' warnings
                // about them would repeat that once a second per stream.
                gst::MessageView::Warning(w) => {
                    log::info!("stream {index}: {} ({:?})", w.error(), w.debug());
                }
                _ => {}
            }
            gst::BusSyncReply::Drop
        });
    }
    Ok(Stream {
        pipeline,
        model,
        tally,
        dropped,
        error,
    })
}

/// From the frame's running time (when the live source captured it) to now,
/// in ms.
fn frame_latency(sink: &gst::Element, buffer: &gst::Buffer, pad: &gst::Pad) -> Option<f64> {
    let pts = buffer.pts()?;
    let segment = pad.sticky_event::<gst::event::Segment>(0)?;
    let segment = segment.segment().downcast_ref::<gst::ClockTime>()?;
    let captured = segment.to_running_time(pts)?;
    let now = sink.current_running_time()?;
    Some(now.saturating_sub(captured).nseconds() as f64 / 1e6)
}

fn read_u64(element: &gst::Element, name: &str) -> Option<u64> {
    element
        .find_property(name)
        .map(|_| element.property::<u64>(name))
}

/// User + system CPU seconds of this process.
#[cfg(target_os = "linux")]
fn cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(usage.ru_utime) + secs(usage.ru_stime))
}

#[cfg(not(target_os = "linux"))]
fn cpu_seconds() -> Option<f64> {
    None
}

fn first_error(streams: &[Stream]) -> Result<(), String> {
    for (i, s) in streams.iter().enumerate() {
        if let Some(e) = s.error() {
            return Err(format!("stream {i}: {e}"));
        }
    }
    Ok(())
}

/// Sleeps `how_long`, stopping early with the first stream error.
fn watch(streams: &[Stream], how_long: Duration) -> Result<(), String> {
    let end = Instant::now() + how_long;
    loop {
        first_error(streams)?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

/// Runs every N of `options.streams` spread over `gpus` (see [`spread`]),
/// calling `done` with each result.
pub fn run(
    gpus: &[Gpu],
    options: &Options,
    mut done: impl FnMut(&RunReport),
) -> Result<Vec<RunReport>, String> {
    wgnn::gst::register_static().map_err(|e| e.to_string())?;
    if options.video.is_some() && gst::ElementFactory::find(&options.decoder).is_none() {
        return Err(format!(
            "--decoder {}: no such GStreamer element (is its plugin installed?)",
            options.decoder
        ));
    }
    let contexts: Vec<gst::Context> = gpus.iter().map(wgnn::gst::device::context_for).collect();
    let analytics = match options.task {
        Task::Track => Some(AnalyticsConfig::write(options.width, options.height)?),
        _ => None,
    };
    let mut reports = Vec::new();
    for (i, &n) in options.streams.iter().enumerate() {
        // A fresh instance per N (and task), so that each N's batch size is
        // its own.
        let instance = format!(
            "wgnn-bench-streams-{}-{}-{i}",
            std::process::id(),
            options.task.name()
        );
        let report = run_one(gpus, options, n, &instance, &contexts, analytics.as_ref())?;
        done(&report);
        reports.push(report);
    }
    Ok(reports)
}

fn run_one(
    gpus: &[Gpu],
    options: &Options,
    n: u32,
    instance: &str,
    contexts: &[gst::Context],
    analytics: Option<&AnalyticsConfig>,
) -> Result<RunReport, String> {
    // Each GPU's instance batches its own streams.
    let batch = options.batch_for(n.div_ceil(gpus.len() as u32));
    let measuring = Arc::new(AtomicBool::new(false));
    let mut streams = Vec::with_capacity(n as usize);
    for index in 0..n {
        let context = &contexts[spread::gpu_of(index, gpus.len())];
        streams.push(build_stream(
            options, index, instance, batch, context, analytics, &measuring,
        )?);
    }
    let mut result = measure(gpus, options, n, batch, &streams, &measuring);
    for s in &streams {
        let _ = s.pipeline.set_state(gst::State::Null);
    }
    drop(streams);
    // What the device still holds once every stream has stopped: the
    // shared instance goes with its last user, so the graphs count falls
    // back to what the bench held before (none).
    if let Ok(r) = &mut result {
        r.live_after_stop = gpus[0].live();
    }
    result
}

/// Starts every stream and waits until each has processed its first frame
/// (models built, shaders compiled), then enough frames for the elements to
/// forget it; then asks the latency and runs the warm-up.
fn start_and_settle(options: &Options, streams: &[Stream]) -> Result<(), String> {
    // Pinned until the first frames are forgotten (see the module's doc).
    for s in streams {
        s.pipeline.set_latency(gst::ClockTime::ZERO);
    }
    for (i, s) in streams.iter().enumerate() {
        s.pipeline.set_state(gst::State::Playing).map_err(|_| {
            let why = s.error().unwrap_or_else(|| "did not start".into());
            format!("stream {i}: {why}")
        })?;
    }
    // Every stream processes its first frame (models built, shaders
    // compiled), then enough frames for the elements to forget it, then
    // the latency is asked, then the warm-up, then the window.
    let processed = |s: &Stream| read_u64(&s.model, "frames").unwrap_or(0);
    let began = Instant::now();
    while let Some(i) = streams.iter().position(|s| processed(s) == 0) {
        if began.elapsed() > FIRST_FRAME_TIMEOUT {
            return Err(format!(
                "stream {i}: no frame within {} s",
                FIRST_FRAME_TIMEOUT.as_secs()
            ));
        }
        watch(streams, Duration::from_millis(50))?;
    }
    let settled: Vec<u64> = streams
        .iter()
        .map(|s| processed(s) + SETTLE_FRAMES)
        .collect();
    let began = Instant::now();
    // Bounded: a device too slow for the frame rate gets there late or
    // never, and is then measured as it is.
    while began.elapsed() < settle_timeout(options.fps)
        && streams
            .iter()
            .zip(&settled)
            .any(|(s, &enough)| processed(s) < enough)
    {
        watch(streams, Duration::from_millis(50))?;
    }
    for (i, s) in streams.iter().enumerate() {
        s.pipeline.set_latency(None);
        let mut q = gst::query::Latency::new();
        if s.pipeline.query(&mut q) {
            log::debug!(
                "stream {i}: {} frames processed, latency {:?}",
                processed(s),
                q.result()
            );
        }
    }
    watch(streams, WARMUP)?;
    Ok(())
}

fn measure(
    gpus: &[Gpu],
    options: &Options,
    n: u32,
    batch: u32,
    streams: &[Stream],
    measuring: &AtomicBool,
) -> Result<RunReport, String> {
    start_and_settle(options, streams)?;

    let first = &streams[0].model;
    let batches0 = read_u64(first, "batches");
    let items0 = read_u64(first, "batched-frames");
    let models = || streams.iter().map(|s| &s.model);
    let stages0 = Totals::read(models());
    let cpu0 = cpu_seconds();
    let submits0 = submits(gpus);
    let t0 = Instant::now();
    measuring.store(true, Ordering::Release);
    watch(streams, Duration::from_secs(u64::from(options.seconds)))?;
    measuring.store(false, Ordering::Release);
    let window = t0.elapsed().as_secs_f64();
    let cpu1 = cpu_seconds();
    let submitted = submits(gpus).since(&submits0);
    let stage_ms = stages0
        .zip(Totals::read(models()))
        .and_then(|(before, after)| after.per_frame_since(&before));
    let batches1 = read_u64(first, "batches");
    let items1 = read_u64(first, "batched-frames");
    let gpu_ms = first
        .find_property("gpu-ms")
        .map(|_| first.property::<f64>("gpu-ms"))
        .filter(|ms| *ms >= 0.0);
    let rss = crate::soak::rss();
    let live = gpus[0].live();
    let allocator = gpus[0]
        .device()
        .generate_allocator_report()
        .map(|r| (r.total_allocated_bytes, r.total_reserved_bytes));

    let expected = f64::from(options.fps) * window;
    let mut sustained = 0;
    let mut dropped = 0;
    let mut fps = Vec::with_capacity(streams.len());
    let (mut latency_sum, mut latency_max, mut frames_all) = (0.0, 0.0f64, 0u64);
    let (mut objects, mut modelled) = (0, 0);
    let mut kept = Vec::with_capacity(streams.len());
    for s in streams {
        let t = s.tally.lock().unwrap();
        let d = s.dropped.load(Ordering::Relaxed);
        dropped += d;
        fps.push(t.frames as f64 / window);
        // The window's edges fall between frames: one frame and 1% of
        // slack, no more.
        let ok = d == 0 && t.frames as f64 + 1.0 >= expected * 0.99;
        sustained += u32::from(ok);
        kept.push(ok);
        latency_sum += t.latency_sum_ms;
        latency_max = latency_max.max(t.latency_max_ms);
        frames_all += t.frames;
        objects += t.objects;
        modelled += t.modelled;
    }
    let batches = match (batches0, batches1) {
        (Some(b0), Some(b1)) if b1 > b0 => Some(b1 - b0),
        _ => None,
    };
    let mean_batch = batches
        .zip(items0.zip(items1))
        .map(|(b, (i0, i1))| (i1 - i0) as f64 / b as f64);
    let gpu_busy_percent = batches
        .zip(gpu_ms)
        .map(|(b, ms)| b as f64 * ms / (window * 1e3) * 100.0);
    let missing = INSTANCE_PROPERTIES
        .iter()
        .copied()
        .filter(|p| first.find_property(p).is_none())
        .collect();
    Ok(RunReport {
        task: options.task,
        streams: n,
        batch_size: batch,
        frames_in_flight: options.frames_in_flight,
        sustained,
        fps_min: fps.iter().copied().fold(f64::INFINITY, f64::min),
        fps_mean: fps.iter().sum::<f64>() / fps.len().max(1) as f64,
        frames_expected: expected,
        dropped,
        latency_mean_ms: latency_sum / frames_all.max(1) as f64,
        latency_max_ms: latency_max,
        mean_batch,
        gpu_ms_batch: gpu_ms,
        gpu_busy_percent,
        cpu_percent_per_stream: cpu0
            .zip(cpu1)
            .map(|(a, b)| (b - a) / window / f64::from(n) * 100.0),
        submits_per_frame: (frames_all > 0).then(|| {
            let per = |count: u64| count as f64 / frames_all as f64;
            (per(submitted.submissions), per(submitted.error_scopes))
        }),
        objects_per_frame: (modelled > 0).then(|| objects as f64 / modelled as f64),
        precision_used: first
            .find_property("precision-used")
            .and_then(|_| first.property::<Option<String>>("precision-used"))
            .filter(|p| !p.is_empty()),
        stage_ms,
        batches_in_flight: read_u64(first, "batches-in-flight"),
        rss_bytes: rss,
        gpu_live_bytes: live.buffer_bytes + live.texture_bytes,
        live_running: live,
        live_after_stop: live::Counts::default(),
        gpu_allocator: allocator,
        missing,
        per_gpu: spread::shares(gpus, &kept),
    })
}
