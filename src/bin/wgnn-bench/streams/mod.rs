//! `wgnn-bench streams`: N live streams through wgnn's GStreamer elements in
//! one process, every model element sharing one model instance
//! (`model-instance-id`) and one device, for each N asked for. What it
//! reports per N is what a many-streams deployment is sized by: how many
//! streams kept the frame rate with nothing dropped, the batches the shared
//! instance made and their GPU time, and the host CPU and memory per stream.
//!
//! One pipeline per stream (not one pipeline with N branches): that is how
//! streams come and go in an application, each with its own clock wait, QoS
//! and errors, and it is what the instance must serve. Every pipeline gets
//! the same `gst::Context` carrying the bench's device before it starts.
//!
//! Each N: the pipelines start with their latency pinned at 0, every stream
//! processes its first frame (the model built, shaders compiled) and then
//! more frames than the elements remember for their latency answer (or 5 s
//! pass, longer at low frame rates), the latency is asked again, 2 s of
//! warm-up pass, and the window of `--seconds` is measured. Without the pin, the first frame's seconds would
//! become every pipeline's latency (the elements report the slowest recent
//! frame and say so only when it grows): each sink would hold every frame
//! that long and the live source skip the frames in between.
//!
//! The source of every stream is the bundled astronaut photo (a person for
//! the segmenter, a face for the detector), decoded and scaled into the caps
//! once, then repeated by `imagefreeze is-live=true` at the frame rate: the
//! same buffer each frame, so the host CPU measured is wgnn's (upload,
//! batching, dispatch), not a pattern generator's; and a real face and
//! person give the detector's overlay and the blur their real work.
//!
//! `--task track` adds `wgnntrack ! wgnnanalytics` (one line and one zone,
//! [`track::AnalyticsConfig`]) between the detector and the overlay; with
//! `--task detect,track` both run at each N and what tracking costs a
//! stream more is printed ([`track::track_over_detect`]). `--model` takes
//! any detector `wgnndetect` takes, an Ultralytics ONNX export with no
//! model-proc included. A model with random weights detects what it
//! detects on the photo: the objects per frame are reported beside the
//! costs, as the tracker's cost grows with them.

use std::path::PathBuf;
use std::process::ExitCode;

#[cfg(feature = "gst")]
use serde_json::json;

#[cfg(feature = "gst")]
use crate::cli::{fail, video_format, EXIT_NO_GPU};
use crate::cli::{precision_parser, Json, EXIT_USAGE};
use wgnn::ml::Precision;

#[cfg(feature = "gst")]
mod live;
#[cfg(feature = "gst")]
mod spread;
#[cfg(feature = "gst")]
mod stages;
#[cfg(feature = "gst")]
mod track;

