//! GStreamer 1.24's DMA-BUF caps (`format=DMA_DRM`, `drm-format=NV12:0x...`)
//! read by hand: wgnn builds against GStreamer 1.22, whose video library
//! knows neither the DMA_DRM format nor the `drm-format` field, so the
//! fourcc and the modifier are parsed here and mapped to the formats the
//! video module handles.

/// DRM_FORMAT_MOD_INVALID: never a real layout.
use crate::video::dmabuf::DRM_FORMAT_MOD_INVALID as MODIFIER_INVALID;
/// DRM_FORMAT_MOD_LINEAR: what a caps structure without a modifier means.
pub use crate::video::dmabuf::DRM_FORMAT_MOD_LINEAR as MODIFIER_LINEAR;

/// DRM fourccs (as `drm_fourcc.h` spells them) and the GStreamer formats
/// with the same bytes in memory. DRM names packed formats by their bits in
/// a little-endian word, GStreamer by their bytes: DRM's ABGR8888 ("AB24")
/// is GStreamer's RGBA, and so on (the same table as GStreamer 1.24's
/// `gst_video_dma_drm_fourcc_from_format`).
const FOURCCS: [(&str, gst_video::VideoFormat); 7] = [
    ("AB24", gst_video::VideoFormat::Rgba),
    ("AR24", gst_video::VideoFormat::Bgra),
    ("XB24", gst_video::VideoFormat::Rgbx),
    ("XR24", gst_video::VideoFormat::Bgrx),
    ("BG24", gst_video::VideoFormat::Rgb),
    ("NV12", gst_video::VideoFormat::Nv12),
    ("YU12", gst_video::VideoFormat::I420),
];

/// One `drm-format` value: the pixel format and the DRM modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrmFormat {
    pub format: gst_video::VideoFormat,
    pub modifier: u64,
}

/// The DRM fourcc of `format`, for the caps wgnn offers.
pub fn fourcc_of(format: gst_video::VideoFormat) -> Option<&'static str> {
    FOURCCS
        .iter()
        .find(|(_, f)| *f == format)
        .map(|(fourcc, _)| *fourcc)
}

/// Parses a `drm-format` caps value: a fourcc, then optionally `:` and the
/// modifier in hexadecimal with its `0x` (`NV12`, `AB24:0x0100000000000002`).
/// The error is one line naming the value and what is wrong with it.
pub fn parse(value: &str) -> Result<DrmFormat, String> {
    let (fourcc, modifier) = match value.split_once(':') {
        Some((f, m)) => (f, Some(m)),
        None => (value, None),
    };
    if fourcc.len() != 4 || !fourcc.is_ascii() {
        return Err(format!(
            "drm-format \"{value}\": \"{fourcc}\" is not a four-character DRM fourcc"
        ));
    }
    let format = FOURCCS
        .iter()
        .find(|(f, _)| *f == fourcc)
        .map(|(_, f)| *f)
        .ok_or_else(|| {
            let known: Vec<&str> = FOURCCS.iter().map(|(f, _)| *f).collect();
            format!(
                "drm-format \"{value}\": DRM fourcc {fourcc} is not one wgnn reads (it reads {})",
                known.join(", ")
            )
        })?;
    let modifier = match modifier {
        None => MODIFIER_LINEAR,
        Some(m) => parse_modifier(m).ok_or_else(|| {
            format!(
                "drm-format \"{value}\": modifier \"{m}\" is not a 64-bit hexadecimal number \
                 written 0x..."
            )
        })?,
    };
    if modifier == MODIFIER_INVALID {
        return Err(format!(
            "drm-format \"{value}\": the modifier is DRM_FORMAT_MOD_INVALID, no real layout"
        ));
    }
    Ok(DrmFormat { format, modifier })
}

fn parse_modifier(m: &str) -> Option<u64> {
    let digits = m.strip_prefix("0x").or_else(|| m.strip_prefix("0X"))?;
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_and_modified_formats_parse() {
        assert_eq!(
            parse("NV12").unwrap(),
            DrmFormat {
                format: gst_video::VideoFormat::Nv12,
                modifier: MODIFIER_LINEAR
            }
        );
        assert_eq!(
            parse("NV12:0x0100000000000002").unwrap(),
            DrmFormat {
                format: gst_video::VideoFormat::Nv12,
                modifier: 0x0100_0000_0000_0002
            }
        );
        assert_eq!(
            parse("AB24:0x0").unwrap().format,
            gst_video::VideoFormat::Rgba
        );
        assert_eq!(parse("XR24:0X1F").unwrap().modifier, 0x1f);
        assert_eq!(parse("YU12").unwrap().format, gst_video::VideoFormat::I420);
        assert_eq!(parse("BG24").unwrap().format, gst_video::VideoFormat::Rgb);
    }

    #[test]
    fn every_fourcc_maps_back_to_its_format() {
        for (fourcc, format) in FOURCCS {
            assert_eq!(fourcc_of(format), Some(fourcc));
            assert_eq!(parse(fourcc).unwrap().format, format);
        }
        assert_eq!(fourcc_of(gst_video::VideoFormat::Yuy2), None);
    }

    #[test]
    fn unknown_fourccs_are_refused_by_name() {
        let e = parse("P010:0x0").unwrap_err();
        assert!(
            e.contains("P010") && e.contains("not one wgnn reads"),
            "{e}"
        );
        let e = parse("NV1").unwrap_err();
        assert!(e.contains("four-character"), "{e}");
        let e = parse("").unwrap_err();
        assert!(e.contains("four-character"), "{e}");
        let e = parse("NV12X:0x0").unwrap_err();
        assert!(e.contains("four-character"), "{e}");
        let e = parse("ÄB2:0x0").unwrap_err();
        assert!(e.contains("four-character"), "{e}");
    }

    #[test]
    fn bad_modifier_text_is_refused() {
        for bad in [
            "NV12:",
            "NV12:0x",
            "NV12:12",
            "NV12:0xg1",
            "NV12:0x-1",
            "NV12:0x10000000000000000",
            "NV12:0x0:0x0",
            "NV12: 0x0",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("modifier"), "{bad}: {e}");
        }
        let e = parse("NV12:0x00ffffffffffffff").unwrap_err();
        assert!(e.contains("DRM_FORMAT_MOD_INVALID"), "{e}");
    }
}
