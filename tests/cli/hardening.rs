//! What a hostile user tries (issue 45): printf patterns as PNG sequence
//! names, FIFOs and devices where files are expected, a default output that
//! exists, decompression bombs, outputs that are links to devices, two jobs
//! on one output, flags that only matter with another. Each is refused
//! before work starts, in one line, or handled as the README says.

use crate::common;
use crate::common::png_header_only;
use crate::files::{assert_clean, leftovers, one_line, wait_for_output, Kept};

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SELFIE: &str = env!("CARGO_BIN_EXE_wgnn-selfie");
const SUPERRES: &str = env!("CARGO_BIN_EXE_wgnn-superres");

/// Runs `exe` in `cwd` with no display, killed (and the test failed) if it
/// has not ended within a minute: a job blocked on a FIFO never would.
fn run_in(exe: &str, cwd: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "warn")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} still ran after a minute (blocked?): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "{args:?} -> {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A refusal: exit `code`, one clean line containing `says`, in well under
/// the time any work takes.
fn refused(exe: &str, cwd: &Path, args: &[&str], code: i32, says: &str) {
    let began = Instant::now();
    let out = run_in(exe, cwd, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert_clean(&stderr);
    let line = one_line(&stderr);
    assert!(line.contains(says), "{args:?}: '{says}' not in: {line}");
    assert!(began.elapsed() < Duration::from_secs(30), "{args:?}");
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// A tiny PNG picture.
fn small_png(path: &Path) {
    image::RgbaImage::from_pixel(8, 8, image::Rgba([200, 40, 40, 255]))
        .save(path)
        .unwrap();
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_png_pattern_takes_exactly_one_frame_number() {
    let dir = common::scratch("cli-hard-pattern");
    std::fs::create_dir(dir.join("d")).unwrap();
    let cases = [
        (
            "d/%s%s%s%s%s%s.png",
            "'%s' in the file name is not a frame number",
        ),
        ("d/%n.png", "'%n' in the file name is not a frame number"),
        ("d/%d_%d.png", "the file name holds 2 frame numbers"),
        ("d/%ld.png", "'%l' in the file name"),
    ];
    for (pattern, says) in cases {
        refused(
            SELFIE,
            &dir,
            &[
                "--test-pattern",
                "--device",
                "cpu",
                "--frames",
                "2",
                "-o",
                pattern,
            ],
            2,
            says,
        );
    }
    assert!(
        entries(&dir.join("d")).is_empty(),
        "{:?}",
        entries(&dir.join("d"))
    );
}

#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let dir = common::scratch("cli-hard-fifo");
    let fifo = dir.join("m.onnx");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    let photo = dir.join("p.png");
    small_png(&photo);
    let photo = photo.to_str().unwrap();
    let fifo_says = "it is a FIFO (named pipe), not a regular file";
    let selfie_cases: [(&[&str], i32, &str); 5] = [
        (&["--test-pattern", "--null", "--model", fifo], 3, fifo_says),
        (&["-i", fifo, "--null"], 3, fifo_says),
        (
            &["-i", "/dev/zero", "--null"],
            3,
            "it is a character device",
        ),
        (
            &[
                "--test-pattern",
                "--null",
                "--effect",
                "replace",
                "--background",
                fifo,
            ],
            2,
            fifo_says,
        ),
        (
            &["--camera", fifo, "--null", "--frames", "1"],
            3,
            "not a camera",
        ),
    ];
    for (args, code, says) in selfie_cases {
        refused(SELFIE, &dir, args, code, says);
    }
    refused(SUPERRES, &dir, &[fifo, "-o", "x.mp4"], 3, fifo_says);
    refused(
        SUPERRES,
        &dir,
        &[photo, "--model", fifo, "-o", "x.png"],
        3,
        fifo_says,
    );
    assert!(leftovers(&dir).is_empty());
}

#[test]
fn an_existing_default_output_needs_overwrite() {
    let dir = common::scratch("cli-hard-default");
    let kept = Kept::new(&dir.join("wgnn-selfie.mp4"), b"precious");
    let job = [
        "--test-pattern",
        "--frames",
        "2",
        "--device",
        "cpu",
        "--width",
        "64",
        "--height",
        "48",
    ];
    refused(
        SELFIE,
        &dir,
        &job,
        2,
        "wgnn-selfie.mp4 exists: give --overwrite",
    );
    kept.assert_unchanged("selfie without --overwrite");
    let mut forced = job.to_vec();
    forced.push("--overwrite");
    let out = run_in(SELFIE, &dir, &forced);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        common::decode_video(&dir.join("wgnn-selfie.mp4")),
        (2, 64, 48)
    );

    small_png(&dir.join("small.png"));
    let kept = Kept::new(&dir.join("small_x2.png"), b"precious too");
    refused(
        SUPERRES,
        &dir,
        &["small.png", "--device", "cpu"],
        2,
        "small_x2.png exists (the default output): give --overwrite",
    );
    kept.assert_unchanged("superres without --overwrite");
    let out = run_in(
        SUPERRES,
        &dir,
        &["small.png", "--device", "cpu", "--overwrite"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        image::image_dimensions(dir.join("small_x2.png")).unwrap(),
        (16, 16)
    );
    assert!(leftovers(&dir).is_empty());
}

#[test]
fn decompression_bombs_are_refused_from_their_header() {
    let dir = common::scratch("cli-hard-bomb");
    let bomb = dir.join("big.png");
    png_header_only(&bomb, 20000, 20000);
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1024);
    let says =
        "it is 20000x20000 pixels, over the image budget of 16384 pixels on a side and 64 Mpixel";
    refused(
        SUPERRES,
        &dir,
        &[bomb.to_str().unwrap(), "-o", "x.png"],
        3,
        says,
    );
    // Within the side limit but past the pixel budget.
    let wide = dir.join("wide.png");
    png_header_only(&wide, 16000, 8000);
    let cases = [
        (bomb, says),
        (wide, "it is 16000x8000 pixels, over the image budget"),
    ];
    for (background, says) in &cases {
        let args = [
            "--test-pattern",
            "--null",
            "--effect",
            "replace",
            "--background",
            background.to_str().unwrap(),
        ];
        refused(SELFIE, &dir, &args, 2, says);
    }
}

#[test]
fn a_link_to_a_device_is_refused_and_a_link_to_a_file_written_through() {
    let dir = common::scratch("cli-hard-link");
    let full = dir.join("full.mp4");
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    refused(
        SELFIE,
        &dir,
        &["--test-pattern", "--device", "cpu", "--frames", "2", "-o", "full.mp4"],
        2,
        "full.mp4: it is a character device, not a regular file; outputs are written to regular files only",
    );
    assert!(std::fs::symlink_metadata(&full)
        .unwrap()
        .file_type()
        .is_symlink());

    small_png(&dir.join("small.png"));
    let real = Kept::new(&dir.join("real.png"), b"old");
    std::os::unix::fs::symlink("real.png", dir.join("link.png")).unwrap();
    let out = run_in(
        SUPERRES,
        &dir,
        &["small.png", "--device", "cpu", "-o", "link.png"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::symlink_metadata(dir.join("link.png"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(image::image_dimensions(real.path()).unwrap(), (16, 16));
    assert!(leftovers(&dir).is_empty());
}

#[test]
fn flags_that_need_another_are_refused_without_it() {
    let dir = common::scratch("cli-hard-flags");
    small_png(&dir.join("small.png"));
    let cases: [(&str, &[&str], &str); 5] = [
        (
            SELFIE,
            &["--test-pattern", "--null", "--background", "red"],
            "--background needs --effect replace",
        ),
        (
            SELFIE,
            &[
                "--test-pattern",
                "--null",
                "--effect",
                "mask",
                "--blur",
                "3",
            ],
            "--blur sets the strength of --effect blur",
        ),
        (
            SELFIE,
            &[
                "--test-pattern",
                "--null",
                "--frames",
                "99999999999999999999",
            ],
            "is too large: give a number of frames from 1 to 18446744073709551615",
        ),
        (
            SUPERRES,
            &["small.png", "--frames", "3"],
            "--frames stops a video; small.png is an image",
        ),
        (
            SUPERRES,
            &["small.png", "--frames", "99999999999999999999"],
            "is too large",
        ),
    ];
    for (exe, args, says) in cases {
        refused(exe, &dir, args, 2, says);
    }
    assert_eq!(entries(&dir), ["small.png"]);
}

/// Two jobs on one output: the second refuses while the first runs; the
/// first, hung up (SIGHUP), finalises its file and exits 129.
#[test]
fn a_second_job_on_the_same_output_is_refused_and_sighup_finalises() {
    let dir = common::scratch("cli-hard-hup");
    let args = [
        "--test-pattern",
        "--device",
        "cpu",
        "--width",
        "96",
        "--height",
        "64",
        "-o",
        "live.mp4",
    ];
    let mut first = Command::new(SELFIE)
        .args(args)
        .current_dir(&dir)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_output(&mut first, &dir, 2048);
    refused(
        SELFIE,
        &dir,
        &args,
        2,
        "another wgnn job is writing live.mp4",
    );
    let kill = Command::new("kill")
        .args(["-HUP", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(129), "{stderr}");
    assert!(
        stderr.contains("SIGHUP: ending the stream and finalising live.mp4"),
        "{stderr}"
    );
    assert_clean(&stderr);
    let (frames, w, h) = common::decode_video(&dir.join("live.mp4"));
    assert!(frames > 0);
    assert_eq!((w, h), (96, 64));
    assert_eq!(
        entries(&dir),
        ["live.mp4"],
        "no temporary, no lock file left"
    );
}

/// A temporary left by a killed job (its pid no longer runs) is removed by
/// the next job on the same output; one of a live process is left alone.
#[test]
fn a_killed_jobs_temporary_is_cleaned_by_the_next() {
    let dir = common::scratch("cli-hard-stale");
    let dead = dir.join(".out.mp4.4194305.abc123.partial");
    std::fs::write(&dead, b"half a video").unwrap();
    let live = dir.join(format!(".out.mp4.{}.abc123.partial", std::process::id()));
    std::fs::write(&live, b"someone else's").unwrap();
    let out = run_in(
        SELFIE,
        &dir,
        &[
            "--test-pattern",
            "--device",
            "cpu",
            "--frames",
            "2",
            "--width",
            "64",
            "--height",
            "48",
            "-q",
            "-o",
            "out.mp4",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dead.exists());
    assert!(live.exists());
}

/// The elements too: `model=` a FIFO fails the start with one line instead
/// of blocking it.
#[test]
fn an_element_whose_model_is_a_fifo_fails_at_start() {
    let dir = common::scratch("cli-hard-element");
    let fifo = dir.join("m.tflite");
    mkfifo(&fifo);
    gst::init().unwrap();
    wgnn::gst::register_static().unwrap();
    for element in ["wgnninfer", "wgnnsegment"] {
        let launch = format!(
            "videotestsrc num-buffers=1 ! video/x-raw,width=64,height=48 ! {element} device=cpu \
             model=\"{}\" ! fakesink",
            fifo.display()
        );
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(common::harness::start_error(&launch));
        });
        let error = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{element}: the start blocked on the FIFO"));
        assert!(
            error.contains("it is a FIFO (named pipe), not a regular file"),
            "{element}: {error}"
        );
    }
}
