//! Caps shared by the elements: the formats the video module handles, in
//! system memory, in `memory:WgpuTexture` and, on the way in, in
//! `memory:DMABuf` (GStreamer 1.22's form, `format=NV12` etc., and 1.24's,
//! `format=DMA_DRM` with a `drm-format`, read by [`super::drm_format`]).
//!
//! Where a peer offers several memories, the inputs prefer
//! `memory:WgpuTexture` (no copy at all), then `memory:DMABuf` (imported,
//! or one counted upload where the device cannot import it), then system
//! memory; a system-memory output keeps its input in system memory first,
//! as before, but still asks for DMA-BUFs before plain memory.

use super::drm_format::{self, MODIFIER_LINEAR};
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

/// The caps feature of DMA-BUF memory (`GST_CAPS_FEATURE_MEMORY_DMABUF`).
pub const CAPS_FEATURE_DMABUF: &str = "memory:DMABuf";

/// The `format` of GStreamer 1.24's DMA-BUF caps, whose real format is in
/// `drm-format`.
const DMA_DRM: &str = "DMA_DRM";

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

/// `memory:DMABuf` caps in both forms: GStreamer 1.22's (one of [`FORMATS`])
/// and 1.24's (`format=DMA_DRM`, any `drm-format`: its fourcc and modifier
/// are checked when the caps are set, so that an unknown one fails with its
/// name rather than as a bare not-negotiated).
pub fn dmabuf_caps() -> gst::Caps {
    let mut caps = gst_video::VideoCapsBuilder::new()
        .features([CAPS_FEATURE_DMABUF])
        .format_list(FORMATS)
        .build();
    caps.merge(dma_drm_caps());
    caps
}

fn dma_drm_caps() -> gst::Caps {
    let mut caps = gst_video::VideoCapsBuilder::new()
        .features([CAPS_FEATURE_DMABUF])
        .build();
    caps.get_mut()
        .expect("a new caps is writable")
        .structure_mut(0)
        .expect("the builder made one structure")
        .set("format", DMA_DRM);
    caps
}

/// What an element that takes frames in any memory accepts, in the order it
/// prefers them: texture, DMA-BUF, system memory.
pub fn any_memory_caps() -> gst::Caps {
    let mut caps = texture_caps();
    caps.merge(dmabuf_caps());
    caps.merge(system_caps());
    caps
}

/// What an element that uploads (or imports) frames accepts: DMA-BUF, then
/// system memory.
pub fn upload_sink_caps() -> gst::Caps {
    let mut caps = dmabuf_caps();
    caps.merge(system_caps());
    caps
}

pub fn is_dmabuf(features: &gst::CapsFeaturesRef) -> bool {
    features.contains(CAPS_FEATURE_DMABUF)
}

fn is_dma_drm(s: &gst::StructureRef) -> bool {
    s.get::<&str>("format").is_ok_and(|f| f == DMA_DRM)
}

/// `s` (a DMA_DRM structure, perhaps not fixed) in GStreamer 1.22's terms:
/// the format its `drm-format` names when that is one string wgnn reads, any
/// of [`FORMATS`] otherwise (a list, or no drm-format yet); `drm-format`
/// removed. For `transform_caps`, where nothing may fail.
fn drm_as_formats(s: &mut gst::StructureRef) {
    let format = s
        .get::<&str>("drm-format")
        .ok()
        .and_then(|d| drm_format::parse(d).ok())
        .map(|d| d.format);
    s.remove_field("drm-format");
    match format {
        Some(f) => s.set("format", f.to_str()),
        None => s.set("format", gst::List::new(FORMATS.iter().map(|f| f.to_str()))),
    }
}

/// A negotiated input: its video info (in GStreamer 1.22's terms, whichever
/// form the caps had) and the DRM modifier of its DMA-BUFs (linear unless
/// 1.24's `drm-format` names another).
#[derive(Clone, Debug)]
pub struct Input {
    pub info: gst_video::VideoInfo,
    pub modifier: u64,
}

