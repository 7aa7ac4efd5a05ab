//! The tail of a pipeline that writes H.264 into MP4 or MKV: 4:2:0 High
//! profile (what every player decodes; x264 picks High 4:4:4 from RGB input
//! unless told), and frames scaled to a size the encoder and muxer take.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use gst::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Muxer {
    Mp4,
    Mkv,
}

impl Muxer {
    /// From an output file's extension (case-insensitive).
    pub fn for_path(path: &Path) -> Option<Muxer> {
        let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
        match ext.as_str() {
            "mp4" => Some(Muxer::Mp4),
            "mkv" => Some(Muxer::Mkv),
            _ => None,
        }
    }

    fn element(self) -> &'static str {
        match self {
            Muxer::Mp4 => "mp4mux",
            Muxer::Mkv => "matroskamux",
        }
    }

    /// The smallest side the muxer takes (qtmux's caps say 16).
    fn min_side(self) -> u32 {
        match self {
            Muxer::Mp4 => 16,
            Muxer::Mkv => 2,
        }
    }
}

const FIT: &str = "wgnn-fit";
const FIT_CAPS: &str = "wgnn-fit-caps";

/// From raw video to `location`: scaled by [`fit_for_encoder`] where the
/// size needs it, I420, x264 High profile, `mux`. The file sink is named
/// `sink`.
pub fn h264_file_tail(mux: Muxer, location: &Path) -> String {
    format!(
        "videoscale name={FIT} ! capsfilter name={FIT_CAPS} ! videoconvert ! \
         video/x-raw,format=I420 ! x264enc tune=zerolatency speed-preset=veryfast ! \
         video/x-h264,profile=high ! h264parse ! {} ! filesink name=sink location=\"{}\"",
        mux.element(),
        location.display().to_string().replace('"', "\\\"")
    )
}

/// The size H.264 4:2:0 in `mux` takes for a `w` x `h` frame: even sides,
/// at least the muxer's smallest.
pub fn encodable_size(mux: Muxer, w: u32, h: u32) -> (u32, u32) {
    let fit = |v: u32| v.max(mux.min_side()).next_multiple_of(2);
    (fit(w), fit(h))
}

/// Makes the tail of [`h264_file_tail`] in `pipeline` scale frames of a size
/// the encoder or muxer refuses (odd sides: 4:2:0 halves the chroma; MP4
/// wants 16 pixels or more) to the nearest size it takes, and say so once on
/// stderr after `program`. Frames of a usable size pass untouched.
pub fn fit_for_encoder(pipeline: &gst::Pipeline, program: &str, mux: Muxer) {
    let (Some(fit), Some(caps)) = (pipeline.by_name(FIT), pipeline.by_name(FIT_CAPS)) else {
        return;
    };
    let Some(pad) = fit.static_pad("sink") else {
        return;
    };
    let told = Arc::new(AtomicBool::new(false));
    let program = program.to_string();
    pad.add_probe(gst::PadProbeType::EVENT_DOWNSTREAM, move |_, info| {
        let Some(gst::EventView::Caps(c)) = info.event().map(|e| e.view()) else {
            return gst::PadProbeReturn::Ok;
        };
        let Some(s) = c.caps().structure(0) else {
            return gst::PadProbeReturn::Ok;
        };
        let (Ok(w), Ok(h)) = (s.get::<i32>("width"), s.get::<i32>("height")) else {
            return gst::PadProbeReturn::Ok;
        };
        let (w, h) = (w.max(1) as u32, h.max(1) as u32);
        let (fw, fh) = encodable_size(mux, w, h);
        // Set before videoscale sees these caps, so it negotiates the size.
        let wanted = if (fw, fh) == (w, h) {
            gst::Caps::new_empty_simple("video/x-raw")
        } else {
            if !told.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "{program}: {w}x{h} frames are scaled to {fw}x{fh} for H.264 4:2:0 in {} \
                     (even sides{})",
                    if mux == Muxer::Mp4 { "MP4" } else { "MKV" },
                    if mux == Muxer::Mp4 {
                        ", 16 pixels or more"
                    } else {
                        ""
                    }
                );
            }
            gst::Caps::builder("video/x-raw")
                .field("width", fw as i32)
                .field("height", fh as i32)
                .build()
        };
        caps.set_property("caps", &wanted);
        gst::PadProbeReturn::Ok
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_even_and_the_muxers_minimum() {
        assert_eq!(encodable_size(Muxer::Mp4, 1, 1), (16, 16));
        assert_eq!(encodable_size(Muxer::Mkv, 1, 1), (2, 2));
        assert_eq!(encodable_size(Muxer::Mkv, 3, 5), (4, 6));
        assert_eq!(encodable_size(Muxer::Mp4, 640, 360), (640, 360));
        assert_eq!(encodable_size(Muxer::Mp4, 641, 17), (642, 18));
    }

    #[test]
    fn extensions_pick_the_muxer() {
        assert_eq!(Muxer::for_path(Path::new("a/b.MP4")), Some(Muxer::Mp4));
        assert_eq!(Muxer::for_path(Path::new("b.mkv")), Some(Muxer::Mkv));
        assert_eq!(Muxer::for_path(Path::new("b.avi")), None);
        assert_eq!(Muxer::for_path(Path::new("mp4")), None);
    }
}
