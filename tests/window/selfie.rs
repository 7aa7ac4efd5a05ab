//! `wgnn-selfie --window` as a user runs it, on a real (Xvfb) display: the
//! window shows the segmentation output, checked against the same run
//! written to a PNG.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::xvfb::{save_png, Xvfb};

const W: u32 = 160;
const H: u32 = 90;

fn flags(sample: &Path) -> Vec<String> {
    [
        "--input",
        sample.to_str().unwrap(),
        "--effect",
        "mask",
        "--smoothing",
        "0",
        "--device",
        "gpu",
        "--width",
        "160",
        "--height",
        "90",
        "--quiet",
    ]
    .map(String::from)
    .to_vec()
}

/// Kills the CLI if the test fails while it runs.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn rgb_of_png(path: &Path) -> Vec<u8> {
    let img = image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8();
    assert_eq!(img.dimensions(), (W, H));
    img.into_raw()
}

fn is_grey(rgba: &[u8]) -> bool {
    rgba.chunks_exact(4)
        .all(|p| p[0].abs_diff(p[1]) <= 2 && p[1].abs_diff(p[2]) <= 2)
}

fn share(rgba: &[u8], keep: impl Fn(u8) -> bool) -> f64 {
    let n = rgba.chunks_exact(4).filter(|p| keep(p[1])).count();
    n as f64 / (rgba.len() / 4) as f64
}

#[test]
fn the_window_shows_the_mask() {
    let _turn = super::one_at_a_time();
    let _ = common::gpu();
    let dir = common::temp_dir("cli-window");
    let sample = common::root().join("assets/samples/astronaut.mp4");
    let exe = env!("CARGO_BIN_EXE_wgnn-selfie");

    // What the first frame's mask is, from the same command written to PNG.
    let pattern = dir.join("%03d.png");
    let out = Command::new(exe)
        .args(flags(&sample))
        .args(["--frames", "1", "--output", pattern.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "reference run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = rgb_of_png(&dir.join("000.png"));
    assert!(is_grey(&expected), "the reference is a greyscale mask");

    let x = Xvfb::start(320, 240);
    let log = dir.join("window-run.log");
    let child = Command::new(exe)
        .args(flags(&sample))
        .arg("--window")
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();

    // The window appears at the frame's size; its first picture is the
    // preroll frame, the first frame of the file, kept on screen until the
    // next processed frame (about a second later on a software GPU).
    let deadline = Instant::now() + Duration::from_secs(120);
    let window = loop {
        if let Some(&w) = x.windows_titled("wgnn").first() {
            break w;
        }
        if let Ok(Some(status)) = running.0.try_wait() {
            panic!(
                "wgnn-selfie exited ({status}) before its window showed:\n{}",
                log_text()
            );
        }
        assert!(Instant::now() < deadline, "no window:\n{}", log_text());
        std::thread::sleep(Duration::from_millis(50));
    };
    let (_, _, w, h) = x.geometry(window);
    assert_eq!((u32::from(w), u32::from(h)), (W, H));
    let shot = loop {
        let (_, _, shot) = x.screenshot(window);
        if shot.chunks_exact(4).any(|p| p[..3] != [0, 0, 0]) {
            break shot;
        }
        assert!(
            Instant::now() < deadline,
            "the window stayed black:\n{}",
            log_text()
        );
        std::thread::sleep(Duration::from_millis(30));
    };

    // Stop it the way a user does; Ctrl-C ends the stream cleanly.
    let pid = running.0.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "wgnn-selfie did not stop on Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        matches!(status.code(), Some(0 | 130)),
        "wgnn-selfie --window: {status}\n{}",
        log_text()
    );

    let saved = save_png("wgnn-selfie-window", W, H, &shot);
    assert!(
        is_grey(&shot),
        "the window shows a greyscale mask ({})",
        saved.display()
    );
    // The person is white, the background black.
    assert!(
        share(&shot, |v| v > 200) > 0.15,
        "too little person ({})",
        saved.display()
    );
    assert!(
        share(&shot, |v| v < 40) > 0.3,
        "too little background ({})",
        saved.display()
    );
    let diff = common::max_rgb_diff(&shot, &expected);
    assert!(
        diff <= 2,
        "the window differs from the first frame's mask by {diff} ({})",
        saved.display()
    );
    let _ = std::fs::remove_file(saved);
    let _ = std::fs::remove_dir_all(&dir);
}