/// Parses fixed caps in any of the forms wgnn accepts; the error is one
/// line saying why not (an unknown DRM fourcc, a bad modifier, ...).
pub fn input(caps: &gst::CapsRef) -> std::result::Result<Input, String> {
    let mut modifier = MODIFIER_LINEAR;
    let mut plain = caps.to_owned();
    if let Some(s) = plain.get_mut().and_then(|c| c.structure_mut(0)) {
        if is_dma_drm(s) {
            let drm = s.get::<&str>("drm-format").map_err(|_| {
                format!("DMA_DRM caps without a drm-format string cannot be read: {caps}")
            })?;
            let d = drm_format::parse(drm)?;
            modifier = d.modifier;
            s.remove_field("drm-format");
            s.set("format", d.format.to_str());
        }
    }
    let info =
        gst_video::VideoInfo::from_caps(&plain).map_err(|_| format!("cannot parse caps {caps}"))?;
    Ok(Input { info, modifier })
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
    filtered(other, filter)
}

/// `transform_caps` of `wgnnupload`: DMA-BUF (either form) or system memory
/// in, the same format in texture memory out.
pub fn upload_transform(
    direction: gst::PadDirection,
    caps: &gst::Caps,
    filter: Option<&gst::Caps>,
) -> gst::Caps {
    let mut out = gst::Caps::new_empty();
    {
        match direction {
            gst::PadDirection::Sink => {
                for s in caps.iter() {
                    let mut s = s.to_owned();
                    if is_dma_drm(&s) {
                        drm_as_formats(&mut s);
                    }
                    let f = gst::CapsFeatures::new([CAPS_FEATURE_WGPU_TEXTURE]);
                    out.merge_structure_full(s, Some(f));
                }
            }
            _ => {
                // DMA-BUFs first: every structure in both DMA-BUF forms,
                // then in system memory.
                for kind in [Some(false), Some(true), None] {
                    for s in caps.iter() {
                        let mut s = s.to_owned();
                        let features = match kind {
                            Some(drm) => {
                                if drm {
                                    s.remove_field("format");
                                    s.set("format", DMA_DRM);
                                }
                                gst::CapsFeatures::new([CAPS_FEATURE_DMABUF])
                            }
                            None => gst::CapsFeatures::new_empty(),
                        };
                        out.merge_structure_full(s, Some(features));
                    }
                }
            }
        }
    }
    filtered(out, filter)
}

