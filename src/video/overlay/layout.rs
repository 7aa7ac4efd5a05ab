//! Items -> the draw list: every box edge, label background, glyph and
//! keypoint as one quad, in painting order, in whole frame pixels where
//! that makes edges exact (segments, polygons and masks: shapes.rs). Pure
//! CPU work, testable without a GPU.

use super::atlas::Atlas;
use super::{OverlayItem, OverlayStyle};

/// `Quad` of overlay.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Quad {
    /// x0, y0, x1, y1: the pixels whose centres are inside are covered.
    pub bounds: [f32; 4],
    /// Glyph: atlas texel of the top-left pixel. Disc: centre and radius.
    /// Segment: its ends. Polygon: corner count. Mask: its width.
    pub extra: [f32; 4],
    /// RGBA8, red in the low byte.
    pub color: u32,
    pub kind: u32,
    /// Segment: half its thickness.
    pub width: f32,
    /// Polygon, mask: where its corners or bits start in the shapes.
    pub data: u32,
}

impl Quad {
    pub(crate) fn new(bounds: [f32; 4], extra: [f32; 4], color: u32, kind: u32) -> Quad {
        Quad {
            bounds,
            extra,
            color,
            kind,
            width: 0.0,
            data: 0,
        }
    }
}

/// The header of overlay.wgsl's `DrawList`, before its quads.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ListHeader {
    pub count: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

pub(crate) const KIND_FILL: u32 = 0;
pub(crate) const KIND_GLYPH: u32 = 1;
pub(crate) const KIND_DISC: u32 = 2;
pub(crate) const KIND_SEGMENT: u32 = 3;
pub(crate) const KIND_POLYGON: u32 = 4;
pub(crate) const KIND_MASK: u32 = 5;

/// Characters of a label past this many are not drawn: a label longer than
/// any frame is wide would only add quads that fall outside it.
pub(crate) const MAX_LABEL_CHARS: usize = 256;

/// Coordinates are kept within this many pixels of the frame before
/// rounding, so that any finite input rounds to a representable whole.
pub(crate) const FAR: f32 = 1.0e7;

pub(crate) fn rgba(c: [u8; 3]) -> u32 {
    rgba_alpha(c, 1.0)
}

/// `c` with opacity `alpha` (0..1).
pub(crate) fn rgba_alpha(c: [u8; 3], alpha: f32) -> u32 {
    let a = (alpha.clamp(0.0, 1.0) * 255.0).round() as u8;
    u32::from_le_bytes([c[0], c[1], c[2], a])
}

/// Black or white, whichever stands out more on `background` (by luma).
pub(crate) fn text_color(background: [u8; 3]) -> [u8; 3] {
    let [r, g, b] = background.map(f32::from);
    if 0.299 * r + 0.587 * g + 0.114 * b > 140.0 {
        [0, 0, 0]
    } else {
        [255, 255, 255]
    }
}

/// Padding around a label's text, pixels.
pub(crate) fn label_padding(font_size: f32) -> i32 {
    ((font_size * 0.15).round() as i32).max(1)
}

/// Builds the draw list of `items` on a `width` x `height` frame. Quads that
/// cannot touch the frame are left out; items with non-finite rectangles
/// draw nothing but their finite keypoints.
pub(crate) struct Layout<'a> {
    pub atlas: &'a Atlas,
    pub style: OverlayStyle,
    pub width: u32,
    pub height: u32,
    /// Most words of shapes: masks past it are left out.
    pub shape_words: usize,
}

