//! wgnn-selfie: real-time selfie segmentation on a camera, a file or a test
//! pattern, to a window or a file. It only assembles a pipeline of the wgnn
//! elements (registered statically) and reports on it. Everything a user
//! names is checked before the pipeline starts, and the output is written
//! beside its target and moved into place at the end (wgnn::gst::app).

mod args;
mod plan;
mod stats;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use gst::prelude::*;
use wgnn::gst::app::{self, Interrupts, Output};

/// An error for the user, with the exit code documented in --help.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            message: message.into(),
        }
    }
    pub fn input(message: impl Into<String>) -> Failure {
        Failure {
            code: 3,
            message: message.into(),
        }
    }
    pub fn no_gpu(message: impl Into<String>) -> Failure {
        Failure {
            code: 4,
            message: message.into(),
        }
    }
    fn pipeline(message: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

fn main() -> ExitCode {
    let args = args::Args::parse();
    if let Some(what) = args.generate {
        return wgnn::manual::print(
            what,
            <args::Args as clap::CommandFactory>::command(),
            &args::SECTIONS,
        );
    }
    app::init_logger();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("wgnn-selfie: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// A bus error in words: about the input (exit 3) when a source or decoder
/// posted it about reading or recognising the file.
fn describe(e: &gst::message::Error, input: Option<&std::path::Path>) -> Failure {
    let text = app::bus_error_text(e);
    let src = e
        .src()
        .map(|s| s.path_string().to_string())
        .unwrap_or_default();
    let reading = e.error().matches(gst::ResourceError::NotFound)
        || e.error().matches(gst::ResourceError::OpenRead)
        || e.error().matches(gst::ResourceError::Read)
        || e.error().matches(gst::StreamError::TypeNotFound)
        || e.error().matches(gst::StreamError::WrongType)
        || e.error().matches(gst::StreamError::Decode)
        || e.error().matches(gst::StreamError::Demux);
    let from_source =
        src.contains("filesrc") || src.contains("v4l2src") || src.contains("decodebin");
    match input {
        Some(file) if reading && from_source => {
            Failure::input(format!("cannot read {}: {text}", file.display()))
        }
        None if reading && from_source => Failure::input(format!("cannot read the input: {text}")),
        _ => Failure::pipeline(text),
    }
}

/// The output the sink writes (none for a window or --null), created
/// beside its target now: its folder is checked, the lock taken.
fn prepare_output(
    sink: &plan::Sink,
    source: &plan::Source,
    interrupts: &Interrupts,
) -> Result<Option<Output>, Failure> {
    let (plan::Sink::Encoded(target, _) | plan::Sink::Pngs(target)) = sink else {
        return Ok(None);
    };
    if let Some(input) = &source.file {
        if app::same_file(input, target) {
            return Err(Failure::usage(format!(
                "--output {} is the input file; give another name",
                target.display()
            )));
        }
    }
    let out = if matches!(sink, plan::Sink::Pngs(_)) {
        Output::sequence(target)
    } else {
        Output::file(target)
    }
    .map_err(|e| Failure::usage(format!("--output: {e}")))?;
    for path in out.temporaries() {
        interrupts.remove_on_abandon(path);
    }
    Ok(Some(out))
}

/// The model the flags name, loaded once and checked against the effect.
fn check_model(args: &args::Args) -> Result<std::path::PathBuf, Failure> {
    let model_path = plan::model_of(args);
    let model = wgnn::models::load(&model_path)
        .map_err(|e| Failure::input(app::model_failure(&model_path, &e)))?;
    let options = wgnn::tasks::SegmentOptions::new(plan::task_effect(args)?);
    wgnn::tasks::Segmenter::check(&model, &options)
        .map_err(|e| Failure::input(app::model_failure(&model_path, &e)))?;
    Ok(model_path)
}

fn progress_bar(show: bool) -> Option<indicatif::ProgressBar> {
    show.then(|| {
        let pb = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:30} {percent:>3}% {elapsed_precise} {msg}",
        ) {
            pb.set_style(style);
        }
        pb
    })
}

/// Runs the pipeline to its end (EOS) or its first error, with statistics
/// (and the progress through a file) once a second.
fn watch(
    args: &args::Args,
    pipeline: &gst::Pipeline,
    stats: &mut stats::Stats,
    input: Option<&std::path::Path>,
) -> Result<(), Failure> {
    let progress = progress_bar(input.is_some() && !args.quiet);
    let bus = pipeline
        .bus()
        .ok_or_else(|| Failure::pipeline("the pipeline has no bus"))?;
    let result = pipeline.set_state(gst::State::Playing);
    let mut next_tick = Instant::now() + Duration::from_secs(1);
    let outcome = loop {
        if let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) {
            match msg.view() {
                gst::MessageView::Eos(_) => break Ok(()),
                gst::MessageView::Error(e) => break Err(describe(e, input)),
                gst::MessageView::Warning(w) if !args.quiet => {
                    eprintln!("wgnn-selfie: warning: {}", w.error().message());
                }
                _ => {}
            }
        } else if result.is_err() {
            break Err(Failure::pipeline("the pipeline failed to start"));
        }
        if Instant::now() >= next_tick {
            next_tick += Duration::from_secs(1);
            let tick = stats.tick();
            match &progress {
                Some(pb) => {
                    if let (Some(pos), Some(dur)) = (
                        pipeline.query_position::<gst::ClockTime>(),
                        pipeline.query_duration::<gst::ClockTime>(),
                    ) {
                        pb.set_length(dur.mseconds());
                        pb.set_position(pos.mseconds());
                    }
                    pb.set_message(tick.to_string());
                }
                None if !args.quiet => eprintln!("{tick}"),
                None => {}
            }
        }
    };
    if let Some(pb) = &progress {
        pb.finish_and_clear();
    }
    outcome
}

