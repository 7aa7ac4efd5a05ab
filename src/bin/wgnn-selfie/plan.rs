//! From the command line to a gst-launch description of our elements.

use std::path::{Path, PathBuf};

use crate::args::{Args, Device, Effect};
use crate::Failure;

/// What the run will do.
#[derive(Debug)]
pub struct Plan {
    pub description: String,
    /// A file input: progress is shown against its duration.
    pub file_input: bool,
    pub output: Option<PathBuf>,
    pub on_cpu: bool,
}

fn quoted(p: &Path) -> String {
    format!("\"{}\"", p.display().to_string().replace('"', "\\\""))
}

enum Sink {
    Window,
    Encoded(PathBuf, &'static str),
    Pngs(PathBuf),
    Null,
}

fn sink_of(args: &Args) -> Result<Sink, Failure> {
    if args.null {
        return Ok(Sink::Null);
    }
    if args.window {
        return Ok(Sink::Window);
    }
    let Some(out) = args.output.clone() else {
        let display = std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty());
        return Ok(if display {
            Sink::Window
        } else {
            eprintln!("wgnn-selfie: no display and no --output: writing wgnn-selfie.mp4");
            Sink::Encoded("wgnn-selfie.mp4".into(), "mp4mux")
        });
    };
    let name = out.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".mp4") {
        Ok(Sink::Encoded(out, "mp4mux"))
    } else if name.ends_with(".mkv") {
        Ok(Sink::Encoded(out, "matroskamux"))
    } else if name.ends_with(".png") && name.contains('%') {
        Ok(Sink::Pngs(out))
    } else {
        Err(Failure::usage(format!(
            "--output {}: give FILE.mp4, FILE.mkv or a PNG sequence pattern like frames/%05d.png",
            out.display()
        )))
    }
}

/// Builds the pipeline description; `gpu_ok` says whether a GPU adapter was found.
pub fn plan(args: &Args, gpu_ok: bool) -> Result<Plan, Failure> {
    let on_cpu = match args.device {
        Device::Cpu => true,
        Device::Gpu if !gpu_ok => {
            return Err(Failure::no_gpu(
                "--device gpu: no GPU adapter found (install mesa-vulkan-drivers for a \
                 software one, or use --device cpu)",
            ))
        }
        Device::Gpu => false,
        Device::Auto => {
            if !gpu_ok {
                eprintln!("wgnn-selfie: warning: no GPU adapter, running on the CPU");
            }
            !gpu_ok
        }
    };
    if !(0.0..=0.95).contains(&args.smoothing) {
        return Err(Failure::usage(format!(
            "--smoothing {}: must be between 0 and 0.95",
            args.smoothing
        )));
    }
    if !(0.5..=64.0).contains(&args.blur) {
        return Err(Failure::usage(format!(
            "--blur {}: must be between 0.5 and 64",
            args.blur
        )));
    }
    let sink = sink_of(args)?;
    let mut file_input = false;
    let mut parts: Vec<String> = Vec::new();
    if let Some(dev) = &args.camera {
        if !dev.exists() {
            return Err(Failure::input(format!(
                "no camera at {}: the device does not exist (is a webcam connected? \
                 see `ls /dev/video*`)",
                dev.display()
            )));
        }
        parts.push(format!("v4l2src device={}", quoted(dev)));
    } else if args.test_pattern {
        let n = args
            .frames
            .map(|n| format!(" num-buffers={n}"))
            .unwrap_or_default();
        parts.push(format!("videotestsrc pattern=ball{n}"));
    } else {
        let file = args
            .input
            .clone()
            .unwrap_or_else(|| wgnn::assets_dir().join("samples/astronaut.mp4"));
        if let Err(e) = std::fs::File::open(&file) {
            return Err(Failure::input(format!(
                "cannot read {}: {e}",
                file.display()
            )));
        }
        if file.is_dir() {
            return Err(Failure::input(format!(
                "cannot read {}: it is a directory",
                file.display()
            )));
        }
        file_input = true;
        parts.push(format!("filesrc location={}", quoted(&file)));
        parts.push("decodebin".into());
    }
    parts.push("videoconvert".into());
    if let (Some(w), Some(h)) = (args.width, args.height) {
        parts.push("videoscale".into());
        parts.push(format!(
            "video/x-raw,width={w},height={h},pixel-aspect-ratio=1/1"
        ));
    }
    if !on_cpu {
        parts.push("wgnnupload name=upload".into());
    }
    let effect = match args.effect {
        Effect::Blur => "blur",
        Effect::Replace => "replace",
        Effect::Mask => "mask",
        Effect::None => "none",
    };
    let mut seg = format!(
        "wgnnsegment name=seg effect={effect} blur-strength={} smoothing={} device={} profile={}",
        args.blur,
        args.smoothing,
        if on_cpu { "cpu" } else { "gpu" },
        !on_cpu
    );
    if let Some(b) = &args.background {
        seg += &format!(" background={}", quoted(Path::new(b)));
    }
    let model = if args.landscape {
        Some(wgnn::models::bundled(
            "selfie/selfie_segmentation_landscape.tflite",
        ))
    } else {
        args.model.clone()
    };
    if let Some(m) = model {
        seg += &format!(" model={}", quoted(&m));
    }
    parts.push(seg);
    let download = if on_cpu {
        None
    } else {
        Some("wgnndownload name=download")
    };
    let mut output = None;
    match sink {
        Sink::Window => parts.push("wgnnsink name=sink".into()),
        Sink::Null => parts.push("fakesink name=sink sync=false".into()),
        Sink::Encoded(path, mux) => {
            parts.extend(download.map(String::from));
            parts.push("videoconvert".into());
            parts.push("x264enc tune=zerolatency speed-preset=veryfast".into());
            parts.push("h264parse".into());
            parts.push(mux.into());
            parts.push(format!("filesink name=sink location={}", quoted(&path)));
            output = Some(path);
        }
        Sink::Pngs(pattern) => {
            parts.extend(download.map(String::from));
            parts.push("videoconvert".into());
            parts.push("pngenc".into());
            parts.push(format!(
                "multifilesink name=sink location={}",
                quoted(&pattern)
            ));
            output = Some(pattern);
        }
    }
    Ok(Plan {
        description: parts.join(" ! "),
        file_input,
        output,
        on_cpu,
    })
}
