//! A video upscaled frame by frame into an H.264 file (High profile, 4:2:0),
//! written to the output's temporary file and moved into place when the
//! stream ends (or a signal ended it and the file was finalised).

use std::time::Instant;

use gst::prelude::*;
use wgnn::gst::app;

use crate::image_job::launch;
use crate::{element_line, fail, Args, Failure, Job};

pub fn run(args: &Args, job: Job) -> Result<u8, Failure> {
    let Some(output) = job.output else {
        return Err(fail(2, "a video needs an output file"));
    };
    let target = output.target().to_path_buf();
    let mux = app::Muxer::for_path(&target).ok_or_else(|| {
        fail(
            2,
            format!("-o {}: a video writes .mp4 or .mkv", target.display()),
        )
    })?;
    let quote =
        |p: &std::path::Path| format!("\"{}\"", p.display().to_string().replace('"', "\\\""));
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert ! {} ! {}",
        quote(args.input()),
        element_line(args, job.gpu.is_none(), &job.model),
        app::h264_file_tail(mux, &output.location())
    );
    let pipeline = launch(&desc, job.gpu.as_ref())?;
    app::fit_for_encoder(&pipeline, "wgnn-superres", mux);
    let sr = pipeline
        .by_name("sr")
        .ok_or_else(|| fail(1, "the pipeline has no wgnnsuperres"))?;
    if let Some(n) = args.frames {
        app::stop_after(&sr, n);
    }
    {
        let weak = pipeline.downgrade();
        job.interrupts
            .on_stop(format!("finalising {}", target.display()), move || {
                if let Some(p) = weak.upgrade() {
                    p.send_event(gst::event::Eos::new());
                }
            });
    }
    let progress = (!args.quiet).then(|| {
        let pb = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:30} {percent:>3}% {elapsed_precise} {msg}",
        ) {
            pb.set_style(style);
        }
        pb
    });
    let began = Instant::now();
    let bus = pipeline
        .bus()
        .ok_or_else(|| fail(1, "the pipeline has no bus"))?;
    let started = pipeline.set_state(gst::State::Playing);
    let outcome = loop {
        if let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(200)) {
            match msg.view() {
                gst::MessageView::Eos(_) => break Ok(()),
                gst::MessageView::Error(e) => {
                    // The path, not the name: decodebin's own children (typefind,
                    // demuxers) report errors about the input too.
                    let src = e
                        .src()
                        .map(|s| s.path_string().to_string())
                        .unwrap_or_default();
                    let text = app::bus_error_text(e);
                    break Err(if src.contains("filesrc") || src.contains("decodebin") {
                        fail(3, format!("cannot read {}: {text}", args.input().display()))
                    } else {
                        fail(1, text)
                    });
                }
                _ => {}
            }
        } else if started.is_err() {
            break Err(fail(1, "the pipeline failed to start"));
        }
        if let Some(pb) = &progress {
            if let (Some(pos), Some(dur)) = (
                pipeline.query_position::<gst::ClockTime>(),
                pipeline.query_duration::<gst::ClockTime>(),
            ) {
                pb.set_length(dur.mseconds());
                pb.set_position(pos.mseconds());
            }
            pb.set_message(format!("{} frames", sr.property::<u64>("frames")));
        }
    };
    if let Some(pb) = &progress {
        pb.finish_and_clear();
    }
    let _ = pipeline.set_state(gst::State::Null);
    job.interrupts.clear_stop();
    let frames = sr.property::<u64>("frames");
    // On failure the output is dropped: its temporary file goes, the target
    // stays as it was.
    outcome?;
    if frames == 0 {
        return Err(fail(
            3,
            format!(
                "{}: no frame was decoded; nothing written",
                args.input().display()
            ),
        ));
    }
    output
        .commit()
        .map_err(|e| fail(1, format!("cannot finish the output: {e}")))?;
    let secs = began.elapsed().as_secs_f64().max(1e-9);
    if !args.quiet {
        let used = crate::precision_used(&sr);
        if !used.is_empty() {
            eprintln!("wgnn-superres: precision {used}");
        }
        eprintln!(
            "wgnn-superres: {frames} frames in {secs:.2} s ({:.1} fps), per frame: up {} B, \
             down {} B; wrote {}",
            frames as f64 / secs,
            sr.property::<u64>("bytes-uploaded") / frames.max(1),
            sr.property::<u64>("bytes-downloaded") / frames.max(1),
            target.display()
        );
    }
    Ok(job.interrupts.exit_code().unwrap_or(0))
}
