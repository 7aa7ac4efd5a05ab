//! wgnn-selfie run as a user runs it: the default job on the bundled sample,
//! outputs that decode to the expected frames, stats, and the errors a user
//! meets (no camera, bad flags). Signals: signals.rs; failed jobs and
//! refused values: safety.rs.

use crate::common;

use std::process::Output;

fn selfie(args: &[&str]) -> Output {
    selfie_env(args, &[])
}

fn selfie_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    common::run_bin(env!("CARGO_BIN_EXE_wgnn-selfie"), args, env)
}

fn temp(name: &str) -> std::path::PathBuf {
    common::temp_dir("cli-selfie").join(name)
}

#[test]
fn the_default_job_writes_an_mp4_with_every_frame() {
    let mp4 = temp("sample.mp4");
    let out = selfie(&[
        "--frames",
        "6",
        "--width",
        "160",
        "--height",
        "90",
        "--output",
        mp4.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("6 frames in"), "{stderr}");
    assert!(
        stderr.contains(&format!("wrote {}", mp4.display())),
        "{stderr}"
    );
    assert_eq!(common::decode_video(&mp4), (6, 160, 90));
}

#[test]
fn png_sequence_and_live_stats() {
    let pattern = temp("pngs/%03d.png");
    std::fs::create_dir_all(pattern.parent().unwrap()).unwrap();
    let out = selfie(&[
        "--test-pattern",
        "--effect",
        "replace",
        "--background",
        "#ff0000",
        "--frames",
        "12",
        "--width",
        "64",
        "--height",
        "48",
        "--output",
        pattern.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let pngs: Vec<_> = std::fs::read_dir(pattern.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(pngs.len(), 12, "{pngs:?}");
    let first = image::open(pattern.parent().unwrap().join("000.png"))
        .unwrap()
        .to_rgb8();
    assert_eq!(first.dimensions(), (64, 48));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("per frame: up") && stderr.contains("fps"),
        "{stderr}"
    );
}

#[test]
fn a_missing_camera_is_exit_3_with_a_clear_message() {
    let out = selfie(&["--camera", "/dev/video-missing", "--null"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no camera at /dev/video-missing"),
        "{stderr}"
    );
}

#[test]
fn unreadable_input_and_bad_flags() {
    let out = selfie(&["--input", "/no/such/video.mp4", "--null"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/video.mp4"));

    let garbage = temp("garbage.mp4");
    std::fs::write(&garbage, b"this is not a video").unwrap();
    let out = selfie(&["--input", garbage.to_str().unwrap(), "--null"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "an undecodable file is an input error"
    );

    for bad in [
        &["--effect", "sparkle"][..],
        &["--output", "out.avi"],
        &["--blur", "0"],
        &["--width", "64"],
    ] {
        let out = selfie(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn no_gpu_with_device_gpu_is_exit_4() {
    // An adapter name nothing matches: the same as a machine with no GPU.
    let out = selfie_env(
        &[
            "--device",
            "gpu",
            "--test-pattern",
            "--frames",
            "1",
            "--null",
        ],
        &[("WGPU_ADAPTER_NAME", "no-such-gpu")],
    );
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The adapter choice's own reason, with the adapters there are.
    assert!(
        stderr.contains("--device gpu: no GPU adapter: WGPU_ADAPTER_NAME='no-such-gpu' matches none of the adapters found"),
        "{stderr}"
    );
}

/// `auto` takes a hardware GPU, and the CPU where the only GPU is a
/// software rasteriser (saying so in one line); `--device gpu` still runs on
/// it, with the element's wall time in the stats instead of the software
/// GPU's meaningless timestamps.
#[test]
fn auto_prefers_the_cpu_over_a_software_gpu_and_gpu_forces_it() {
    let software = common::gpu().is_software();
    let dir = common::scratch("cli-selfie-device");
    let mp4 = dir.join("auto.mp4");
    let small = [
        "--test-pattern",
        "--frames",
        "2",
        "--width",
        "32",
        "--height",
        "24",
    ];
    let mut args = small.to_vec();
    args.extend(["-o", mp4.to_str().unwrap()]);
    let out = selfie(&args);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = stderr
        .lines()
        .filter(|l| l.contains("software rasteriser") && l.contains("running on the CPU"))
        .count();
    assert_eq!(said, usize::from(software), "{stderr}");
    if software {
        assert!(stderr.contains("--device gpu uses it anyway"), "{stderr}");
        assert!(stderr.contains("ran on the CPU"), "{stderr}");
    }

    let mp4 = dir.join("gpu.mp4");
    let mut args = small.to_vec();
    args.extend(["--device", "gpu", "-o", mp4.to_str().unwrap()]);
    let out = selfie(&args);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 frames in"), "{stderr}");
    assert!(!stderr.contains("ran on the CPU"), "{stderr}");
    if software {
        assert!(!stderr.contains("model GPU"), "{stderr}");
        assert!(stderr.contains("expect it to be slow"), "{stderr}");
    }
    assert_eq!(common::decode_video(&mp4), (2, 32, 24));
}

#[test]
fn precision_flag_runs_and_the_summary_says_which() {
    let f16 = common::gpu().has(wgpu::Features::SHADER_F16);
    let small = [
        "--test-pattern",
        "--frames",
        "2",
        "--width",
        "32",
        "--height",
        "24",
        "--device",
        "gpu",
        "--null",
    ];
    for (flag, said) in [
        ("f32", "wgnn-selfie: precision f32 (asked for)"),
        (
            "auto",
            if f16 {
                "wgnn-selfie: precision f16 (rms rel diff "
            } else {
                "wgnn-selfie: precision f32 (this GPU "
            },
        ),
    ] {
        let mut args = small.to_vec();
        args.extend(["--precision", flag]);
        let out = selfie(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{flag}: {stderr}");
        assert!(
            stderr.lines().any(|l| l.starts_with(said)),
            "--precision {flag}:\n{stderr}"
        );
    }
    let out = selfie(&["--test-pattern", "--null", "--precision", "f8"]);
    assert_eq!(out.status.code(), Some(2), "a bad value is a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("'f8'")
            && stderr.contains("--precision")
            && stderr.contains("auto, f32, f16"),
        "{stderr}"
    );
}
