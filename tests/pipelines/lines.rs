//! Every line in pipelines/ runs, so none rots. The swaps are the ones a
//! machine without camera or screen needs (see pipelines/README.md); the rest
//! of each line runs as written.

use crate::common;
use crate::common::broker::Broker;
use crate::common::harness::{description, expect_eos, launch, shared_device};

use std::path::Path;
use std::sync::atomic::{AtomicU16, Ordering};

use gst::prelude::*;

/// The port of the Mosquitto broker `every_pipeline_runs` starts, which
/// lines that publish to the local broker's default port are pointed at.
static BROKER_PORT: AtomicU16 = AtomicU16::new(1883);

/// Frames a camera, a decoded file or a longer test source stops after.
/// Software Vulkan is slow: a few frames show the line works, and four let
/// `inference-interval=3` run its model twice.
const FRAMES: u32 = 4;

/// The swaps for a machine with no camera and no screen, and paths made
/// absolute so that outputs land in `out`.
fn for_ci(desc: &str, root: &Path, out: &Path) -> String {
    desc.split(" ! ")
        .map(|element| {
            let name = element.split_whitespace().next().unwrap_or("");
            match name {
                "v4l2src" => format!("videotestsrc num-buffers={FRAMES} pattern=ball"),
                "wgnnsink" => format!("{element} offscreen=true"),
                "autovideosink" => "fakesink".to_string(),
                "decodebin" => format!("decodebin ! identity eos-after={FRAMES}"),
                _ => element
                    .split_whitespace()
                    .map(|w| match w.split_once('=') {
                        Some(("location", p)) if p.starts_with("assets/") => {
                            format!("location={}", root.join(p).display())
                        }
                        Some(("model", p))
                            if p.starts_with("assets/") || p.starts_with("tests/") =>
                        {
                            format!("model={}", root.join(p).display())
                        }
                        Some((key @ ("location" | "results-location" | "file-location"), p)) => {
                            format!("{key}={}", out.join(p).display())
                        }
                        // The local broker's default port: the test's broker.
                        Some(("address", "127.0.0.1:1883")) => {
                            format!("address=127.0.0.1:{}", BROKER_PORT.load(Ordering::SeqCst))
                        }
                        Some(("num-buffers", n)) if n.parse::<u32>().is_ok_and(|n| n > FRAMES) => {
                            format!("num-buffers={FRAMES}")
                        }
                        _ => w.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            }
        })
        .collect::<Vec<_>>()
        .join(" ! ")
}

fn run(file: &Path, root: &Path, out: &Path) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        text.lines().nth(1).is_some_and(|l| l.starts_with("# ")),
        "{}: the line after the shebang must say what the pipeline shows",
        file.display()
    );
    // A line that opens a window says so (it fails or crashes headless:
    // autovideosink segfaults without a display); every other line runs
    // headless as written.
    let comment: String = text
        .lines()
        .skip(1)
        .filter_map(|l| l.strip_prefix('#'))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let written = description(&text);
    let opens_window = written.split(" ! ").any(|e| {
        let name = e.split_whitespace().next().unwrap_or("");
        name == "wgnnsink" || name.ends_with("videosink") || name.ends_with("imagesink")
    });
    assert_eq!(
        opens_window,
        comment.contains("needs a display"),
        "{}: a line that opens a window, and only such a line, says it needs a display",
        file.display()
    );
    // MP4s play everywhere: 4:2:0 High profile, not the High 4:4:4 x264
    // picks from RGB.
    let elements: Vec<&str> = written.split(" ! ").collect();
    for (i, e) in elements.iter().enumerate() {
        if e.starts_with("x264enc") {
            let before = if i > 0 { elements[i - 1] } else { "" };
            let after = elements.get(i + 1).copied().unwrap_or("");
            assert!(
                before.contains("format=I420")
                    && after.starts_with("video/x-h264")
                    && after.contains("profile=high"),
                "{}: x264enc needs I420 before it and video/x-h264,profile=high after it",
                file.display()
            );
        }
    }
    let desc = for_ci(&written, root, out);
    eprintln!("{}: {desc}", file.display());
    let pipeline = launch(&desc);
    // One device for every line (see `shared_device`): the lines that run
    // the same model compile its kernels once.
    pipeline.set_context(&shared_device());
    pipeline.set_state(gst::State::Playing).unwrap();
    expect_eos(&pipeline, 600, &file.display().to_string());
    let wgnn: Vec<gst::Element> = pipeline
        .iterate_elements()
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.factory().is_some_and(|f| f.name().starts_with("wgnn")))
        .collect();
    for e in &wgnn {
        assert!(
            e.property::<u64>("frames") > 0,
            "{}: {} saw no frames",
            file.display(),
            e.name()
        );
    }
    if !desc.contains("wgnndownload") && !desc.contains("device=cpu") {
        // Analysers read back their results (a few hundred bytes a frame),
        // never a frame: the smallest frame here is 160x120 RGBA, 76 KB.
        const RESULTS_PER_FRAME: u64 = 8 * 1024;
        for e in &wgnn {
            let downloaded = e.property::<u64>("bytes-downloaded");
            let factory = e
                .factory()
                .map(|f| f.name().to_string())
                .unwrap_or_default();
            let allowed = match factory.as_str() {
                "wgnndetect" | "wgnnclassify" => RESULTS_PER_FRAME * e.property::<u64>("frames"),
                _ => 0,
            };
            assert!(
                downloaded <= allowed,
                "{}: GPU-only chain: {} downloaded {downloaded} bytes (allowed {allowed})",
                file.display(),
                e.name()
            );
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    for w in desc.split_whitespace() {
        if let Some(p) = w
            .strip_prefix("location=")
            .or_else(|| w.strip_prefix("results-location="))
            .or_else(|| w.strip_prefix("file-location="))
        {
            let p = Path::new(p);
            if p.starts_with(out) {
                let len = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                assert!(
                    len > 0,
                    "{}: {} was not written",
                    file.display(),
                    p.display()
                );
            }
        }
    }
}

#[test]
fn every_pipeline_runs() {
    wgnn::gst::register_static().unwrap();
    let root = common::root();
    let out = std::env::temp_dir().join(format!("wgnn-pipelines-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(root.join("pipelines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "pipelines/ holds {} lines", files.len());
    // wgnnpublish refuses to start without its broker, so the MQTT line
    // running to its end shows that it connected and published.
    let broker = Broker::start(&out);
    BROKER_PORT.store(broker.port, Ordering::SeqCst);
    for f in &files {
        run(f, &root, &out);
    }
    drop(broker);
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn the_swaps_keep_the_rest_of_the_line() {
    let d = description(
        "#!/bin/sh\n# x\ngst-launch-1.0 -e v4l2src device=/dev/video0 ! videoconvert ! \\\n    wgnnsink fullscreen=true\n",
    );
    assert_eq!(
        d,
        "v4l2src device=/dev/video0 ! videoconvert ! wgnnsink fullscreen=true"
    );
    let ci = for_ci(&d, Path::new("/r"), Path::new("/o"));
    assert_eq!(
        ci,
        format!(
            "videotestsrc num-buffers={FRAMES} pattern=ball ! videoconvert ! wgnnsink fullscreen=true \
             offscreen=true"
        )
    );
}
