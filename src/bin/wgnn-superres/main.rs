//! wgnn-superres: ESRGAN-slim super-resolution of an image or a video with
//! the `wgnnsuperres` element (registered statically), side by side with
//! bicubic on request, and PSNR/SSIM against the original with `--eval`.

mod metrics;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use gst::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Device {
    Auto,
    Gpu,
    Cpu,
}

/// Super-resolution of an image (PNG/JPEG) or a video file with ESRGAN-slim.
///
/// Exit codes: 0 done, 1 the pipeline failed, 2 bad command line, 3 the
/// input cannot be read, 4 no GPU (with --device gpu).
#[derive(Debug, Parser)]
#[command(name = "wgnn-superres", version)]
struct Args {
    /// Image (PNG, JPEG) or video (anything GStreamer decodes).
    input: PathBuf,
    /// Output: an image (.png, .jpg) for an image input; .mp4 or .mkv for a
    /// video. Default: INPUT's name with _x<scale> (.png or .mp4).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Upscaling factor.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=4))]
    scale: u32,
    /// Side by side: bicubic on the left, the model on the right.
    #[arg(long)]
    compare: bool,
    /// Evaluate on an image: downscale it by --scale, upscale it back with
    /// bicubic and with the model, and print PSNR/SSIM of both against the
    /// original (luma, border of --scale pixels left out).
    #[arg(long)]
    eval: bool,
    /// Another super-resolution model (TF.js model.json or TFLite).
    #[arg(long)]
    model: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    device: Device,
    /// Stop a video after N frames.
    #[arg(long)]
    frames: Option<u64>,
    /// No progress bar or summary.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Debug)]
struct Failure {
    code: u8,
    message: String,
}

fn fail(code: u8, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("wgnn-superres: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn is_image(path: &Path) -> bool {
    image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .is_ok_and(|r| r.format().is_some())
}

fn element_line(args: &Args) -> String {
    let device = match args.device {
        Device::Auto => "auto",
        Device::Gpu => "gpu",
        Device::Cpu => "cpu",
    };
    let model = args
        .model
        .as_ref()
        .map(|m| {
            format!(
                " model=\"{}\"",
                m.display().to_string().replace('"', "\\\"")
            )
        })
        .unwrap_or_default();
    format!(
        "wgnnsuperres name=sr scale={} compare={} device={device}{model}",
        args.scale, args.compare
    )
}

fn run(args: &Args) -> Result<(), Failure> {
    wgnn::gst::register_static()
        .map_err(|e| fail(1, format!("cannot register the wgnn elements: {e}")))?;
    if let Err(e) = std::fs::File::open(&args.input) {
        return Err(fail(
            3,
            format!("cannot read {}: {e}", args.input.display()),
        ));
    }
    // Opened once here and handed to the pipeline, so the element does not
    // open a second device (nor warn twice about a software adapter).
    let gpu = match args.device {
        Device::Cpu => None,
        Device::Gpu => {
            Some(wgnn::gpu::Gpu::new().map_err(|e| fail(4, format!("--device gpu: {e}")))?)
        }
        Device::Auto => wgnn::gpu::Gpu::new().ok(),
    };
    let gpu = gpu.as_ref();
    let image = is_image(&args.input);
    if args.eval && !image {
        return Err(fail(
            2,
            format!(
                "--eval needs an image (PNG or JPEG); {} is not one",
                args.input.display()
            ),
        ));
    }
    if args.eval && args.compare {
        return Err(fail(
            2,
            "--eval already compares with bicubic; drop --compare",
        ));
    }
    if image {
        run_image(args, gpu)
    } else {
        run_video(args, gpu)
    }
}

/// Parses `desc` and gives its elements `gpu` through the wgnn device context.
fn launch(desc: &str, gpu: Option<&wgnn::gpu::Gpu>) -> Result<gst::Pipeline, Failure> {
    let pipeline = gst::parse::launch(desc)
        .map_err(|e| fail(1, format!("cannot build the pipeline: {e}")))?
        .downcast::<gst::Pipeline>()
        .expect("a launch line of several elements is a pipeline");
    if let Some(gpu) = gpu {
        pipeline.set_context(&wgnn::gst::device::context_for(gpu));
    }
    Ok(pipeline)
}

fn default_output(input: &Path, scale: u32, ext: &str) -> PathBuf {
    let stem = input.file_stem().unwrap_or_default().to_string_lossy();
    PathBuf::from(format!("{stem}_x{scale}.{ext}"))
}

/// Upscales one RGBA image through `appsrc ! wgnnsuperres ! appsink`.
fn upscale(
    args: &Args,
    gpu: Option<&wgnn::gpu::Gpu>,
    compare: bool,
    img: &image::RgbaImage,
) -> Result<image::RgbaImage, Failure> {
    let (w, h) = img.dimensions();
    let mut line = element_line(args);
    if compare && !args.compare {
        line = line.replace("compare=false", "compare=true");
    }
    let desc = format!(
        "appsrc name=src format=time ! {line} ! appsink name=sink sync=false \
         caps=video/x-raw,format=RGBA"
    );
    let pipeline = launch(&desc, gpu)?;
    let src = pipeline
        .by_name("src")
        .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
        .expect("the line names its appsrc");
    let sink = pipeline
        .by_name("sink")
        .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
        .expect("the line names its appsink");
    let caps = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, w, h)
        .fps(gst::Fraction::new(0, 1))
        .build()
        .map_err(|e| {
            fail(
                3,
                format!(
                    "{}: {w}x{h} is not a usable image size: {e}",
                    args.input.display()
                ),
            )
        })?
        .to_caps()
        .expect("RGBA video info has caps");
    src.set_caps(Some(&caps));
    let mut buffer = gst::Buffer::from_slice(img.as_raw().clone());
    buffer.get_mut().unwrap().set_pts(gst::ClockTime::ZERO);
    let result = (|| {
        pipeline
            .set_state(gst::State::Playing)
            .map_err(|_| bus_failure(&pipeline, "the pipeline failed to start"))?;
        src.push_buffer(buffer)
            .map_err(|e| bus_failure(&pipeline, &format!("the image was refused: {e:?}")))?;
        let _ = src.end_of_stream();
        let sample = loop {
            if let Some(s) = sink.try_pull_sample(gst::ClockTime::from_mseconds(100)) {
                break s;
            }
            if sink.is_eos() {
                return Err(bus_failure(
                    &pipeline,
                    "the pipeline ended without a picture",
                ));
            }
            if let Some(f) = bus_error(&pipeline) {
                return Err(f);
            }
        };
        let info = sample
            .caps()
            .and_then(|c| gst_video::VideoInfo::from_caps(c).ok())
            .ok_or_else(|| fail(1, "the upscaled picture has no video caps"))?;
        let map = sample
            .buffer()
            .and_then(|b| b.map_readable().ok())
            .ok_or_else(|| fail(1, "cannot read the upscaled picture"))?;
        let (ow, oh) = (info.width(), info.height());
        let stride = info.stride()[0] as usize;
        let mut out = Vec::with_capacity((ow * oh * 4) as usize);
        for row in map.as_slice().chunks(stride).take(oh as usize) {
            out.extend_from_slice(&row[..ow as usize * 4]);
        }
        image::RgbaImage::from_raw(ow, oh, out).ok_or_else(|| fail(1, "short picture"))
    })();
    let _ = pipeline.set_state(gst::State::Null);
    result
}

/// The pipeline's first error message, if one was posted.
fn bus_error(pipeline: &gst::Pipeline) -> Option<Failure> {
    let bus = pipeline.bus()?;
    while let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let gst::MessageView::Error(e) = msg.view() {
            let debug = e.debug().map(|d| format!(" ({d})")).unwrap_or_default();
            let code = if e.error().matches(gst::ResourceError::NotFound)
                && e.error().to_string().contains("GPU")
            {
                4
            } else {
                1
            };
            return Some(fail(code, format!("{}{debug}", e.error())));
        }
    }
    None
}

