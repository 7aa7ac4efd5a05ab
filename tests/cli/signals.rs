//! SIGINT and SIGTERM in the middle of a job: the stream ends, the file is
//! finalised and moved into place (it decodes, with frames), the exit code is
//! 130 or 143, and no temporary file is left.

use crate::common;
use crate::files::{assert_clean, leftovers, test_video, wait_for_output};

use std::path::Path;
use std::process::{Command, Stdio};

fn interrupt(exe: &str, args: &[&str], dir: &Path, signal: &str) -> (i32, String) {
    let mut child = Command::new(exe)
        .args(args)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the CLI");
    wait_for_output(&mut child, dir, 2048);
    let kill = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

#[test]
fn selfie_finalises_its_mp4_on_sigint_and_sigterm() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let dir = common::scratch(&format!("cli-signals-selfie-{signal}"));
        let mp4 = dir.join("live.mp4");
        let (got, stderr) = interrupt(
            env!("CARGO_BIN_EXE_wgnn-selfie"),
            &[
                "--test-pattern",
                "--width",
                "96",
                "--height",
                "64",
                "-o",
                mp4.to_str().unwrap(),
            ],
            &dir,
            signal,
        );
        assert_eq!(got, code, "SIG{signal}: {stderr}");
        assert!(
            stderr.contains(&format!("SIG{signal}: ending the stream and finalising")),
            "{stderr}"
        );
        assert_clean(&stderr);
        // A finalised MP4 (moov written at EOS) decodes; an unfinished one does not.
        let (frames, w, h) = common::decode_video(&mp4);
        assert!(frames > 0, "SIG{signal}: no frames decode");
        assert_eq!((w, h), (96, 64));
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    }
}

#[test]
fn superres_finalises_its_video_on_sigint() {
    let dir = common::scratch("cli-signals-superres");
    let input = dir.join("long.mp4");
    // Long enough that the signal comes well before the end.
    test_video(&input, 32, 24, 3000);
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mp4 = out_dir.join("long_x2.mp4");
    let (got, stderr) = interrupt(
        env!("CARGO_BIN_EXE_wgnn-superres"),
        &[input.to_str().unwrap(), "-q", "-o", mp4.to_str().unwrap()],
        &out_dir,
        "INT",
    );
    assert_eq!(got, 130, "{stderr}");
    assert_clean(&stderr);
    let (frames, w, h) = common::decode_video(&mp4);
    assert!(frames > 0 && frames < 3000, "{frames} frames");
    assert_eq!((w, h), (64, 48));
    assert!(leftovers(&out_dir).is_empty(), "{:?}", leftovers(&out_dir));
}
