//! From the command line to a gst-launch description of our elements, with
//! every path checked first: the output's kind from its name, the input's
//! existence, then (in main) the output's folder and the model.

use std::path::{Path, PathBuf};

use wgnn::gst::app::{h264_file_tail, Muxer};

use crate::args::{Args, Effect};
use crate::Failure;

fn quoted(p: &Path) -> String {
    format!("\"{}\"", p.display().to_string().replace('"', "\\\""))
}

/// What is written without --output or a display.
const DEFAULT_OUTPUT: &str = "wgnn-selfie.mp4";

/// Where the frames go.
pub enum Sink {
    Window,
    Encoded(PathBuf, Muxer),
    Pngs(PathBuf),
    Null,
}

/// The sink the flags ask for; an output name of no known kind is a usage
/// error.
pub fn sink_of(args: &Args) -> Result<Sink, Failure> {
    if args.null {
        return Ok(Sink::Null);
    }
    if args.window {
        return Ok(Sink::Window);
    }
    let Some(out) = args.output.clone() else {
        let display = std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty());
        if display && !args.overwrite {
            return Ok(Sink::Window);
        }
        let default = PathBuf::from(DEFAULT_OUTPUT);
        // symlink_metadata: a dangling link there is something too.
        if std::fs::symlink_metadata(&default).is_ok() && !args.overwrite {
            return Err(Failure::usage(format!(
                "no display and no --output, and {DEFAULT_OUTPUT} exists: give --overwrite to \
                 replace it, or --output another name"
            )));
        }
        eprintln!("wgnn-selfie: no display and no --output: writing {DEFAULT_OUTPUT}");
        return Ok(Sink::Encoded(default, Muxer::Mp4));
    };
    let name = out.to_string_lossy().to_ascii_lowercase();
    if let Some(mux) = Muxer::for_path(&out) {
        Ok(Sink::Encoded(out, mux))
    } else if name.ends_with(".png") && name.contains('%') {
        Ok(Sink::Pngs(out))
    } else {
        Err(Failure::usage(format!(
            "--output {}: give FILE.mp4, FILE.mkv or a PNG sequence pattern like frames/%05d.png",
            out.display()
        )))
    }
}

/// Where the frames come from.
pub struct Source {
    parts: Vec<String>,
    /// A file input: progress is shown against its duration.
    pub file: Option<PathBuf>,
}

/// The source the flags ask for, checked: the camera device or the file
/// must exist and the file be readable.
pub fn source_of(args: &Args) -> Result<Source, Failure> {
    if let Some(dev) = &args.camera {
        if !dev.exists() {
            return Err(Failure::input(format!(
                "no camera at {}: the device does not exist (is a webcam connected? \
                 see `ls /dev/video*`)",
                dev.display()
            )));
        }
        // A camera is a character device; anything else (a FIFO would block
        // v4l2src's open) is refused.
        if !is_char_device(dev) {
            return Err(Failure::input(format!(
                "{} is not a camera: a camera is a device like /dev/video0",
                dev.display()
            )));
        }
        return Ok(Source {
            parts: vec![format!("v4l2src device={}", quoted(dev))],
            file: None,
        });
    }
    if args.test_pattern {
        let n = args
            .frames
            .map(|n| format!(" num-buffers={n}"))
            .unwrap_or_default();
        return Ok(Source {
            parts: vec![format!("videotestsrc pattern=ball{n}")],
            file: None,
        });
    }
    let file = args
        .input
        .clone()
        .unwrap_or_else(|| wgnn::assets_dir().join("samples/astronaut.mp4"));
    // A regular file only: a FIFO would block filesrc, a camera's device
    // is for --camera.
    if let Err(e) = wgnn::files::open_regular(&file) {
        let hint = if is_char_device(&file) {
            " (a camera is read with --camera)"
        } else {
            ""
        };
        return Err(Failure::input(format!(
            "cannot read {}: {e}{hint}",
            file.display()
        )));
    }
    Ok(Source {
        parts: vec![
            format!("filesrc location={}", quoted(&file)),
            "decodebin".into(),
        ],
        file: Some(file),
    })
}

fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