fn bus_failure(pipeline: &gst::Pipeline, fallback: &str) -> Failure {
    bus_error(pipeline).unwrap_or_else(|| fail(1, fallback))
}

fn save(img: &image::RgbaImage, path: &Path) -> Result<(), Failure> {
    let lower = path.to_string_lossy().to_ascii_lowercase();
    let result = if lower.ends_with(".jpg") || lower.ends_with(".jpeg") {
        image::DynamicImage::ImageRgba8(img.clone())
            .to_rgb8()
            .save(path)
    } else if lower.ends_with(".png") {
        img.save(path)
    } else {
        return Err(fail(
            2,
            format!("-o {}: an image input writes .png or .jpg", path.display()),
        ));
    };
    result.map_err(|e| fail(1, format!("cannot write {}: {e}", path.display())))
}

fn run_image(args: &Args, gpu: Option<&wgnn::gpu::Gpu>) -> Result<(), Failure> {
    let original = image::open(&args.input)
        .map_err(|e| fail(3, format!("cannot read {}: {e}", args.input.display())))?
        .to_rgba8();
    let began = Instant::now();
    if args.eval {
        return run_eval(args, gpu, &original);
    }
    let out = upscale(args, gpu, args.compare, &original)?;
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.input, args.scale, "png"));
    save(&out, &path)?;
    if !args.quiet {
        eprintln!(
            "wgnn-superres: {}x{} -> {}x{} in {:.2} s, wrote {}",
            original.width(),
            original.height(),
            out.width(),
            out.height(),
            began.elapsed().as_secs_f64(),
            path.display()
        );
    }
    Ok(())
}

