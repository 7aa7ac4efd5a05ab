//! What the elements that pass frames through without reading their pixels
//! (`wgnnanalytics`, `wgnnpublish`) share: pads that take frames in any
//! memory and give them on unchanged, and the frame size from the caps
//! (the ROI metas' params are 0..1 of it).

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
