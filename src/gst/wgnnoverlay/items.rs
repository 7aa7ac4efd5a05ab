//! What the element draws for each ROI: the `colors` property (a palette
//! cycled by label id) and the text of a label.

use gst_video::VideoRegionOfInterestMeta;

use crate::gst::roi::{self, Roi};
use crate::video::{OverlayItem, OverlayMask};

/// The default palette: distinct, saturated colours that read on most
/// pictures (red, green, blue, yellow, magenta, cyan, orange, purple).
pub const DEFAULT_COLORS: &str = "FF3B30,34C759,007AFF,FFCC00,FF2D95,00C7BE,FF9500,AF52DE";

/// The accepted form of `colors`, for the refusal of a bad value.
pub const COLORS_ACCEPTED: &str =
    "comma-separated hex colours RRGGBB (a leading # allowed), at least one, e.g. FF0000,00FF00";

/// Parses `colors`: comma-separated 'RRGGBB' hex colours (a leading '#' is
/// allowed), at least one. An error says what is wrong with the value
/// ([`COLORS_ACCEPTED`] says what is right).
pub fn parse_colors(s: &str) -> Result<Vec<[u8; 3]>, String> {
    if s.trim().is_empty() {
        return Err("no colour".into());
    }
    s.split(',')
        .map(|c| {
            let c = c.trim();
            let hex = c.strip_prefix('#').unwrap_or(c);
            if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(if c.is_empty() {
                    "an empty colour between commas".to_string()
                } else {
                    format!("'{c}' is not 6 hex digits")
                });
            }
            let v = u32::from_str_radix(hex, 16).map_err(|_| format!("'{c}' is not hex"))?;
            Ok([(v >> 16) as u8, (v >> 8) as u8, v as u8])
        })
        .collect()
}