/// The summary after a job that ended well.
fn report(stats: &stats::Stats, seg: &gst::Element, model: &std::path::Path, on_cpu: bool) {
    eprintln!("wgnn-selfie: {}", stats.summary());
    // Which file ran: the bundled default is read from where wgnn is
    // installed (or $WGNN_ASSETS_DIR), worth seeing.
    eprintln!("wgnn-selfie: model {}", model.display());
    let used = seg
        .property::<Option<String>>("precision-used")
        .unwrap_or_default();
    if !used.is_empty() {
        eprintln!("wgnn-selfie: precision {used}");
    }
    if on_cpu {
        eprintln!("wgnn-selfie: ran on the CPU");
    }
}

fn run(args: &args::Args) -> Result<u8, Failure> {
    let interrupts = Interrupts::install("wgnn-selfie")
        .map_err(|e| Failure::pipeline(format!("cannot handle SIGINT/SIGTERM/SIGHUP: {e}")))?;
    // Everything the user named, checked before any work: the flags that
    // go together, the output's kind, the input, the output's folder, the
    // model and background.
    plan::check_combinations(args)?;
    let sink = plan::sink_of(args)?;
    let source = plan::source_of(args)?;
    let output = prepare_output(&sink, &source, &interrupts)?;
    let model_path = check_model(args)?;

    wgnn::gst::register_static()
        .map_err(|e| Failure::pipeline(format!("cannot register the wgnn elements: {e}")))?;
    // Opened once here and handed to the pipeline, so the elements do not
    // open a second device.
    let gpu = app::choose_device("wgnn-selfie", args.device).map_err(Failure::no_gpu)?;
    // lavapipe's timestamps measure nothing useful: time the element's wall
    // clock there instead.
    let gpu_timing = gpu.as_ref().is_some_and(|g| !g.is_software());
    let location = output.as_ref().map(Output::location);
    let description = plan::describe(
        args,
        &source,
        &sink,
        &plan::Settings {
            on_cpu: gpu.is_none(),
            profile: gpu_timing,
            model: &model_path,
            location: location.as_deref(),
        },
    );
    log::info!("pipeline: {description}");
    let pipeline = gst::parse::launch(&description)
        .map_err(|e| Failure::pipeline(format!("cannot build the pipeline: {e}")))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| Failure::pipeline("the launch line is not a pipeline"))?;
    if let Some(gpu) = &gpu {
        pipeline.set_context(&wgnn::gst::device::context_for(gpu));
    }
    if let plan::Sink::Encoded(_, mux) = &sink {
        app::fit_for_encoder(&pipeline, "wgnn-selfie", *mux);
    }
    let seg = pipeline
        .by_name("seg")
        .ok_or_else(|| Failure::pipeline("the pipeline has no wgnnsegment"))?;
    let mut stats = stats::Stats::new(&pipeline, &seg, gpu_timing);
    if let Some(n) = args.frames {
        app::stop_after(&seg, n);
    }
    {
        let weak = pipeline.downgrade();
        let finishing = match &output {
            Some(out) => format!("finalising {}", out.target().display()),
            None => "waiting for the frames in flight".to_string(),
        };
        interrupts.on_stop(finishing, move || {
            if let Some(p) = weak.upgrade() {
                p.send_event(gst::event::Eos::new());
            }
        });
    }

    let outcome = watch(args, &pipeline, &mut stats, source.file.as_deref());
    let _ = pipeline.set_state(gst::State::Null);
    interrupts.clear_stop();
    // On failure the output is dropped: its temporary file goes, the target
    // stays as it was.
    outcome?;
    let written = match output {
        Some(out) => {
            let target = out.target().to_path_buf();
            out.commit()
                .map_err(|e| Failure::pipeline(format!("cannot finish the output: {e}")))?;
            Some(target)
        }
        None => None,
    };
    if !args.quiet {
        report(&stats, &seg, &model_path, gpu.is_none());
        if let Some(target) = written {
            eprintln!("wgnn-selfie: wrote {}", target.display());
        }
    }
    Ok(interrupts.exit_code().unwrap_or(0))
}