/// Live streams through wgnn's GStreamer elements in one process, every
/// model element sharing one model instance (model-instance-id) and one
/// device: for each task in --task and each count in --streams, that many
/// pipelines of filesrc (the bundled astronaut photo) ! pngdec !
/// videoconvert ! videoscale ! imagefreeze is-live=true ! wgnnupload ! the
/// task's elements ! video/x-raw(memory:WgpuTexture) ! fakesink sync=true
/// qos=true max-lateness=20ms (with --queues: a queue after wgnnupload and
/// one before the sink; with --video: multifilesrc loop=true ! h264parse !
/// the decoder ! videoconvert ! videoscale ! videorate instead of the
/// photo). After every stream's first frames (at most
/// 5 s past the first, which builds the model) and a 2 s warm-up,
/// --seconds are measured: streams that kept the frame rate (within one
/// frame and 1%) with no frame dropped (QoS), fps, capture-to-sink
/// latency, the instance's mean batch and GPU ms per batch (profile on one
/// element) and per frame, the model's GPU busy % (batches times GPU ms
/// per batch over the window), host CPU per stream (user and system, % of
/// one core), queue submissions per frame (all the streams' GPU work; the
/// JSON also error scopes), objects (regions of interest) per frame out of
/// the model element, the precision the model computed in (precision-used), a
/// frame's mean host ms in each stage of the model elements (stage-ms:
/// tensorize, batch gather, model submit, waiting for the GPU's result,
/// decode/NMS, and the element's whole transform), RSS and wgnn's live GPU
/// memory. With detect and track both in --task: what track costs a stream
/// more at each N. With --gpus or --gpu: the streams spread round robin
/// over those GPUs, one model instance on each, and each GPU's streams
/// reported beside the total.
/// Needs the gst feature.
#[derive(clap::Args)]
// Without GStreamer the flags are parsed (the help lists them) but unused.
#[cfg_attr(not(feature = "gst"), allow(dead_code))]
pub struct Args {
    /// Stream counts, one run each in this process (e.g. 1,8,32,64).
    #[arg(long, default_value = "1,8,32,64", value_name = "N,...")]
    streams: String,
    /// The tasks, each run at every count (e.g. detect,track).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "segment")]
    task: Vec<Task>,
    /// Frames per dispatch of the shared instance (default: the
    /// stream count, at most 64).
    #[arg(long)]
    batch_size: Option<u32>,
    /// How long a partial batch waits for more frames, ms.
    #[arg(long, default_value_t = 10, value_name = "MS")]
    max_batch_latency: u32,
    /// Seconds measured (after the warm-up).
    #[arg(long, default_value_t = 10)]
    seconds: u32,
    #[arg(long, default_value_t = 1920)]
    width: u32,
    #[arg(long, default_value_t = 1080)]
    height: u32,
    /// Frames per second of every source.
    #[arg(long, default_value_t = 30)]
    fps: u32,
    /// Frame format of the sources (GStreamer name): NV12, RGBA, ...
    #[arg(long, default_value = "NV12")]
    format: String,
    /// The model (default: the bundled selfie model for segment, the
    /// MediaPipe short-range face detector for detect and track); for
    /// detect and track, any detector wgnndetect takes (an Ultralytics
    /// ONNX export needs no model-proc).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Spread the streams round robin over the first N adapters of
    /// `wgnn-bench adapters`, one model instance on each.
    #[arg(long, value_name = "N")]
    gpus: Option<u32>,
    /// Spread the streams over these adapters (comma-separated `gpu`
    /// values: indices, or pieces of a name or PCI bus id).
    #[arg(long, value_name = "GPU,...")]
    gpu: Option<String>,
    /// What the model elements compute in (their precision): auto, f32
    /// or f16; the table's prec column says what they used.
    #[arg(long, default_value = "auto", value_parser = precision_parser())]
    precision: Precision,
    /// A queue after wgnnupload and one before the sink, as live
    /// pipelines run: the sink's wait for each frame's running time plus
    /// the pipeline's latency then holds the queue's thread, not the one
    /// that uploads and infers.
    #[arg(long)]
    queues: bool,
    /// Each stream decodes this H.264 byte-stream file (Annex B, e.g.
    /// x264enc or openh264enc into h264parse) in a loop instead of
    /// repeating the bundled photo, so that the CPU column counts the
    /// decode.
    #[arg(long, value_name = "FILE.h264")]
    video: Option<PathBuf>,
    /// The GStreamer decoder of --video.
    #[arg(long, default_value = "avdec_h264", value_name = "ELEMENT")]
    decoder: String,
    /// Frames each model element has submitted before it waits for the
    /// oldest one's result (its frames-in-flight, 1 to 16).
    #[arg(long, default_value_t = 1, value_name = "N")]
    frames_in_flight: u32,
    #[command(flatten)]
    json: Json,
}