/// The `colors` value of a palette, as the property reads back.
pub fn format_colors(colors: &[[u8; 3]]) -> String {
    colors
        .iter()
        .map(|[r, g, b]| format!("{r:02X}{g:02X}{b:02X}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// How labels are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextOptions {
    pub labels: bool,
    pub confidence: bool,
}

/// Whether `meta` came from a detector (has a `detection` param), which is
/// what gives its confidence a meaning worth showing.
pub fn is_detection(meta: &VideoRegionOfInterestMeta) -> bool {
    meta.param(roi::DETECTION).is_some()
}

/// The item drawn for `roi`: its box (turned by its `rotation`) in the
/// colour of its label id, with the label, the confidence where a detector
/// gave one, and the top class where a classifier ran on it; its
/// keypoints with their scores and its mask. A whole-frame classification
/// (no detection) draws no box, only its label in the frame's top-left
/// corner.
pub fn item_for(roi: &Roi, detected: bool, colors: &[[u8; 3]], text: TextOptions) -> OverlayItem {
    let o = &roi.object;
    let whole_frame = !detected && o.label == roi::WHOLE_FRAME;
    let top_class = o.classes.first();
    let mut parts = Vec::new();
    if text.labels && !whole_frame {
        parts.push(o.label.clone());
    }
    if text.confidence && detected {
        parts.push(format!("{:.2}", o.confidence));
    }
    if text.labels {
        if let Some(c) = top_class {
            parts.push(c.label.clone());
        }
    }
    let parts: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    let label_id = match (whole_frame, top_class) {
        (true, Some(c)) => c.label_id,
        _ => o.label_id,
    };
    let color = match colors.len() {
        0 => [255, 255, 255],
        n => colors[label_id % n],
    };
    let rect = if whole_frame {
        [0.0; 4]
    } else {
        [o.rect.x, o.rect.y, o.rect.w, o.rect.h]
    };
    OverlayItem {
        rect,
        color,
        text: parts.join(" "),
        keypoints: o.keypoints.clone(),
        keypoint_scores: o.extras.keypoint_scores.clone(),
        angle: o.extras.angle,
        mask: o.extras.mask.as_ref().map(|m| OverlayMask {
            x: m.x,
            y: m.y,
            width: m.width,
            height: m.height,
            bits: m.bits.clone(),
        }),
        path: None,
    }
}

/// Copies every ROI meta of `from` onto `to`, with its id, parent and
/// params: the results travel on with the drawn frame.
pub fn copy_rois(from: &gst::BufferRef, to: &mut gst::BufferRef) {
    for meta in from.iter_meta::<VideoRegionOfInterestMeta>() {
        let mut copy = VideoRegionOfInterestMeta::add(to, meta.roi_type(), meta.rect());
        copy.set_id(meta.id());
        copy.set_parent_id(meta.parent_id());
        for p in meta.params() {
            copy.add_param(p.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{Classification, Detection, Rect};

    #[test]
    fn colours_parse_with_or_without_hash_and_refuse_anything_else() {
        assert_eq!(
            parse_colors("FF0000, #00ff80,0000fe").unwrap(),
            vec![[255, 0, 0], [0, 255, 128], [0, 0, 254]]
        );
        assert_eq!(
            format_colors(&parse_colors(DEFAULT_COLORS).unwrap()),
            DEFAULT_COLORS
        );
        for bad in [
            "", " ", "FF00", "FF00000", "GG0000", "FF0000,", "red", "+F0000", "0xFF00",
        ] {
            let e = parse_colors(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
    }

    fn rois(buf: &mut gst::BufferRef) -> Vec<(Roi, bool)> {
        let detected: Vec<bool> = buf
            .iter_meta::<VideoRegionOfInterestMeta>()
            .map(|m| is_detection(&m))
            .collect();
        roi::read(buf, 100, 50).into_iter().zip(detected).collect()
    }

    #[test]
    fn items_carry_label_confidence_and_top_class_in_their_label_ids_colour() {
        gst::init().unwrap();
        let mut buf = gst::Buffer::new();
        let buf = buf.get_mut().unwrap();
        let det = Detection {
            label: "face".into(),
            label_id: 3,
            confidence: 0.8749,
            rect: Rect::new(10.5, 5.0, 20.0, 30.0),
            extras: Default::default(),
            keypoints: vec![[12.0, 8.0]],
        };
        let id = roi::attach_detection(buf, &det, 100, 50, -1);
        let smile = Classification {
            label: "smile".into(),
            label_id: 1,
            confidence: 0.9,
        };
        let other = Classification {
            label: "frown".into(),
            label_id: 0,
            confidence: 0.1,
        };
        roi::attach_classes(buf, id, &[smile.clone(), other]);
        roi::attach_frame_classes(buf, std::slice::from_ref(&smile), 100, 50);
        let palette = [[1, 1, 1], [2, 2, 2]];
        let all = TextOptions {
            labels: true,
            confidence: true,
        };
        let found = rois(buf);
        let face = item_for(&found[0].0, found[0].1, &palette, all);
        assert_eq!(face.text, "face 0.87 smile");
        assert_eq!(face.color, [2, 2, 2], "label id 3 of a 2-colour palette");
        assert!((face.rect[0] - 10.5).abs() < 1e-4 && (face.rect[3] - 30.0).abs() < 1e-4);
        assert_eq!(face.keypoints.len(), 1);
        let frame = item_for(&found[1].0, found[1].1, &palette, all);
        assert_eq!(frame.text, "smile");
        assert_eq!((frame.rect, frame.color), ([0.0; 4], [2, 2, 2]));

        let only_conf = TextOptions {
            labels: false,
            confidence: true,
        };
        assert_eq!(
            item_for(&found[0].0, true, &palette, only_conf).text,
            "0.87"
        );
        assert_eq!(item_for(&found[1].0, false, &palette, only_conf).text, "");
        let only_labels = TextOptions {
            labels: true,
            confidence: false,
        };
        assert_eq!(
            item_for(&found[0].0, true, &palette, only_labels).text,
            "face smile"
        );
    }

    #[test]
    fn rois_are_copied_with_ids_parents_and_params() {
        gst::init().unwrap();
        let mut a = gst::Buffer::new();
        let det = Detection {
            label: "cat".into(),
            label_id: 0,
            confidence: 0.5,
            rect: Rect::new(1.0, 2.0, 3.0, 4.0),
            extras: Default::default(),
            keypoints: vec![[1.0, 1.0], [2.0, 2.0]],
        };
        let parent = roi::attach_detection(a.get_mut().unwrap(), &det, 100, 50, -1);
        roi::attach_detection(a.get_mut().unwrap(), &det, 100, 50, parent);
        let mut b = gst::Buffer::new();
        copy_rois(&a, b.get_mut().unwrap());
        assert_eq!(roi::read(&a, 100, 50), roi::read(&b, 100, 50));
        assert_eq!(roi::read(&b, 100, 50)[1].parent_id, parent);
    }
}
