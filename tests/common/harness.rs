//! What the element tests share: registration, caps strings, timed buffers,
//! named elements inside a parsed harness, and the error a pipeline posts
//! when it cannot start.

use gst::prelude::*;
use gst_check::Harness;

pub fn init() {
    wgnn::gst::register_static().unwrap();
}

pub fn caps(format: &str, w: u32, h: u32) -> String {
    format!("video/x-raw,format={format},width={w},height={h},framerate=30/1")
}

/// A buffer at `pts_ms` lasting one 30 fps frame (33 ms).
pub fn buffer(bytes: &[u8], pts_ms: u64) -> gst::Buffer {
    let mut b = gst::Buffer::from_slice(bytes.to_vec());
    let r = b.get_mut().unwrap();
    r.set_pts(gst::ClockTime::from_mseconds(pts_ms));
    r.set_duration(gst::ClockTime::from_mseconds(33));
    b
}

pub fn bytes(b: &gst::Buffer) -> Vec<u8> {
    b.map_readable().unwrap().to_vec()
}

/// The element called `name` in a harness made with `Harness::new_parse`.
pub fn element(h: &Harness, name: &str) -> gst::Element {
    h.element()
        .unwrap()
        .downcast::<gst::Bin>()
        .unwrap()
        .by_name(name)
        .unwrap()
}

/// Starts `launch` and returns the error it posts (message and debug text).
pub fn start_error(launch: &str) -> String {
    let pipeline = gst::parse::launch(launch).unwrap();
    let result = pipeline.set_state(gst::State::Playing);
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(gst::ClockTime::from_seconds(30), &[gst::MessageType::Error])
        .unwrap_or_else(|| panic!("{launch}: no error on the bus (state change {result:?})"));
    let gst::MessageView::Error(e) = msg.view() else {
        unreachable!()
    };
    pipeline.set_state(gst::State::Null).unwrap();
    format!("{} {:?}", e.error(), e.debug())
}