fn run_eval(
    args: &Args,
    gpu: Option<&wgnn::gpu::Gpu>,
    original: &image::RgbaImage,
) -> Result<(), Failure> {
    let s = args.scale;
    let (w, h) = (original.width() / s * s, original.height() / s * s);
    if w < 16 * s || h < 16 * s {
        return Err(fail(
            3,
            format!(
                "--eval: {} is too small to downscale by {s}",
                args.input.display()
            ),
        ));
    }
    let reference = image::imageops::crop_imm(original, 0, 0, w, h).to_image();
    // Catmull-Rom with antialiasing, like MATLAB's imresize that SR benchmarks use.
    let small = image::imageops::resize(
        &reference,
        w / s,
        h / s,
        image::imageops::FilterType::CatmullRom,
    );
    let began = Instant::now();
    let both = upscale(args, gpu, true, &small)?;
    let took = began.elapsed();
    let bicubic = image::imageops::crop_imm(&both, 0, 0, w, h).to_image();
    let model = image::imageops::crop_imm(&both, w, 0, w, h).to_image();
    let shave = s as usize;
    let (bp, bs) = metrics::compare(
        bicubic.as_raw(),
        reference.as_raw(),
        w as usize,
        h as usize,
        shave,
    );
    let (mp, ms) = metrics::compare(
        model.as_raw(),
        reference.as_raw(),
        w as usize,
        h as usize,
        shave,
    );
    println!(
        "{}: {}x{} downscaled x{s} to {}x{}, upscaled back in {:.2} s",
        args.input.display(),
        w,
        h,
        w / s,
        h / s,
        took.as_secs_f64()
    );
    println!("{:<10} {:>9} {:>8}", "method", "PSNR dB", "SSIM");
    println!("{:<10} {:>9.2} {:>8.4}", "bicubic", bp, bs);
    println!("{:<10} {:>9.2} {:>8.4}", "model", mp, ms);
    if let Some(path) = &args.output {
        save(&both, path)?;
        eprintln!("wgnn-superres: wrote bicubic | model to {}", path.display());
    }
    Ok(())
}

fn run_video(args: &Args, gpu: Option<&wgnn::gpu::Gpu>) -> Result<(), Failure> {
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&args.input, args.scale, "mp4"));
    let lower = path.to_string_lossy().to_ascii_lowercase();
    let mux = if lower.ends_with(".mp4") {
        "mp4mux"
    } else if lower.ends_with(".mkv") {
        "matroskamux"
    } else {
        return Err(fail(
            2,
            format!("-o {}: a video input writes .mp4 or .mkv", path.display()),
        ));
    };
    let quote = |p: &Path| format!("\"{}\"", p.display().to_string().replace('"', "\\\""));
    // x264 needs even sizes; the scaler rounds an odd output down by a pixel.
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert ! {} ! videoconvert ! \
         video/x-raw,format=I420 ! x264enc tune=zerolatency speed-preset=faster ! {mux} ! \
         filesink location={}",
        quote(&args.input),
        element_line(args),
        quote(&path)
    );
    let pipeline = launch(&desc, gpu)?;
    let sr = pipeline
        .by_name("sr")
        .expect("the line names wgnnsuperres sr");
    if let Some(n) = args.frames {
        wgnn::gst::app::stop_after(&sr, n);
    }
    let progress = (!args.quiet).then(|| {
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {percent:>3}% {elapsed_precise} {msg}",
            )
            .expect("a valid template"),
        );
        pb
    });
    let began = Instant::now();
    let bus = pipeline.bus().expect("a pipeline has a bus");
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
                    let debug = e.debug().map(|d| format!(" ({d})")).unwrap_or_default();
                    let code = if src.contains("filesrc") || src.contains("decodebin") {
                        3
                    } else {
                        1
                    };
                    break Err(fail(code, format!("{src}: {}{debug}", e.error())));
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
    let frames = sr.property::<u64>("frames");
    if outcome.is_err() && frames == 0 {
        // The sink opened the file before the input failed to decode: an
        // empty, unplayable file would only mislead.
        let _ = std::fs::remove_file(&path);
    }
    outcome?;
    let secs = began.elapsed().as_secs_f64().max(1e-9);
    if !args.quiet {
        eprintln!(
            "wgnn-superres: {frames} frames in {secs:.2} s ({:.1} fps), per frame: up {} B, \
             down {} B; wrote {}",
            frames as f64 / secs,
            sr.property::<u64>("bytes-uploaded") / frames.max(1),
            sr.property::<u64>("bytes-downloaded") / frames.max(1),
            path.display()
        );
    }
    Ok(())
}
