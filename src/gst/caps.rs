//! Caps shared by the elements: the formats the video module handles, in
//! system memory and in `memory:WgpuTexture`.

use super::frame_meta::CAPS_FEATURE_WGPU_TEXTURE;
use crate::error::{Error, Result};
use crate::video::{ColorSpec, FrameLayout, PlaneLayout, VideoFormat, YuvMatrix, YuvRange};

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

/// How a YUV stream's colours convert to RGB, from its colorimetry (BT.709
/// for HD, BT.601 otherwise, as GStreamer defaults them).
pub fn color_spec(info: &gst_video::VideoInfo) -> ColorSpec {
    let c = info.colorimetry();
    ColorSpec {
        matrix: match c.matrix() {
            gst_video::VideoColorMatrix::Bt709 => YuvMatrix::Bt709,
            _ => YuvMatrix::Bt601,
        },
        range: match c.range() {
            gst_video::VideoColorRange::Range0_255 => YuvRange::Full,
            _ => YuvRange::Limited,
        },
    }
}

/// `transform_caps` of the processing elements (RGBA out, any of [`FORMATS`]
/// in): each structure in both memory kinds, the same kind first since that
/// is the preferred output, texture memory left out when the element runs
/// on the CPU. `resize` maps a structure's width and height across the
/// element (it gets the direction the caps travel); a structure it refuses
/// (returns false) is dropped.
pub fn processing_transform(
    direction: gst::PadDirection,
    caps: &gst::Caps,
    filter: Option<&gst::Caps>,
    cpu: bool,
    mut resize: impl FnMut(&mut gst::StructureRef, gst::PadDirection) -> bool,
) -> gst::Caps {
    let formats = gst::List::new(FORMATS.iter().map(|f| f.to_str()));
    let mut out = gst::Caps::new_empty();
    for same in [true, false] {
        for (s, f) in caps.iter_with_features() {
            let texture = f.contains(CAPS_FEATURE_WGPU_TEXTURE) == same;
            if cpu && texture {
                continue;
            }
            let mut s = s.to_owned();
            s.remove_fields(["colorimetry", "chroma-site"]);
            match direction {
                gst::PadDirection::Sink => s.set("format", "RGBA"),
                _ => s.set("format", &formats),
            }
            if !resize(&mut s, direction) {
                continue;
            }
            let features = if texture {
                gst::CapsFeatures::new([CAPS_FEATURE_WGPU_TEXTURE])
            } else {
                gst::CapsFeatures::new_empty()
            };
            out.merge_structure_full(s, Some(features));
        }
    }
    match filter {
        Some(f) => f.intersect_with_mode(&out, gst::CapsIntersectMode::First),
        None => out,
    }
}

/// Multiplies (`up`) or divides the int, int range or list in `field` by
/// `k`. Dividing keeps only exact multiples. False when nothing is left.
pub fn scale_dimension(s: &mut gst::StructureRef, field: &str, k: i32, up: bool) -> bool {
    let map = |v: i32| -> Option<i32> {
        if up {
            v.checked_mul(k)
        } else {
            (v % k == 0).then_some(v / k)
        }
    };
    let Ok(value) = s.value(field).cloned() else {
        // No size yet: nothing to scale.
        return true;
    };
    if let Ok(v) = value.get::<i32>() {
        return match map(v) {
            Some(v) => {
                s.set(field, v);
                true
            }
            None => false,
        };
    }
    if let Ok(r) = value.get::<gst::IntRange<i32>>() {
        let (lo, hi) = if up {
            let hi = r.max().saturating_mul(k) / k * k;
            (r.min().saturating_mul(k).min(hi), hi)
        } else {
            ((r.min() + k - 1) / k, r.max() / k)
        };
        if lo > hi || hi < 1 {
            return false;
        }
        if lo == hi {
            s.set(field, lo);
        } else if up {
            s.set(field, gst::IntRange::with_step(lo, hi, k));
        } else {
            s.set(field, gst::IntRange::new(lo.max(1), hi));
        }
        return true;
    }
    if let Ok(list) = value.get::<gst::List>() {
        let kept: Vec<i32> = list
            .iter()
            .filter_map(|v| v.get::<i32>().ok())
            .filter_map(map)
            .collect();
        if kept.is_empty() {
            return false;
        }
        s.set(field, gst::List::new(kept));
        return true;
    }
    false
}

/// What `set_caps` of a processing element settles: both sides' video info
/// and whether the output is texture memory. Refuses, with the reason, what
/// the element cannot process.
pub struct Negotiated {
    pub in_info: gst_video::VideoInfo,
    pub out_info: gst_video::VideoInfo,
    pub out_texture: bool,
}

pub fn is_texture(caps: &gst::CapsRef) -> bool {
    caps.features(0)
        .is_some_and(|f| f.contains(CAPS_FEATURE_WGPU_TEXTURE))
}

pub fn negotiate(
    what: &str,
    incaps: &gst::Caps,
    outcaps: &gst::Caps,
    cpu: bool,
) -> std::result::Result<Negotiated, String> {
    let in_info = gst_video::VideoInfo::from_caps(incaps)
        .map_err(|_| format!("cannot parse input caps {incaps}"))?;
    let out_info = gst_video::VideoInfo::from_caps(outcaps)
        .map_err(|_| format!("cannot parse output caps {outcaps}"))?;
    if in_info.width() == 0 || in_info.height() == 0 {
        return Err(format!(
            "zero-size frames ({}x{}) cannot be {what}",
            in_info.width(),
            in_info.height()
        ));
    }
    video_format(&in_info).map_err(|e| e.to_string())?;
    if cpu && (is_texture(incaps) || is_texture(outcaps)) {
        return Err("device=cpu works on system memory only, not memory:WgpuTexture".into());
    }
    Ok(Negotiated {
        in_info,
        out_info,
        out_texture: is_texture(outcaps),
    })
}

/// Pad templates of the processing elements: any of [`FORMATS`] in, RGBA
/// out, both in system memory and `memory:WgpuTexture`.
pub fn rgba_templates() -> Vec<gst::PadTemplate> {
    let mut sink = texture_caps();
    sink.merge(system_caps());
    let rgba = || gst_video::VideoCapsBuilder::new().format(gst_video::VideoFormat::Rgba);
    let mut src = rgba().features([CAPS_FEATURE_WGPU_TEXTURE]).build();
    src.merge(rgba().build());
    vec![
        gst::PadTemplate::new(
            "sink",
            gst::PadDirection::Sink,
            gst::PadPresence::Always,
            &sink,
        )
        .unwrap(),
        gst::PadTemplate::new(
            "src",
            gst::PadDirection::Src,
            gst::PadPresence::Always,
            &src,
        )
        .unwrap(),
    ]
}