/// `--task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Task {
    /// Selfie segmentation + background blur (wgnnsegment effect=blur).
    Segment,
    /// Detection (faces, or --model's objects) + boxes drawn (wgnndetect !
    /// wgnnoverlay).
    Detect,
    /// Detection, tracking, one line and one zone counted, boxes drawn
    /// (wgnndetect ! wgnntrack ! wgnnanalytics ! wgnnoverlay).
    Track,
}

impl Args {
    #[cfg(not(feature = "gst"))]
    pub fn run(self) -> ExitCode {
        eprintln!(
            "error: wgnn-bench streams runs GStreamer elements; this build has no GStreamer \
             (built with --no-default-features)"
        );
        ExitCode::from(EXIT_USAGE)
    }

    #[cfg(feature = "gst")]
    pub fn run(self) -> ExitCode {
        let tasks = match self.options() {
            Ok(o) => o,
            Err(code) => return code,
        };
        let json = self.json.json;
        let gpus = match spread::open(self.gpus, self.gpu.as_deref()) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_NO_GPU);
            }
        };
        let devices: Vec<String> = gpus.iter().map(|g| g.describe()).collect();
        if !json {
            for d in &devices {
                println!("device: {d}");
            }
        }
        let mut reports = Vec::new();
        for options in &tasks {
            if !json {
                println!("{}", options.describe());
                println!("{}", live::RunReport::header());
            }
            // Rows print as each N finishes: the largest N may take a while
            // to start.
            let result = live::run(&gpus, options, |r| {
                if !json {
                    println!("{}", r.row());
                    if let Some(line) = spread::line(&r.per_gpu) {
                        println!("{line}");
                    }
                }
            });
            match result {
                Ok(r) => reports.extend(r),
                Err(e) => return fail("streams", e),
            }
        }
        let costs = track::track_over_detect(&reports);
        let missing = reports.first().map_or(&[][..], |r| &r.missing[..]);
        if json {
            let what: Vec<String> = tasks.iter().map(|o| o.describe()).collect();
            println!(
                "{}",
                json!({
                    "device": devices[0],
                    "devices": devices,
                    "what": what.join("; "),
                    "runs": reports.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                    "track_over_detect": costs.iter().map(|c| c.to_json()).collect::<Vec<_>>(),
                })
            );
            return ExitCode::SUCCESS;
        }
        if !costs.is_empty() {
            println!("track over detect, per stream:");
            println!("{}", track::TrackCost::header());
            for c in &costs {
                println!("{}", c.row());
            }
        }
        if !missing.is_empty() {
            println!(
                "n/a: these elements have no {} (built before shared model instances)",
                missing.join(", ")
            );
        }
        ExitCode::SUCCESS
    }

    /// The options of each task's runs, or the usage exit code after one
    /// line saying which flag is wrong (before any device or pipeline).
    #[cfg(feature = "gst")]
    fn options(&self) -> Result<Vec<live::Options>, ExitCode> {
        let usage = |e: String| {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        };
        let streams = live::parse_streams(&self.streams).map_err(usage)?;
        spread::check_flags(self.gpus, self.gpu.as_deref()).map_err(usage)?;
        let options = live::Options {
            streams,
            task: Task::Segment,
            batch_size: self.batch_size,
            max_batch_latency_ms: self.max_batch_latency,
            seconds: self.seconds,
            width: self.width,
            height: self.height,
            fps: self.fps,
            format: video_format(&self.format)?,
            model: self.model.clone(),
            precision: self.precision,
            queues: self.queues,
            video: self.video.clone(),
            decoder: self.decoder.clone(),
            frames_in_flight: self.frames_in_flight,
        };
        options.validate().map_err(usage)?;
        if self.model.is_some() && self.task.contains(&Task::Segment) && self.task.len() > 1 {
            return Err(usage(
                "--model: one model cannot be both the segmenter and the detector; run \
                 --task segment on its own"
                    .into(),
            ));
        }
        Ok(self
            .task
            .iter()
            .map(|&task| live::Options {
                task,
                ..options.clone()
            })
            .collect())
    }
}
