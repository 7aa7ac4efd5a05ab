//! An image upscaled (or evaluated) through `appsrc ! wgnnsuperres !
//! appsink`, written to the output's temporary file and moved into place.

use std::path::Path;
use std::time::Instant;

use gst::prelude::*;
use wgnn::gst::app;

use crate::{element_line, fail, Args, Failure, Job};

/// The largest side of an upscaled image: 16384 is the largest 2D texture
/// most GPUs (and lavapipe) take, and 16384 x 16384 RGBA is already 1 GiB.
/// A GPU whose limit is lower lowers it.
pub const MAX_SIDE: u32 = 16384;

/// The output's width and height for an input of `w` x `h`.
/// (--eval upscales the image downscaled by --scale back to about its own
/// size, beside bicubic.)
fn output_size(args: &Args, w: u32, h: u32) -> (u64, u64) {
    let (w, h) = (u64::from(w), u64::from(h));
    if args.eval {
        return (2 * w, h);
    }
    let s = u64::from(args.scale);
    (w * s * if args.compare { 2 } else { 1 }, h * s)
}

/// The image's size from its header (nothing decoded), refused past the
/// image budget ([`wgnn::files::image_size`]) or when the upscaled image
/// would exceed [`MAX_SIDE`].
pub fn check_size(args: &Args) -> Result<(u32, u32), Failure> {
    let (w, h) = wgnn::files::image_size(args.input())
        .map_err(|e| fail(3, format!("cannot read {}: {e}", args.input().display())))?;
    if w == 0 || h == 0 {
        return Err(fail(
            3,
            format!("{} is empty ({w}x{h})", args.input().display()),
        ));
    }
    check_limit(args, w, h, MAX_SIDE)?;
    Ok((w, h))
}

fn check_limit(args: &Args, w: u32, h: u32, limit: u32) -> Result<(), Failure> {
    let (ow, oh) = output_size(args, w, h);
    if ow > u64::from(limit) || oh > u64::from(limit) {
        return Err(fail(
            3,
            format!(
                "{} is {w}x{h}: the output would be {ow}x{oh}, over the limit of {limit} pixels \
                 on a side",
                args.input().display(),
            ),
        ));
    }
    Ok(())
}

/// Parses `desc` and gives its elements `gpu` through the wgnn device context.
pub fn launch(desc: &str, gpu: Option<&wgnn::gpu::Gpu>) -> Result<gst::Pipeline, Failure> {
    let pipeline = gst::parse::launch(desc)
        .map_err(|e| fail(1, format!("cannot build the pipeline: {e}")))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| fail(1, "the launch line is not a pipeline"))?;
    if let Some(gpu) = gpu {
        pipeline.set_context(&wgnn::gst::device::context_for(gpu));
    }
    Ok(pipeline)
}

/// The pipeline's first error message, if one was posted.
fn bus_error(pipeline: &gst::Pipeline) -> Option<Failure> {
    let bus = pipeline.bus()?;
    while let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let gst::MessageView::Error(e) = msg.view() {
            let text = app::bus_error_text(e);
            let code = if e.error().matches(gst::ResourceError::NotFound) && text.contains("GPU") {
                4
            } else {
                1
            };
            return Some(fail(code, text));
        }
    }
    None
}

fn bus_failure(pipeline: &gst::Pipeline, fallback: &str) -> Failure {
    bus_error(pipeline).unwrap_or_else(|| fail(1, fallback))
}

/// Upscales one RGBA image; also says what the model computed in.
fn upscale(
    args: &Args,
    job: &Job,
    compare: bool,
    img: &image::RgbaImage,
) -> Result<(image::RgbaImage, String), Failure> {
    let (w, h) = img.dimensions();
    let mut line = element_line(args, job.gpu.is_none(), &job.model);
    if compare && !args.compare {
        line = line.replace("compare=false", "compare=true");
    }
    let desc = format!(
        "appsrc name=src format=time ! {line} ! appsink name=sink sync=false \
         caps=video/x-raw,format=RGBA"
    );
    let pipeline = launch(&desc, job.gpu.as_ref())?;
    let src = pipeline
        .by_name("src")
        .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
        .ok_or_else(|| fail(1, "the pipeline has no appsrc"))?;
    let sink = pipeline
        .by_name("sink")
        .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
        .ok_or_else(|| fail(1, "the pipeline has no appsink"))?;
    let caps = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, w, h)
        .fps(gst::Fraction::new(0, 1))
        .build()
        .map_err(|e| {
            fail(
                3,
                format!(
                    "{}: {w}x{h} is not a usable image size: {e}",
                    args.input().display()
                ),
            )
        })?
        .to_caps()
        .map_err(|e| fail(1, format!("no caps for {w}x{h} RGBA: {e}")))?;
    src.set_caps(Some(&caps));
    let mut buffer = gst::Buffer::from_slice(img.as_raw().clone());
    if let Some(b) = buffer.get_mut() {
        b.set_pts(gst::ClockTime::ZERO);
    }
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
        let row_bytes = ow as usize * 4;
        let mut out = Vec::with_capacity(row_bytes * oh as usize);
        for row in map.as_slice().chunks(stride).take(oh as usize) {
            out.extend_from_slice(row.get(..row_bytes).unwrap_or(row));
        }
        image::RgbaImage::from_raw(ow, oh, out).ok_or_else(|| fail(1, "short picture"))
    })();
    let _ = pipeline.set_state(gst::State::Null);
    let used = pipeline
        .by_name("sr")
        .map(|sr| crate::precision_used(&sr))
        .unwrap_or_default();
    Ok((result?, used))
}