/// The memories `caps` offer, for messages: "any caps", or each memory
/// once in order ("system memory, memory:DMABuf").
pub fn memories(caps: &gst::CapsRef) -> String {
    if caps.is_any() {
        return "any caps".into();
    }
    if caps.is_empty() {
        return "no caps".into();
    }
    let mut names: Vec<String> = Vec::new();
    for (_, f) in caps.iter_with_features() {
        let name = if f.is_any() {
            "any memory".to_string()
        } else if f.is_empty() || f.contains("memory:SystemMemory") {
            "system memory".to_string()
        } else {
            f.to_string()
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(", ")
}

/// Why the element behind `src`'s peer cannot be sent `memory:WgpuTexture`
/// frames, or `None` where it can. Such a buffer carries no system memory,
/// only its textures, so only an element whose caps name the feature reads
/// it; one that takes any caps or any memory (filesink, fakesink, identity,
/// an appsink without caps) would get empty buffers: a file of 0 bytes.
/// Naming the feature in a capsfilter
/// (`video/x-raw(memory:WgpuTexture)`) passes the textures on.
pub fn texture_refused_by_peer(src: &gst::Pad) -> Option<String> {
    use gst::prelude::*;
    let peer = src.peer()?;
    let caps = peer.query_caps(None);
    if names_textures(&caps) {
        return None;
    }
    let who = peer
        .parent_element()
        .map_or_else(|| peer.name().to_string(), |e| e.name().to_string());
    Some(format!(
        "{who} takes {} but not {CAPS_FEATURE_WGPU_TEXTURE} by name, and texture frames carry \
         no system memory for it to read: put wgnndownload before it (or, to hand the \
         textures on, a capsfilter video/x-raw({CAPS_FEATURE_WGPU_TEXTURE}))",
        memories(&caps)
    ))
}

/// Whether `caps` name `memory:WgpuTexture` (ANY caps do not: an element
/// taking anything reads system memory).
fn names_textures(caps: &gst::CapsRef) -> bool {
    caps.iter_with_features()
        .any(|(_, f)| !f.is_any() && f.contains(CAPS_FEATURE_WGPU_TEXTURE))
}

/// `caps` (what a processing element could make on its src pad) without
/// their `memory:WgpuTexture` structures where the element behind the pad's peer
/// does not name the feature: such an element (filesink, appsink without
/// caps) would get buffers with no bytes, so the frame is downloaded (one
/// counted transfer) instead. An unlinked pad keeps them.
pub fn readable_by_peer(element: &gst::Element, caps: gst::Caps) -> gst::Caps {
    use gst::prelude::*;
    let Some(peer) = element.static_pad("src").and_then(|p| p.peer()) else {
        return caps;
    };
    if names_textures(&peer.query_caps(None)) {
        return caps;
    }
    without_textures(&caps)
}

/// `caps` without the structures whose features may be
/// `memory:WgpuTexture` (ANY features included).
pub fn without_textures(caps: &gst::CapsRef) -> gst::Caps {
    let mut out = gst::Caps::new_empty();
    {
        let out = out.get_mut().expect("a new caps is writable");
        for (s, f) in caps.iter_with_features() {
            if !f.contains(CAPS_FEATURE_WGPU_TEXTURE) {
                out.append_structure_full(s.to_owned(), Some(f.to_owned()));
            }
        }
    }
    out
}

/// Whether every structure of `caps` is in `memory:WgpuTexture`.
pub fn only_textures(caps: &gst::CapsRef) -> bool {
    !caps.is_any()
        && !caps.is_empty()
        && caps
            .iter_with_features()
            .all(|(_, f)| !f.is_any() && f.contains(CAPS_FEATURE_WGPU_TEXTURE))
}

/// `caps` followed by their plain-format structures again in
/// `memory:WgpuTexture`.
pub fn and_textures(caps: gst::Caps) -> gst::Caps {
    let mut out = caps.clone();
    for (s, f) in caps.iter_with_features() {
        let drm = s.get::<&str>("format").is_ok_and(|f| f == DMA_DRM);
        if f.is_any() || f.contains(CAPS_FEATURE_WGPU_TEXTURE) || drm {
            continue;
        }
        out.merge_structure_full(
            s.to_owned(),
            Some(gst::CapsFeatures::new([CAPS_FEATURE_WGPU_TEXTURE])),
        );
    }
    out
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

/// The memory a caps structure's frames live in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Memory {
    Texture,
    Dmabuf,
    System,
}

impl Memory {
    fn of(features: &gst::CapsFeaturesRef) -> Memory {
        if features.contains(CAPS_FEATURE_WGPU_TEXTURE) {
            Memory::Texture
        } else if is_dmabuf(features) {
            Memory::Dmabuf
        } else {
            Memory::System
        }
    }

    fn features(self) -> gst::CapsFeatures {
        match self {
            Memory::Texture => gst::CapsFeatures::new([CAPS_FEATURE_WGPU_TEXTURE]),
            Memory::Dmabuf => gst::CapsFeatures::new([CAPS_FEATURE_DMABUF]),
            Memory::System => gst::CapsFeatures::new_empty(),
        }
    }
}

/// `transform_caps` of the processing elements (RGBA out, any of [`FORMATS`]
/// in): each structure in every memory the other side takes, in the order
/// of preference: the outputs are texture or system memory, the same kind
/// as the input first (a DMA-BUF input counts as system memory); the inputs
/// are texture, DMA-BUF (both forms) and system memory, the same kind as the
/// output first, with DMA-BUF always before system memory. Texture memory is
/// left out when the element runs on the CPU, and DMA-BUFs come after
/// system memory there, since they are mapped, not imported. `resize` maps a
/// structure's width and height across the element (it gets the direction
/// the caps travel); a structure it refuses (returns false) is dropped.
/// Callers filter the result ([`filtered`]) after their own changes.
pub fn processing_transform(
    direction: gst::PadDirection,
    caps: &gst::Caps,
    cpu: bool,
    mut resize: impl FnMut(&mut gst::StructureRef, gst::PadDirection) -> bool,
) -> gst::Caps {
    use Memory::*;
    let formats = gst::List::new(FORMATS.iter().map(|f| f.to_str()));
    let order = |from: Memory| -> &'static [Memory] {
        match (direction, from, cpu) {
            (gst::PadDirection::Sink, _, true) => &[System],
            (gst::PadDirection::Sink, Texture, false) => &[Texture, System],
            (gst::PadDirection::Sink, _, false) => &[System, Texture],
            (_, _, true) => &[System, Dmabuf],
            (_, Texture, false) => &[Texture, Dmabuf, System],
            (_, _, false) => &[Dmabuf, System, Texture],
        }
    };
    let mut out = gst::Caps::new_empty();
    for rank in 0..3 {
        for (s, f) in caps.iter_with_features() {
            let Some(&memory) = order(Memory::of(f)).get(rank) else {
                continue;
            };
            let mut s = s.to_owned();
            s.remove_fields(["colorimetry", "chroma-site", "drm-format"]);
            match direction {
                gst::PadDirection::Sink => s.set("format", "RGBA"),
                _ => s.set("format", &formats),
            }
            if !resize(&mut s, direction) {
                continue;
            }
            if memory == Dmabuf {
                let mut drm = s.clone();
                drm.set("format", DMA_DRM);
                out.merge_structure_full(s, Some(memory.features()));
                out.merge_structure_full(drm, Some(memory.features()));
            } else {
                out.merge_structure_full(s, Some(memory.features()));
            }
        }
    }
    out
}

/// `caps` within `filter`, in the filter's order of preference.
pub fn filtered(caps: gst::Caps, filter: Option<&gst::Caps>) -> gst::Caps {
    match filter {
        Some(f) => f.intersect_with_mode(&caps, gst::CapsIntersectMode::First),
        None => caps,
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
    /// The DRM modifier of DMA-BUF input (linear unless the caps say).
    pub in_modifier: u64,
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
    let Input {
        info: in_info,
        modifier: in_modifier,
    } = input(incaps).map_err(|e| format!("input caps: {e}"))?;
    let out_info = input(outcaps)
        .map_err(|e| format!("output caps: {e}"))?
        .info;
    if in_info.width() == 0 || in_info.height() == 0 {
        return Err(format!(
            "zero-size frames ({}x{}) cannot be {what}",
            in_info.width(),
            in_info.height()
        ));
    }
    video_format(&in_info).map_err(|e| e.to_string())?;
    if cpu && (is_texture(incaps) || is_texture(outcaps)) {
        return Err(format!(
            "device=cpu works on system memory only and cannot read {CAPS_FEATURE_WGPU_TEXTURE} \
             frames: put wgnndownload before it, or run it on the GPU"
        ));
    }
    if cpu && in_modifier != MODIFIER_LINEAR {
        return Err(format!(
            "device=cpu maps DMA-BUFs as plain memory and cannot read DRM modifier \
             {in_modifier:#018x} (only linear ones): run on the GPU, which imports them"
        ));
    }
    Ok(Negotiated {
        in_info,
        in_modifier,
        out_info,
        out_texture: is_texture(outcaps),
    })
}

/// Pad templates of the processing elements: any of [`FORMATS`] in, in
/// `memory:WgpuTexture`, `memory:DMABuf` or system memory; RGBA out, in
/// `memory:WgpuTexture` or system memory.
pub fn rgba_templates() -> Vec<gst::PadTemplate> {
    let sink = any_memory_caps();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(s: &str) -> gst::Caps {
        gst::init().unwrap();
        s.parse().unwrap()
    }

    #[test]
    fn dmabuf_feature_is_gstreamers() {
        assert_eq!(
            CAPS_FEATURE_DMABUF,
            gst_allocators::CAPS_FEATURE_MEMORY_DMABUF.as_str()
        );
    }

    #[test]
    fn dma_drm_caps_read_as_their_format_and_modifier() {
        let c = caps(
            "video/x-raw(memory:DMABuf), format=DMA_DRM, drm-format=NV12:0x0100000000000002, \
             width=33, height=17, framerate=30/1",
        );
        let nv12 = input(&c).unwrap();
        assert_eq!(nv12.info.format(), gst_video::VideoFormat::Nv12);
        assert_eq!((nv12.info.width(), nv12.info.height()), (33, 17));
        assert_eq!(nv12.modifier, 0x0100_0000_0000_0002);
        let c =
            caps("video/x-raw(memory:DMABuf), format=DMA_DRM, drm-format=AB24, width=4, height=2");
        let rgba = input(&c).unwrap();
        assert_eq!(rgba.info.format(), gst_video::VideoFormat::Rgba);
        assert_eq!(rgba.modifier, MODIFIER_LINEAR);
        // GStreamer 1.22's form and plain caps: linear.
        for s in [
            "video/x-raw(memory:DMABuf), format=I420, width=5, height=3",
            "video/x-raw, format=BGRx, width=5, height=3",
        ] {
            assert_eq!(input(&caps(s)).unwrap().modifier, MODIFIER_LINEAR);
        }
    }

    #[test]
    fn bad_dma_drm_caps_say_why() {
        let e = input(&caps(
            "video/x-raw(memory:DMABuf), format=DMA_DRM, drm-format=P010, width=4, height=2",
        ))
        .unwrap_err();
        assert!(
            e.contains("P010") && e.contains("not one wgnn reads"),
            "{e}"
        );
        let e = input(&caps(
            "video/x-raw(memory:DMABuf), format=DMA_DRM, drm-format=NV12:zz, width=4, height=2",
        ))
        .unwrap_err();
        assert!(e.contains("modifier \"zz\""), "{e}");
        let e = input(&caps(
            "video/x-raw(memory:DMABuf), format=DMA_DRM, width=4, height=2",
        ))
        .unwrap_err();
        assert!(e.contains("without a drm-format"), "{e}");
    }

    #[test]
    fn cpu_refuses_tiled_dma_bufs() {
        let tiled = caps(
            // (string): "AB24:0x..." alone would parse as a flagset.
            "video/x-raw(memory:DMABuf), format=DMA_DRM, \
             drm-format=(string)AB24:0x0100000000000001, width=4, height=2",
        );
        let out = caps("video/x-raw, format=RGBA, width=4, height=2");
        let e = negotiate("segmented", &tiled, &out, true).err().unwrap();
        assert!(e.contains("0x0100000000000001"), "{e}");
        let n = negotiate("segmented", &tiled, &out, false).unwrap();
        assert_eq!(n.in_modifier, 0x0100_0000_0000_0001);
    }

    fn memories(c: &gst::Caps) -> Vec<(Memory, String)> {
        c.iter_with_features()
            .map(|(s, f)| (Memory::of(f), s.get::<String>("format").unwrap_or_default()))
            .collect()
    }

    #[test]
    fn inputs_prefer_textures_then_dmabufs_then_system_memory() {
        use Memory::*;
        let texture = caps("video/x-raw(memory:WgpuTexture), format=RGBA, width=8, height=8");
        let system = caps("video/x-raw, format=RGBA, width=8, height=8");
        let src = gst::PadDirection::Src;
        let up = |c: &gst::Caps, cpu| processing_transform(src, c, cpu, |_, _| true);
        let kinds = |c: &gst::Caps| -> Vec<(Memory, bool)> {
            memories(c)
                .into_iter()
                .map(|(m, f)| (m, f == DMA_DRM))
                .collect()
        };
        assert_eq!(
            kinds(&up(&texture, false)),
            [
                (Texture, false),
                (Dmabuf, false),
                (Dmabuf, true),
                (System, false)
            ]
        );
        assert_eq!(
            kinds(&up(&system, false)),
            [
                (Dmabuf, false),
                (Dmabuf, true),
                (System, false),
                (Texture, false)
            ]
        );
        assert_eq!(
            kinds(&up(&texture, true)),
            [(System, false), (Dmabuf, false), (Dmabuf, true)]
        );
        // A DMA-BUF input gives RGBA out in either memory, system first.
        let drm =
            caps("video/x-raw(memory:DMABuf), format=DMA_DRM, drm-format=NV12, width=8, height=8");
        let down = processing_transform(gst::PadDirection::Sink, &drm, false, |_, _| true);
        assert_eq!(
            memories(&down),
            [(System, "RGBA".into()), (Texture, "RGBA".into())]
        );
        assert!(down.iter().all(|s| !s.has_field("drm-format")));
    }

    #[test]
    fn upload_keeps_the_format_across_memories() {
        use Memory::*;
        let drm = caps(
            "video/x-raw(memory:DMABuf), format=DMA_DRM, drm-format=YU12:0x0, width=8, height=8",
        );
        let out = upload_transform(gst::PadDirection::Sink, &drm, None);
        assert_eq!(memories(&out), [(Texture, "I420".into())]);
        let unknown =
            caps("video/x-raw(memory:DMABuf), format=DMA_DRM, drm-format=P010, width=8, height=8");
        let out = upload_transform(gst::PadDirection::Sink, &unknown, None);
        assert_eq!(
            out.structure(0)
                .unwrap()
                .get::<gst::List>("format")
                .unwrap()
                .len(),
            FORMATS.len()
        );
        let texture =
            caps("video/x-raw(memory:WgpuTexture), format=NV12, width=8, height=8, framerate=30/1");
        let back = upload_transform(gst::PadDirection::Src, &texture, None);
        assert_eq!(
            memories(&back),
            [
                (Dmabuf, "NV12".into()),
                (Dmabuf, DMA_DRM.into()),
                (System, "NV12".into())
            ]
        );
        // The templates take what the transform gives.
        assert!(back.is_subset(&upload_sink_caps()));
        assert!(dmabuf_caps().can_intersect(&drm));
    }
}
