//! Ending a stream after a number of frames.

use std::sync::atomic::{AtomicU64, Ordering};

use gst::prelude::*;

/// Ends the stream after `n` buffers have entered `element`'s sink pad: the
/// ones after it are refused with EOS, so upstream stops too, and an EOS goes
/// downstream so that muxers finalise their files.
pub fn stop_after(element: &gst::Element, n: u64) {
    let Some(pad) = element.static_pad("sink") else {
        return;
    };
    let seen = AtomicU64::new(0);
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
        let k = seen.fetch_add(1, Ordering::SeqCst) + 1;
        if k <= n {
            return gst::PadProbeReturn::Ok;
        }
        if k == n + 1 {
            pad.send_event(gst::event::Eos::new());
        }
        info.flow_res = Err(gst::FlowError::Eos);
        gst::PadProbeReturn::Handled
    });
}
