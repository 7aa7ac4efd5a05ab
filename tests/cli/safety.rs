//! Nothing lost: a job that fails (bad model, background, input, flag,
//! output name or folder) leaves an existing output as it was and no
//! temporary file, `-o` naming the input is refused, and every refusal is
//! one line with no Rust source paths, before any work starts.

use crate::common;
use crate::files::{assert_clean, leftovers, one_line, Kept};

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

fn selfie(args: &[&str]) -> Output {
    common::run_bin(env!("CARGO_BIN_EXE_wgnn-selfie"), args, &[])
}

fn superres(args: &[&str]) -> Output {
    common::run_bin(env!("CARGO_BIN_EXE_wgnn-superres"), args, &[])
}

fn sample(name: &str) -> PathBuf {
    common::root().join("assets/samples").join(name)
}

/// A run that must fail with `code` and one clean line containing `says`.
fn refused(out: &Output, code: i32, says: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: {stderr}");
    assert_clean(&stderr);
    let line = one_line(&stderr);
    assert!(line.contains(says), "{what}: '{says}' not in: {line}");
}

/// The last line that says something (clap's usage hint left out).
fn last_line(stderr: &str) -> &str {
    stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.starts_with("For more information"))
        .unwrap_or("")
}

#[test]
fn a_failed_selfie_job_keeps_the_existing_output() {
    let dir = common::scratch("cli-safety-selfie");
    let kept = Kept::new(&dir.join("out.mp4"), b"an earlier result");
    let garbage = dir.join("garbage.mp4");
    std::fs::write(&garbage, b"this is not a video").unwrap();
    let no_model = dir.join("missing.tflite");
    let no_model = no_model.to_str().unwrap();
    let cases: [(&[&str], i32, &str); 4] = [
        (
            &["--test-pattern", "--frames", "2", "--model", no_model],
            3,
            "cannot load model",
        ),
        (
            &[
                "--test-pattern",
                "--effect",
                "replace",
                "--background",
                "#12345",
            ],
            2,
            "#RRGGBB",
        ),
        (&["--input", "/no/such/video.mp4"], 3, "/no/such/video.mp4"),
        (&["--input", garbage.to_str().unwrap()], 3, "garbage.mp4"),
    ];
    for (args, code, says) in cases {
        let mut all = args.to_vec();
        all.extend(["--width", "64", "--height", "48", "-o", kept.path()]);
        let out = selfie(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_clean(&stderr);
        // The undecodable file fails after the device was chosen (a line
        // of its own): the reason is the last line.
        assert!(last_line(&stderr).contains(says), "{args:?}: {stderr}");
        kept.assert_unchanged(&format!("{args:?}"));
        assert!(
            leftovers(&dir).is_empty(),
            "{args:?}: {:?}",
            leftovers(&dir)
        );
    }
    // The model is named once, without the loader's "file:" location.
    let out = selfie(&["--test-pattern", "--model", no_model, "-o", kept.path()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("missing.tflite").count(), 1, "{stderr}");
    assert!(!stderr.contains("Could not open resource"), "{stderr}");
}

#[test]
fn a_failed_superres_job_keeps_the_existing_output() {
    let dir = common::scratch("cli-safety-superres");
    let kept_png = Kept::new(&dir.join("out.png"), b"an earlier picture");
    let kept_mp4 = Kept::new(&dir.join("out.mp4"), b"an earlier video");
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, b"not a picture nor a video").unwrap();
    let photo = sample("astronaut.png");
    let video = sample("astronaut.mp4");
    let bad_model = photo.to_str().unwrap();
    let cases: [(Vec<&str>, &Kept, i32, &str); 4] = [
        (
            vec![
                photo.to_str().unwrap(),
                "--model",
                bad_model,
                "-o",
                kept_png.path(),
            ],
            &kept_png,
            3,
            "cannot load model",
        ),
        (
            vec![
                video.to_str().unwrap(),
                "--model",
                "/no/model.json",
                "-o",
                kept_mp4.path(),
            ],
            &kept_mp4,
            3,
            "cannot load model /no/model.json",
        ),
        (
            vec!["/no/such.png", "-o", kept_png.path()],
            &kept_png,
            3,
            "/no/such.png",
        ),
        (
            vec![
                notes.to_str().unwrap(),
                "--frames",
                "1",
                "-o",
                kept_mp4.path(),
            ],
            &kept_mp4,
            3,
            "notes.txt",
        ),
    ];
    for (args, kept, code, says) in cases {
        let out = superres(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_clean(&stderr);
        assert!(last_line(&stderr).contains(says), "{args:?}: {stderr}");
        kept.assert_unchanged(&format!("{args:?}"));
        assert!(
            leftovers(&dir).is_empty(),
            "{args:?}: {:?}",
            leftovers(&dir)
        );
    }
}

#[test]
fn output_naming_the_input_is_refused_and_the_input_kept() {
    let dir = common::scratch("cli-safety-same");
    let video = Kept::new(
        &dir.join("clip.mp4"),
        &std::fs::read(sample("astronaut.mp4")).unwrap(),
    );
    let photo = Kept::new(
        &dir.join("photo.png"),
        &std::fs::read(sample("astronaut.png")).unwrap(),
    );
    let link = dir.join("link.mp4");
    std::os::unix::fs::symlink(dir.join("clip.mp4"), &link).unwrap();
    let dotted = dir.join(".").join("clip.mp4");
    for output in [
        video.path(),
        dotted.to_str().unwrap(),
        link.to_str().unwrap(),
    ] {
        let out = selfie(&["--input", video.path(), "-o", output]);
        refused(&out, 2, "is the input file", output);
        video.assert_unchanged(output);
        let out = superres(&[video.path(), "--frames", "1", "-o", output]);
        refused(&out, 2, "is the input file", output);
        video.assert_unchanged(output);
    }
    let out = superres(&[photo.path(), "-o", photo.path()]);
    refused(&out, 2, "is the input file", "superres image");
    photo.assert_unchanged("superres image");
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn bad_flag_values_are_refused_by_the_parser_with_the_accepted_form() {
    let cases: [(&[&str], &str); 7] = [
        (&["--background", "#12345"], "#RRGGBB"),
        (&["--background", "#GGGGGG"], "#RRGGBB"),
        (&["--background", "/no/such/beach.jpg"], "an image file"),
        (&["--smoothing", "2"], "from 0 to 0.95"),
        (&["--smoothing", "abc"], "from 0 to 0.95"),
        (&["--blur", "0"], "from 0.5 to 64"),
        (&["--frames", "0"], "1 or more"),
    ];
    for (args, says) in cases {
        let out = selfie(args);
        refused(&out, 2, says, &format!("{args:?}"));
    }
    let photo = sample("astronaut.png");
    let photo = photo.to_str().unwrap();
    for (args, says) in [
        (&[photo, "--frames", "0"][..], "1 or more"),
        (&[photo, "--scale", "5"], "2..=4"),
    ] {
        let out = superres(args);
        refused(&out, 2, says, &format!("{args:?}"));
    }
}

/// Refused in well under the time the model takes (the 512x512 photo at
/// x4 takes many seconds on any CPU or software GPU), and nothing written.
#[test]
fn unknown_extensions_and_unwritable_folders_fail_before_the_model_runs() {
    let dir = common::scratch("cli-safety-fast");
    let photo = sample("astronaut.png");
    let video = sample("astronaut.mp4");
    let xyz = dir.join("x.xyz");
    let cases: [(bool, Vec<&str>, &str); 6] = [
        (
            false,
            vec![
                photo.to_str().unwrap(),
                "--scale",
                "4",
                "-o",
                xyz.to_str().unwrap(),
            ],
            ".png or .jpg",
        ),
        (
            false,
            vec![photo.to_str().unwrap(), "--scale", "4", "-o", "/sys/x.png"],
            "/sys",
        ),
        (
            false,
            vec![
                photo.to_str().unwrap(),
                "--scale",
                "4",
                "-o",
                "/no/such/folder/x.png",
            ],
            "no such folder",
        ),
        (
            false,
            vec![video.to_str().unwrap(), "-o", "/sys/x.mp4"],
            "/sys",
        ),
        (
            true,
            vec!["--test-pattern", "-o", xyz.to_str().unwrap()],
            "FILE.mp4",
        ),
        (true, vec!["--test-pattern", "-o", "/sys/x.mp4"], "/sys"),
    ];
    for (is_selfie, args, says) in cases {
        let began = Instant::now();
        let out = if is_selfie {
            selfie(&args)
        } else {
            superres(&args)
        };
        let took = began.elapsed();
        refused(&out, 2, says, &format!("{args:?}"));
        assert!(
            took < Duration::from_secs(10),
            "{args:?} took {took:?}: the check came after the work"
        );
    }
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
}

#[test]
fn an_oversized_image_is_refused_from_its_header() {
    let dir = common::scratch("cli-safety-huge");
    let huge = dir.join("huge.png");
    common::png_header_only(&huge, 60000, 60000);
    let out_png = dir.join("huge_x2.png");
    let began = Instant::now();
    let out = superres(&[huge.to_str().unwrap(), "-o", out_png.to_str().unwrap()]);
    refused(&out, 3, "60000x60000", "60000x60000");
    assert!(
        one_line(&String::from_utf8_lossy(&out.stderr)).contains("16384"),
        "the limit is named"
    );
    assert!(began.elapsed() < Duration::from_secs(10));
    assert!(!out_png.exists());
    assert!(leftovers(&dir).is_empty());
}

#[test]
fn an_adapter_name_that_matches_nothing_is_said_so_by_both_clis() {
    let env = [("WGPU_ADAPTER_NAME", "nomatch")];
    let selfie = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-selfie"),
        &[
            "--device",
            "gpu",
            "--test-pattern",
            "--frames",
            "1",
            "--null",
        ],
        &env,
    );
    let photo = sample("astronaut.png");
    let dir = common::scratch("cli-safety-adapter");
    let out = dir.join("x.png");
    let superres = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-superres"),
        &[
            "--device",
            "gpu",
            photo.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        &env,
    );
    for run in [selfie, superres] {
        refused(
            &run,
            4,
            "WGPU_ADAPTER_NAME='nomatch' matches none",
            "nomatch",
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            !stderr.contains("install"),
            "not a driver problem: {stderr}"
        );
    }
    assert!(!out.exists());
    assert!(leftovers(&dir).is_empty());
}
