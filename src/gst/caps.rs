//! Caps shared by the elements: the formats the video module handles, in
//! system memory and in `memory:WgpuTexture`.

use super::frame_meta::CAPS_FEATURE_WGPU_TEXTURE;
use crate::error::{Error, Result};
use crate::video::{FrameLayout, PlaneLayout, VideoFormat};

pub const FORMATS: [gst_video::VideoFormat; 7] = [
    gst_video::VideoFormat::Rgba,
    gst_video::VideoFormat::Bgra,
    gst_video::VideoFormat::Rgbx,
    gst_video::VideoFormat::Bgrx,
    gst_video::VideoFormat::Rgb,
    gst_video::VideoFormat::Nv12,
    gst_video::VideoFormat::I420,
];

pub fn system_caps() -> gst::Caps {
    gst_video::VideoCapsBuilder::new()
        .format_list(FORMATS)
        .build()
}

pub fn texture_caps() -> gst::Caps {
    gst_video::VideoCapsBuilder::new()
        .features([CAPS_FEATURE_WGPU_TEXTURE])
        .format_list(FORMATS)
        .build()
}

/// `caps` with every structure's features replaced by `features` (`None`:
/// system memory), for `transform_caps` of elements that only move frames
/// between memories.
pub fn with_features(caps: &gst::Caps, features: Option<&str>) -> gst::Caps {
    let mut out = gst::Caps::new_empty();
    {
        let out = out.get_mut().unwrap();
        for s in caps.iter() {
            let f = match features {
                Some(f) => gst::CapsFeatures::new([f]),
                None => gst::CapsFeatures::new_empty(),
            };
            out.append_structure_full(s.to_owned(), Some(f));
        }
    }
    out
}

/// `transform_caps` of an element that only moves frames between memories:
/// the same caps with the features of the other pad (`None`: system memory).
pub fn between_memories(
    direction: gst::PadDirection,
    caps: &gst::Caps,
    filter: Option<&gst::Caps>,
    sink: Option<&str>,
    src: Option<&str>,
) -> gst::Caps {
    let other = match direction {
        gst::PadDirection::Sink => with_features(caps, src),
        _ => with_features(caps, sink),
    };
    match filter {
        Some(f) => f.intersect_with_mode(&other, gst::CapsIntersectMode::First),
        None => other,
    }
}

pub fn video_format(info: &gst_video::VideoInfo) -> Result<VideoFormat> {
    VideoFormat::from_name(info.format().to_str())
}

/// The byte layout of a frame: the buffer's VideoMeta when upstream attached
/// one (its strides win), the negotiated VideoInfo otherwise.
pub fn frame_layout(
    info: &gst_video::VideoInfo,
    meta: Option<&gst_video::VideoMeta>,
) -> Result<FrameLayout> {
    let format = video_format(info)?;
    let (offsets, strides): (Vec<usize>, Vec<i32>) = match meta {
        Some(m) => (m.offset().to_vec(), m.stride().to_vec()),
        None => (info.offset().to_vec(), info.stride().to_vec()),
    };
    let planes = (0..format.plane_count())
        .map(|p| {
            let stride = *strides
                .get(p)
                .ok_or_else(|| Error::invalid(format!("{format}: no stride for plane {p}")))?;
            if stride <= 0 {
                return Err(Error::invalid(format!(
                    "{format}: negative or zero stride {stride} for plane {p}"
                )));
            }
            Ok(PlaneLayout {
                offset: offsets[p],
                stride: stride as usize,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(FrameLayout {
        format,
        width: info.width(),
        height: info.height(),
        planes,
    })
}