/// Writes `img` to `temp` in the format `target`'s extension names.
fn save(img: &image::RgbaImage, temp: &Path, target: &Path) -> Result<(), Failure> {
    let ext = target
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let result = if ext == "jpg" || ext == "jpeg" {
        image::DynamicImage::ImageRgba8(img.clone())
            .to_rgb8()
            .save_with_format(temp, image::ImageFormat::Jpeg)
    } else {
        img.save_with_format(temp, image::ImageFormat::Png)
    };
    result.map_err(|e| fail(1, format!("cannot write {}: {e}", target.display())))
}

/// Saves `img` into the job's output and moves it into place.
fn finish(img: &image::RgbaImage, job: Job) -> Result<Option<std::path::PathBuf>, Failure> {
    let Some(out) = job.output else {
        return Ok(None);
    };
    let target = out.target().to_path_buf();
    save(img, &out.location(), &target)?;
    out.commit()
        .map_err(|e| fail(1, format!("cannot finish the output: {e}")))?;
    Ok(Some(target))
}

pub fn run(args: &Args, job: Job, (w, h): (u32, u32)) -> Result<u8, Failure> {
    if let Some(gpu) = &job.gpu {
        check_limit(
            args,
            w,
            h,
            gpu.limits().max_texture_dimension_2d.min(MAX_SIDE),
        )?;
    }
    let original = wgnn::files::decode_image(args.input())
        .map_err(|e| fail(3, format!("cannot read {}: {e}", args.input().display())))?
        .to_rgba8();
    if args.eval {
        return run_eval(args, job, &original);
    }
    let began = Instant::now();
    let (out, used) = upscale(args, &job, args.compare, &original)?;
    let quiet = args.quiet;
    let written = finish(&out, job)?;
    if !quiet {
        if !used.is_empty() {
            eprintln!("wgnn-superres: precision {used}");
        }
        eprintln!(
            "wgnn-superres: {}x{} -> {}x{} in {:.2} s, wrote {}",
            original.width(),
            original.height(),
            out.width(),
            out.height(),
            began.elapsed().as_secs_f64(),
            written.map(|p| p.display().to_string()).unwrap_or_default()
        );
    }
    Ok(0)
}

fn run_eval(args: &Args, job: Job, original: &image::RgbaImage) -> Result<u8, Failure> {
    let s = args.scale;
    let (w, h) = (original.width() / s * s, original.height() / s * s);
    if w < 16 * s || h < 16 * s {
        return Err(fail(
            3,
            format!(
                "--eval: {} is too small to downscale by {s}",
                args.input().display()
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
    let (both, used) = upscale(args, &job, true, &small)?;
    let took = began.elapsed();
    let bicubic = image::imageops::crop_imm(&both, 0, 0, w, h).to_image();
    let model = image::imageops::crop_imm(&both, w, 0, w, h).to_image();
    let shave = s as usize;
    let (bp, bs) = crate::metrics::compare(
        bicubic.as_raw(),
        reference.as_raw(),
        w as usize,
        h as usize,
        shave,
    );
    let (mp, ms) = crate::metrics::compare(
        model.as_raw(),
        reference.as_raw(),
        w as usize,
        h as usize,
        shave,
    );
    println!(
        "{}: {}x{} downscaled x{s} to {}x{}, upscaled back in {:.2} s",
        args.input().display(),
        w,
        h,
        w / s,
        h / s,
        took.as_secs_f64()
    );
    println!("{:<10} {:>9} {:>8}", "method", "PSNR dB", "SSIM");
    println!("{:<10} {:>9.2} {:>8.4}", "bicubic", bp, bs);
    println!("{:<10} {:>9.2} {:>8.4}", "model", mp, ms);
    if !used.is_empty() {
        println!("model precision: {used}");
    }
    if let Some(path) = finish(&both, job)? {
        eprintln!("wgnn-superres: wrote bicubic | model to {}", path.display());
    }
    Ok(0)
}