impl Layout<'_> {
    /// The quads, and the shapes (words) their polygons and masks read.
    pub(crate) fn draw_list(&self, items: &[OverlayItem]) -> (Vec<Quad>, Vec<u32>) {
        let mut quads = Vec::new();
        let mut shapes = Vec::new();
        for item in items {
            self.item(item, &mut quads, &mut shapes);
        }
        quads.retain(|q| self.touches_frame(q));
        (quads, shapes)
    }

    #[cfg(test)]
    pub(crate) fn quads(&self, items: &[OverlayItem]) -> Vec<Quad> {
        self.draw_list(items).0
    }

    fn touches_frame(&self, q: &Quad) -> bool {
        let [x0, y0, x1, y1] = q.bounds;
        x0 < x1
            && y0 < y1
            && x1 > 0.0
            && y1 > 0.0
            && x0 < self.width as f32
            && y0 < self.height as f32
    }

    fn fill(quads: &mut Vec<Quad>, bounds: [i32; 4], color: u32) {
        quads.push(Quad::new(
            bounds.map(|v| v as f32),
            [0.0; 4],
            color,
            KIND_FILL,
        ));
    }

    fn item(&self, item: &OverlayItem, quads: &mut Vec<Quad>, shapes: &mut Vec<u32>) {
        let color = rgba(item.color);
        if let Some(mask) = &item.mask {
            self.mask(mask, item.color, quads, shapes);
        }
        if let Some(path) = &item.path {
            self.path(path, item.color, quads, shapes);
        }
        let mut label_at = None;
        if item.rect.iter().all(|v| v.is_finite()) {
            let [x, y, w, h] = item.rect.map(|v| v.clamp(-FAR, FAR));
            match item.angle.filter(|a| a.is_finite()) {
                Some(angle) => label_at = self.rotated_box([x, y, w, h], angle, color, quads),
                None => {
                    let x0 = x.round() as i32;
                    let y0 = y.round() as i32;
                    let x1 = (x + w.max(0.0)).clamp(-FAR, FAR).round() as i32;
                    let y1 = (y + h.max(0.0)).clamp(-FAR, FAR).round() as i32;
                    self.outline([x0, y0, x1, y1], color, quads);
                    label_at = Some((x0, y0));
                }
            }
        }
        self.skeleton(item, color, quads);
        self.keypoints(item, color, quads);
        if let Some((x0, y0)) = label_at {
            self.label(item, x0, y0, quads);
        }
    }

    /// The box's outermost `line_width` pixels, inside [x0, x1) x [y0, y1).
    fn outline(&self, [x0, y0, x1, y1]: [i32; 4], color: u32, quads: &mut Vec<Quad>) {
        let lw = self.style.line_width.round() as i32;
        if lw <= 0 || x1 <= x0 || y1 <= y0 {
            return;
        }
        Self::fill(quads, [x0, y0, x1, (y0 + lw).min(y1)], color);
        Self::fill(quads, [x0, (y1 - lw).max(y0), x1, y1], color);
        Self::fill(quads, [x0, y0, (x0 + lw).min(x1), y1], color);
        Self::fill(quads, [(x1 - lw).max(x0), y0, x1, y1], color);
    }

    /// The label: a filled background in the item's colour, its top-left
    /// corner on the box's, above the box when there is room, else just
    /// inside it; the text in black or white on it.
    fn label(&self, item: &OverlayItem, x0: i32, y0: i32, quads: &mut Vec<Quad>) {
        if item.text.is_empty() {
            return;
        }
        let atlas = self.atlas;
        let pad = label_padding(self.style.font_size);
        let chars = item.text.chars().take(MAX_LABEL_CHARS);
        let text_w = chars
            .clone()
            .map(|c| atlas.glyph(c).advance)
            .sum::<f32>()
            .ceil() as i32;
        let label_w = text_w + 2 * pad;
        let label_h = atlas.line_height + 2 * pad;
        let top = if y0 - label_h >= 0 { y0 - label_h } else { y0 };
        let background = rgba(item.color);
        Self::fill(quads, [x0, top, x0 + label_w, top + label_h], background);
        let ink = rgba(text_color(item.color));
        let baseline = top + pad + atlas.ascent;
        let mut pen = 0.0f32;
        for c in chars {
            let g = atlas.glyph(c);
            if g.width > 0 && g.height > 0 {
                let gx = x0 + pad + pen.round() as i32 + g.left;
                let gy = baseline - g.top;
                quads.push(Quad::new(
                    [gx, gy, gx + g.width as i32, gy + g.height as i32].map(|v| v as f32),
                    [g.x as f32, g.y as f32, 0.0, 0.0],
                    ink,
                    KIND_GLYPH,
                ));
            }
            pen += g.advance;
        }
    }

    fn keypoints(&self, item: &OverlayItem, color: u32, quads: &mut Vec<Quad>) {
        let r = self.style.keypoint_radius;
        if r <= 0.0 {
            return;
        }
        for (i, &[x, y]) in item.keypoints.iter().enumerate() {
            if !self.keypoint_shown(item, i) {
                continue;
            }
            let (x, y) = (x.clamp(-FAR, FAR), y.clamp(-FAR, FAR));
            // One pixel beyond the radius: the antialiased rim.
            let reach = r + 1.0;
            quads.push(Quad::new(
                [
                    (x - reach).floor(),
                    (y - reach).floor(),
                    (x + reach).ceil(),
                    (y + reach).ceil(),
                ],
                [x, y, r, 0.0],
                color,
                KIND_DISC,
            ));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn style() -> OverlayStyle {
        OverlayStyle {
            line_width: 2.0,
            font_size: 12.0,
            keypoint_radius: 3.0,
            ..Default::default()
        }
    }

    fn item(rect: [f32; 4], text: &str) -> OverlayItem {
        OverlayItem {
            rect,
            color: [255, 0, 0],
            text: text.into(),
            ..Default::default()
        }
    }

    pub(crate) fn layout(atlas: &Atlas, w: u32, h: u32) -> Layout<'_> {
        Layout {
            atlas,
            style: style(),
            width: w,
            height: h,
            shape_words: 1 << 20,
        }
    }

    #[test]
    fn a_box_is_four_edges_of_the_line_width_inside_its_rectangle() {
        let atlas = Atlas::new(12.0).unwrap();
        let q = layout(&atlas, 100, 80).quads(&[item([10.2, 20.0, 30.0, 15.6], "")]);
        let fills: Vec<[f32; 4]> = q.iter().map(|q| q.bounds).collect();
        assert_eq!(
            fills,
            vec![
                [10.0, 20.0, 40.0, 22.0],
                [10.0, 34.0, 40.0, 36.0],
                [10.0, 20.0, 12.0, 36.0],
                [38.0, 20.0, 40.0, 36.0],
            ]
        );
        assert!(q
            .iter()
            .all(|q| q.kind == KIND_FILL && q.color == 0xff00_00ff));
    }

    #[test]
    fn labels_go_above_the_box_when_there_is_room_else_inside() {
        let atlas = Atlas::new(12.0).unwrap();
        let l = layout(&atlas, 200, 200);
        let label_h = atlas.line_height as f32 + 2.0 * label_padding(12.0) as f32;
        let above = l.quads(&[item([50.0, 100.0, 40.0, 40.0], "ab")]);
        let bg = above[4];
        assert_eq!(bg.kind, KIND_FILL);
        assert_eq!(
            (bg.bounds[0], bg.bounds[1], bg.bounds[3]),
            (50.0, 100.0 - label_h, 100.0)
        );
        let glyphs: Vec<&Quad> = above.iter().filter(|q| q.kind == KIND_GLYPH).collect();
        assert_eq!(glyphs.len(), 2);
        for g in &glyphs {
            assert!(g.bounds[0] >= bg.bounds[0] && g.bounds[2] <= bg.bounds[2]);
            assert!(g.bounds[1] >= bg.bounds[1] && g.bounds[3] <= bg.bounds[3]);
            // White on red.
            assert_eq!(g.color, 0xffff_ffff);
        }
        let inside = l.quads(&[item([50.0, 3.0, 40.0, 40.0], "ab")]);
        assert_eq!(inside[4].bounds[1], 3.0);
    }

    #[test]
    fn quads_off_the_frame_and_degenerate_items_are_left_out() {
        let atlas = Atlas::new(12.0).unwrap();
        let l = layout(&atlas, 64, 48);
        let mut points = item([f32::NAN, 0.0, 5.0, 5.0], "x");
        points.keypoints = vec![[10.0, 10.0], [f32::INFINITY, 3.0], [-50.0, -50.0]];
        let items = [
            item([100.0, 100.0, 20.0, 20.0], "far"),
            item([-30.0, -30.0, 10.0, 10.0], ""),
            item([5.0, 5.0, 0.0, 10.0], ""),
            item([5.0, 5.0, -4.0, 10.0], ""),
            item([f32::MAX, f32::MIN, f32::MAX, f32::MAX], "big"),
            points,
        ];
        let q = l.quads(&items);
        assert_eq!(q.len(), 1, "{q:?}");
        assert_eq!(
            (q[0].kind, q[0].extra[..3].to_vec()),
            (KIND_DISC, vec![10.0, 10.0, 3.0])
        );
    }

    #[test]
    fn a_zero_size_rectangle_still_carries_its_label() {
        let atlas = Atlas::new(12.0).unwrap();
        let q = layout(&atlas, 64, 48).quads(&[item([0.0, 0.0, 0.0, 0.0], "cat")]);
        assert_eq!(q[0].kind, KIND_FILL);
        assert_eq!((q[0].bounds[0], q[0].bounds[1]), (0.0, 0.0));
        assert_eq!(q.iter().filter(|q| q.kind == KIND_GLYPH).count(), 3);
    }

    #[test]
    fn text_is_black_on_light_colours_and_white_on_dark_ones() {
        assert_eq!(text_color([255, 255, 0]), [0, 0, 0]);
        assert_eq!(text_color([0, 255, 0]), [0, 0, 0]);
        assert_eq!(text_color([0, 0, 255]), [255, 255, 255]);
        assert_eq!(text_color([255, 0, 0]), [255, 255, 255]);
    }
}
