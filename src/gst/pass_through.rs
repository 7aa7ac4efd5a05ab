//! What the elements that pass frames through without reading their pixels
//! (`wgnnanalytics`, `wgnnpublish`) share: pads that take frames in any
//! memory and give them on unchanged, and the frame size from the caps
//! (the ROI metas' params are 0..1 of it).

use gst::prelude::*;

/// Sink and src templates of the same caps: every memory wgnn knows
/// (textures, DMA-BUF, system memory).
pub fn templates() -> Vec<gst::PadTemplate> {
    let caps = crate::gst::caps::any_memory_caps();
    vec![
        gst::PadTemplate::new(
            "sink",
            gst::PadDirection::Sink,
            gst::PadPresence::Always,
            &caps,
        )
        .expect("a static template"),
        gst::PadTemplate::new(
            "src",
            gst::PadDirection::Src,
            gst::PadPresence::Always,
            &caps,
        )
        .expect("a static template"),
    ]
}

/// The width and height of fixed video caps.
pub fn frame_size(caps: &gst::CapsRef) -> Option<(u32, u32)> {
    let s = caps.structure(0)?;
    let w = s.get::<i32>("width").ok()?;
    let h = s.get::<i32>("height").ok()?;
    Some((u32::try_from(w).ok()?, u32::try_from(h).ok()?))
}

/// The negotiated frame size, kept from `set_caps` for each frame.
#[derive(Debug, Default)]
pub struct FrameSize(std::sync::Mutex<Option<(u32, u32)>>);

impl FrameSize {
    /// Takes the size of `caps`; caps without one fail the negotiation.
    pub fn set(&self, cat: gst::DebugCategory, caps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let size = frame_size(caps)
            .ok_or_else(|| gst::loggable_error!(cat, "no frame size in caps {caps}"))?;
        *self.0.lock().unwrap() = Some(size);
        Ok(())
    }

    /// The size, or not-negotiated before caps came.
    pub fn get(&self) -> Result<(u32, u32), gst::FlowError> {
        self.0.lock().unwrap().ok_or(gst::FlowError::NotNegotiated)
    }
}

/// Posts `s` as an element message of `element`.
pub fn post(element: &gst::Element, s: gst::Structure) {
    let _ = element.post_message(gst::message::Element::builder(s).src(element).build());
}