/// The segmentation model the flags name (the bundled one by default).
pub fn model_of(args: &Args) -> PathBuf {
    if args.landscape {
        wgnn::models::bundled("selfie/selfie_segmentation_landscape.tflite")
    } else {
        args.model
            .clone()
            .unwrap_or_else(|| wgnn::models::bundled("selfie/selfie_segmentation.tflite"))
    }
}

/// The blur's sigma when --blur is not given.
pub const DEFAULT_BLUR: f64 = 12.0;

/// Flags that only matter with another are refused without it, rather than
/// ignored.
pub fn check_combinations(args: &Args) -> Result<(), Failure> {
    if args.background.is_some() && args.effect != Effect::Replace {
        return Err(Failure::usage(
            "--background needs --effect replace; give both, or drop --background",
        ));
    }
    if args.blur.is_some() && args.effect != Effect::Blur {
        return Err(Failure::usage(
            "--blur sets the strength of --effect blur; drop it with another effect",
        ));
    }
    Ok(())
}

/// The effect as the task names it, for checking the model and background
/// before the pipeline starts.
pub fn task_effect(args: &Args) -> Result<wgnn::tasks::SegmentEffect, Failure> {
    use wgnn::tasks::SegmentEffect as Task;
    Ok(match args.effect {
        Effect::None => Task::None,
        Effect::Mask => Task::Mask,
        Effect::Blur => Task::Blur {
            strength: args.blur.unwrap_or(DEFAULT_BLUR) as f32,
        },
        Effect::Replace => Task::Replace(
            wgnn::tasks::BackgroundSpec::parse(args.background.as_deref().unwrap_or("green"))
                .map_err(|e| Failure::usage(format!("--background: {e}")))?,
        ),
    })
}

/// How the job runs, once everything is checked.
pub struct Settings<'a> {
    pub on_cpu: bool,
    /// Time the model with GPU timestamp queries (a hardware GPU only).
    pub profile: bool,
    pub model: &'a Path,
    /// Where the sink writes now (the temporary file or pattern).
    pub location: Option<&'a Path>,
}

/// The gst-launch description of the whole job.
pub fn describe(args: &Args, source: &Source, sink: &Sink, s: &Settings) -> String {
    let mut parts = source.parts.clone();
    parts.push("videoconvert".into());
    if let (Some(w), Some(h)) = (args.width, args.height) {
        parts.push("videoscale".into());
        parts.push(format!(
            "video/x-raw,width={w},height={h},pixel-aspect-ratio=1/1"
        ));
    }
    if !s.on_cpu {
        parts.push("wgnnupload name=upload".into());
    }
    let effect = match args.effect {
        Effect::Blur => "blur",
        Effect::Replace => "replace",
        Effect::Mask => "mask",
        Effect::None => "none",
    };
    let mut seg = format!(
        "wgnnsegment name=seg effect={effect} blur-strength={} smoothing={} device={} \
         precision={} profile={} model={}",
        args.blur.unwrap_or(DEFAULT_BLUR),
        args.smoothing,
        if s.on_cpu { "cpu" } else { "gpu" },
        args.precision,
        s.profile,
        quoted(s.model)
    );
    if let Some(b) = &args.background {
        seg += &format!(" background={}", quoted(Path::new(b)));
    }
    parts.push(seg);
    if !s.on_cpu && !matches!(sink, Sink::Window | Sink::Null) {
        parts.push("wgnndownload name=download".into());
    }
    let location = s.location.unwrap_or(Path::new("out"));
    match sink {
        Sink::Window => parts.push("wgnnsink name=sink".into()),
        Sink::Null => {
            // Named, so that the frames stay textures: a fakesink takes any
            // caps, and a GPU element downloads for a peer that does not
            // name memory:WgpuTexture.
            if !s.on_cpu {
                parts.push("video/x-raw(memory:WgpuTexture)".into());
            }
            parts.push("fakesink name=sink sync=false".into())
        }
        Sink::Encoded(_, mux) => parts.push(h264_file_tail(*mux, location)),
        Sink::Pngs(_) => {
            parts.push("videoconvert".into());
            parts.push("pngenc".into());
            parts.push(format!(
                "multifilesink name=sink location={}",
                quoted(location)
            ));
        }
    }
    parts.join(" ! ")
}
