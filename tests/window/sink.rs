//! wgnnsink in a real window: Xvfb started by the test, lavapipe presenting
//! through a wgpu surface, and X11 screenshots compared with the frame.
//!
//! In the `window` binary, apart from the other element tests, because it sets
//! the process-wide DISPLAY and winit allows one event loop per process; its
//! one test runs the cases in order.

use crate::common::harness::{expect_eos, launch, push_rgba_frames};
use crate::common::{self, known_frame, max_rgb_diff};

use std::time::{Duration, Instant};

use crate::common::xvfb::{save_png, Xvfb};
use gst::prelude::*;

const W: u32 = 64;
const H: u32 = 48;
const TITLE: &str = "wgnnsink window test";

/// A pipeline showing `frames` copies of the known frame in a window, left
/// in PLAYING after EOS so that the window stays up.
fn show(frame: &[u8], frames: u64, extra: &str) -> gst::Pipeline {
    let pipeline = launch(&format!(
        "appsrc name=src format=time ! wgnnupload ! \
         wgnnsink name=sink sync=false window-title=\"{TITLE}\" {extra}"
    ));
    pipeline.set_state(gst::State::Playing).unwrap();
    push_rgba_frames(&pipeline, frame, W, H, frames);
    expect_eos(&pipeline, 120, "wgnnsink window pipeline");
    pipeline
}

/// Screenshots `window` until it shows `expected` (the X server may lag the
/// present a little), failing with the last picture saved.
fn wait_for_picture(x: &Xvfb, window: u32, expected: &[u8], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (w, h, shot) = x.screenshot(window);
        if shot.len() == expected.len() && max_rgb_diff(&shot, expected) <= 1 {
            return;
        }
        if Instant::now() > deadline {
            let path = save_png(what, w, h, &shot);
            let diff = if shot.len() == expected.len() {
                format!("max difference {}", max_rgb_diff(&shot, expected))
            } else {
                format!("size {w}x{h}")
            };
            panic!(
                "{what}: the window does not show the expected picture ({diff}); \
                 screenshot in {}",
                path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_frame_shows_in_a_real_window() {
    let _turn = super::one_at_a_time();
    let _ = common::gpu();
    let x = Xvfb::start_for_this_process(320, 240);
    // Before GStreamer or winit look at the environment.
    std::env::set_var("DISPLAY", &x.display);
    std::env::remove_var("WAYLAND_DISPLAY");
    std::env::remove_var("WAYLAND_SOCKET");
    wgnn::gst::register_static().unwrap();
    // Every log statement of the elements runs (their arguments are
    // evaluated, locks and all), printed nowhere.
    gst::log::remove_default_log_function();
    gst::log::set_threshold_for_name("wgnn*", gst::DebugLevel::Log);
    let frame = known_frame(W, H);

    // 1. A window of the frame's size at 0,0 showing exactly the frame, with
    //    nothing read back by the sink.
    let pipeline = show(&frame, 3, "");
    let window = x.wait_window(TITLE, Duration::from_secs(10));
    let (_, _, w, h) = x.geometry(window);
    assert_eq!(
        (u32::from(w), u32::from(h)),
        (W, H),
        "the window has the frame's size"
    );
    wait_for_picture(&x, window, &frame, "window");
    let sink = pipeline.by_name("sink").unwrap();
    assert_eq!(sink.property::<u64>("frames"), 3);
    assert_eq!(sink.property::<u64>("bytes-downloaded"), 0);
    // The snapshot of a window is what it shows.
    let sample = sink
        .emit_by_name::<Option<gst::Sample>>("snapshot", &[])
        .expect("a snapshot");
    let snap = sample.buffer().unwrap().map_readable().unwrap().to_vec();
    assert!(
        max_rgb_diff(&snap, &frame) <= 1,
        "the snapshot shows the frame"
    );

    // 2. Resized with no new frame coming: the sink redraws the last one,
    //    letterboxed (64x48 in 128x48: 32 black columns each side).
    x.resize(window, 2 * W, H);
    let mut wide = vec![0u8; (2 * W * H * 4) as usize];
    for (y, row) in frame.chunks_exact((W * 4) as usize).enumerate() {
        let start = (y as u32 * 2 * W + W / 2) as usize * 4;
        wide[start..start + row.len()].copy_from_slice(row);
    }
    for px in wide.chunks_exact_mut(4) {
        px[3] = 255;
    }
    wait_for_picture(&x, window, &wide, "resized-window");

    // 3. Closed by the user: an error on the bus, no panic.
    x.close(window);
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Error])
        .expect("an error when the window is closed");
    let gst::MessageView::Error(e) = msg.view() else {
        unreachable!()
    };
    assert!(e.error().to_string().contains("closed"), "{}", e.error());
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(
        x.windows_titled(TITLE).is_empty(),
        "the window is gone at NULL"
    );

    // 4. PLAYING -> NULL -> PLAYING: each run gets a new window, and each
    //    NULL takes it away.
    for cycle in 0..3 {
        let pipeline = show(&frame, 2, "");
        let window = x.wait_window(TITLE, Duration::from_secs(10));
        wait_for_picture(&x, window, &frame, &format!("cycle-{cycle}"));
        pipeline.set_state(gst::State::Null).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !x.windows_titled(TITLE).is_empty() {
            assert!(
                Instant::now() < deadline,
                "cycle {cycle}: the window stayed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    // 5. fullscreen=true asks the window manager for a borderless
    //    fullscreen window, and fullscreen=false while playing takes it back.
    //    (There is no window manager here to carry it out.)
    x.watch_wm_requests();
    let pipeline = show(&frame, 2, "fullscreen=true");
    let window = x.wait_window(TITLE, Duration::from_secs(10));
    assert_eq!(
        x.wait_fullscreen_request(true, Duration::from_secs(10)),
        window
    );
    let sink = pipeline.by_name("sink").unwrap();
    sink.set_property("fullscreen", false);
    assert_eq!(
        x.wait_fullscreen_request(false, Duration::from_secs(10)),
        window
    );
    pipeline.set_state(gst::State::Null).unwrap();
}
