//! wgnn-selfie: real-time selfie segmentation on a camera, a file or a test
//! pattern, to a window or a file. It only assembles a pipeline of the wgnn
//! elements (registered statically) and reports on it.

mod args;
mod plan;
mod stats;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use gst::prelude::*;

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
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("wgnn-selfie: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// An error message from the bus, in words, and whether it is about the input.
fn describe(e: &gst::message::Error) -> (String, bool) {
    let src = e
        .src()
        .map(|s| s.path_string().to_string())
        .unwrap_or_default();
    let input = e.error().matches(gst::ResourceError::NotFound)
        || e.error().matches(gst::ResourceError::OpenRead)
        || e.error().matches(gst::StreamError::TypeNotFound)
        || e.error().matches(gst::StreamError::WrongType);
    let from_source =
        src.contains("filesrc") || src.contains("v4l2src") || src.contains("decodebin");
    let debug = e.debug().map(|d| format!("\n  ({d})")).unwrap_or_default();
    (format!("{src}: {}{debug}", e.error()), input && from_source)
}

fn run(args: &args::Args) -> Result<u8, Failure> {
    wgnn::gst::register_static()
        .map_err(|e| Failure::pipeline(format!("cannot register the wgnn elements: {e}")))?;
    // Opened once here and handed to the pipeline, so the elements do not
    // open a second device (nor warn twice about a software adapter).
    let gpu = match args.device {
        args::Device::Cpu => None,
        _ => wgnn::gpu::Gpu::new().ok(),
    };
    let plan = plan::plan(args, gpu.is_some())?;
    log::info!("pipeline: {}", plan.description);
    let pipeline = gst::parse::launch(&plan.description)
        .map_err(|e| Failure::pipeline(format!("cannot build the pipeline: {e}")))?
        .downcast::<gst::Pipeline>()
        .expect("a launch line of several elements is a pipeline");
    if let Some(gpu) = &gpu {
        pipeline.set_context(&wgnn::gst::device::context_for(gpu));
    }
    let mut stats = stats::Stats::new(&pipeline);
    if let Some(n) = args.frames {
        let seg = pipeline
            .by_name("seg")
            .expect("the plan names wgnnsegment seg");
        wgnn::gst::app::stop_after(&seg, n);
    }

    let interrupts = Arc::new(AtomicU32::new(0));
    {
        let interrupts = interrupts.clone();
        let weak = pipeline.downgrade();
        let _ = ctrlc::set_handler(move || {
            // First Ctrl-C: end the stream so the muxer finalises the file;
            // a second one gives up at once.
            if interrupts.fetch_add(1, Ordering::SeqCst) == 0 {
                if let Some(p) = weak.upgrade() {
                    p.send_event(gst::event::Eos::new());
                }
            } else {
                std::process::exit(130);
            }
        });
    }

    let progress = (plan.file_input && !args.quiet).then(|| {
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {percent:>3}% {elapsed_precise} {msg}",
            )
            .expect("a valid template"),
        );
        pb
    });

    let bus = pipeline.bus().expect("a pipeline has a bus");
    let result = pipeline.set_state(gst::State::Playing);
    let mut next_tick = Instant::now() + Duration::from_secs(1);
    let outcome = loop {
        if let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) {
            match msg.view() {
                gst::MessageView::Eos(_) => break Ok(()),
                gst::MessageView::Error(e) => {
                    let (text, about_input) = describe(e);
                    break Err(if about_input {
                        Failure::input(format!("cannot read the input: {text}"))
                    } else {
                        Failure::pipeline(text)
                    });
                }
                gst::MessageView::Warning(w) if !args.quiet => {
                    eprintln!("wgnn-selfie: warning: {}", w.error());
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
    let _ = pipeline.set_state(gst::State::Null);
    outcome?;
    if !args.quiet {
        eprintln!("wgnn-selfie: {}", stats.summary());
        if plan.on_cpu {
            eprintln!("wgnn-selfie: ran on the CPU");
        }
        if let Some(out) = &plan.output {
            eprintln!("wgnn-selfie: wrote {}", out.display());
        }
    }
    Ok(if interrupts.load(Ordering::SeqCst) > 0 {
        130
    } else {
        0
    })
}
