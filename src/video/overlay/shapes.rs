//! The draw list's general primitives and what is built of them: thick
//! segments (rotated boxes, pose skeletons, paths' edges), polygon fills
//! (closed paths: zones) and mask blends (segmentation). Pure CPU work;
//! overlay.wgsl's `coverage` is the other half of each.

use super::layout::{rgba, rgba_alpha, Layout, Quad, FAR, KIND_MASK, KIND_POLYGON, KIND_SEGMENT};
use super::OverlayItem;

/// The COCO-17 skeleton as Ultralytics draws it (`Annotator.skeleton`, made
/// 0-based): pairs of keypoint indices joined by a segment.
pub const COCO_SKELETON: [[usize; 2]; 19] = [
    [15, 13],
    [13, 11],
    [16, 14],
    [14, 12],
    [11, 12],
    [5, 11],
    [6, 12],
    [5, 6],
    [5, 7],
    [6, 8],
    [7, 9],
    [8, 10],
    [1, 2],
    [0, 1],
    [0, 2],
    [1, 3],
    [2, 4],
    [3, 5],
    [4, 6],
];

/// A segmentation mask: which pixels of a region of the frame are set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OverlayMask {
    /// The region, frame pixels.
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
    /// Row-major, `width * height` values (a mask of another length is
    /// not drawn).
    pub bits: Vec<bool>,
}

/// A line through points, or a polygon when closed (its inside filled at
/// `fill` opacity, even-odd), drawn with the style's line width.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OverlayPath {
    /// Frame pixels.
    pub points: Vec<[f32; 2]>,
    pub closed: bool,
    /// Opacity of a closed path's fill, 0..1 (0: outline only).
    pub fill: f32,
}

fn finite(p: [f32; 2]) -> bool {
    p[0].is_finite() && p[1].is_finite()
}

impl Layout<'_> {
    /// Half the thickness of segments: the style's line width, at least one
    /// pixel.
    fn half_width(&self) -> f32 {
        self.style.line_width.max(1.0) / 2.0
    }

    /// A thick segment from `a` to `b` (round caps).
    pub(crate) fn segment(&self, a: [f32; 2], b: [f32; 2], color: u32, quads: &mut Vec<Quad>) {
        if !(finite(a) && finite(b)) {
            return;
        }
        let [a, b] = [a, b].map(|p| p.map(|v| v.clamp(-FAR, FAR)));
        let hw = self.half_width();
        let reach = hw + 1.0;
        let mut q = Quad::new(
            [
                (a[0].min(b[0]) - reach).floor(),
                (a[1].min(b[1]) - reach).floor(),
                (a[0].max(b[0]) + reach).ceil(),
                (a[1].max(b[1]) + reach).ceil(),
            ],
            [a[0], a[1], b[0], b[1]],
            color,
            KIND_SEGMENT,
        );
        q.width = hw;
        quads.push(q);
    }

    /// The outline of a `[x, y, w, h]` box turned by `angle` about its
    /// centre; where its label goes (its topmost corner, the leftmost of
    /// two).
    pub(crate) fn rotated_box(
        &self,
        [x, y, w, h]: [f32; 4],
        angle: f32,
        color: u32,
        quads: &mut Vec<Quad>,
    ) -> Option<(i32, i32)> {
        let corners = rotated_corners([x, y, w, h], angle);
        if self.style.line_width.round() > 0.0 {
            for i in 0..4 {
                self.segment(corners[i], corners[(i + 1) % 4], color, quads);
            }
        }
        let top = corners
            .iter()
            .min_by(|a, b| a[1].total_cmp(&b[1]).then(a[0].total_cmp(&b[0])))?;
        Some((top[0].round() as i32, top[1].round() as i32))
    }

    /// Whether keypoint `i` of `item` is drawn: finite, and its score (where
    /// there are scores) at least the threshold.
    pub(crate) fn keypoint_shown(&self, item: &OverlayItem, i: usize) -> bool {
        let Some(p) = item.keypoints.get(i) else {
            return false;
        };
        let scored = item.keypoint_scores.len() != item.keypoints.len()
            || item.keypoint_scores[i] >= self.style.keypoint_threshold;
        finite(*p) && scored
    }

    /// COCO's skeleton between the shown keypoints of a 17-point item.
    pub(crate) fn skeleton(&self, item: &OverlayItem, color: u32, quads: &mut Vec<Quad>) {
        if item.keypoints.len() != 17 {
            return;
        }
        for [a, b] in COCO_SKELETON {
            if self.keypoint_shown(item, a) && self.keypoint_shown(item, b) {
                self.segment(item.keypoints[a], item.keypoints[b], color, quads);
            }
        }
    }

    /// A path's fill (a polygon quad over its corners' bounds, the corners
    /// appended to `shapes`) and its edges.
    pub(crate) fn path(
        &self,
        path: &OverlayPath,
        color: [u8; 3],
        quads: &mut Vec<Quad>,
        shapes: &mut Vec<u32>,
    ) {
        let points: Vec<[f32; 2]> = path
            .points
            .iter()
            .filter(|p| finite(**p))
            .map(|p| p.map(|v| v.clamp(-FAR, FAR)))
            .collect();
        if path.closed && points.len() >= 3 && path.fill > 0.0 {
            let (mut lo, mut hi) = ([f32::MAX; 2], [f32::MIN; 2]);
            for p in &points {
                lo = [lo[0].min(p[0]), lo[1].min(p[1])];
                hi = [hi[0].max(p[0]), hi[1].max(p[1])];
            }
            let mut q = Quad::new(
                [lo[0].floor(), lo[1].floor(), hi[0].ceil(), hi[1].ceil()],
                [points.len() as f32, 0.0, 0.0, 0.0],
                rgba_alpha(color, path.fill),
                KIND_POLYGON,
            );
            q.data = shapes.len() as u32;
            shapes.extend(points.iter().flat_map(|p| p.map(f32::to_bits)));
            quads.push(q);
        }
        let edges = if path.closed && points.len() > 2 {
            points.len()
        } else {
            points.len().saturating_sub(1)
        };
        for i in 0..edges {
            let next = (i + 1) % points.len();
            self.segment(points[i], points[next], rgba(color), quads);
        }
    }

    /// A mask's fill at the style's opacity: the part of its region on the
    /// frame, its bits packed into `shapes`, unless they would take it
    /// past `shape_words`.
    pub(crate) fn mask(
        &self,
        mask: &OverlayMask,
        color: [u8; 3],
        quads: &mut Vec<Quad>,
        shapes: &mut Vec<u32>,
    ) {
        let opacity = self.style.mask_opacity;
        let pixels = mask.width as usize * mask.height as usize;
        if opacity <= 0.0 || mask.bits.len() != pixels {
            return;
        }
        let x0 = mask.x.min(self.width);
        let y0 = mask.y.min(self.height);
        let x1 = mask.x.saturating_add(mask.width).min(self.width);
        let y1 = mask.y.saturating_add(mask.height).min(self.height);
        let (w, h) = (x1 - x0, y1 - y0);
        let words = (w as usize * h as usize).div_ceil(32);
        if words == 0 || shapes.len() + words > self.shape_words {
            return;
        }
        let first = shapes.len();
        shapes.resize(first + words, 0);
        let mut k = 0;
        for y in y0..y1 {
            let row = (y - mask.y) as usize * mask.width as usize;
            for x in x0..x1 {
                if mask.bits[row + (x - mask.x) as usize] {
                    shapes[first + k / 32] |= 1 << (k % 32);
                }
                k += 1;
            }
        }
        let mut q = Quad::new(
            [x0, y0, x1, y1].map(|v| v as f32),
            [w as f32, 0.0, 0.0, 0.0],
            rgba_alpha(color, opacity),
            KIND_MASK,
        );
        q.data = first as u32;
        quads.push(q);
    }
}

/// The corners of a `[x, y, w, h]` box turned by `angle` (radians, from +x
/// towards +y) about its centre, in order around it.
pub fn rotated_corners([x, y, w, h]: [f32; 4], angle: f32) -> [[f32; 2]; 4] {
    let (cx, cy) = (x + w / 2.0, y + h / 2.0);
    let (s, c) = angle.sin_cos();
    [[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]].map(|[u, v]| {
        let (dx, dy) = (u * w / 2.0, v * h / 2.0);
        [cx + dx * c - dy * s, cy + dx * s + dy * c]
    })
}

#[cfg(test)]
mod tests {
    use super::super::atlas::Atlas;
    use super::super::layout::tests::layout;
    use super::super::layout::{KIND_DISC, KIND_GLYPH};
    use super::*;

    fn person(scores: Vec<f32>) -> OverlayItem {
        OverlayItem {
            keypoints: (0..17).map(|i| [i as f32 * 3.0, 10.0]).collect(),
            keypoint_scores: scores,
            color: [0, 255, 0],
            ..Default::default()
        }
    }

    fn kinds(quads: &[Quad], kind: u32) -> usize {
        quads.iter().filter(|q| q.kind == kind).count()
    }

    #[test]
    fn the_skeleton_joins_the_keypoints_whose_scores_pass() {
        let atlas = Atlas::new(12.0).unwrap();
        let l = layout(&atlas, 64, 48);
        let all = l.quads(&[person(vec![0.9; 17])]);
        assert_eq!(kinds(&all, KIND_SEGMENT), 19);
        assert_eq!(kinds(&all, KIND_DISC), 17);
        // No scores: every point shown.
        assert_eq!(kinds(&l.quads(&[person(Vec::new())]), KIND_SEGMENT), 19);
        // The nose (0) below the threshold: its disc and its two segments go.
        let mut scores = vec![0.9; 17];
        scores[0] = 0.4;
        let some = l.quads(&[person(scores)]);
        assert_eq!(kinds(&some, KIND_SEGMENT), 17);
        assert_eq!(kinds(&some, KIND_DISC), 16);
        // Not COCO's 17: points only.
        let mut five = person(Vec::new());
        five.keypoints.truncate(5);
        let q = l.quads(&[five]);
        assert_eq!((kinds(&q, KIND_SEGMENT), kinds(&q, KIND_DISC)), (0, 5));
    }

    #[test]
    fn a_rotated_box_is_four_segments_through_its_turned_corners_label_on_top() {
        let atlas = Atlas::new(12.0).unwrap();
        let l = layout(&atlas, 200, 200);
        let item = OverlayItem {
            rect: [80.0, 90.0, 40.0, 20.0],
            angle: Some(std::f32::consts::FRAC_PI_2),
            text: "a".into(),
            color: [255, 0, 0],
            ..Default::default()
        };
        let q = l.quads(&[item]);
        let segments: Vec<&Quad> = q.iter().filter(|q| q.kind == KIND_SEGMENT).collect();
        assert_eq!(segments.len(), 4);
        // A quarter turn: 20 wide, 40 high about (100, 100).
        let ends: Vec<[i32; 2]> = segments
            .iter()
            .map(|s| [s.extra[0].round() as i32, s.extra[1].round() as i32])
            .collect();
        assert_eq!(ends, vec![[110, 80], [110, 120], [90, 120], [90, 80]]);
        assert!(segments.iter().all(|s| s.width == 1.0));
        assert_eq!(kinds(&q, KIND_GLYPH), 1);
        let bg = q
            .iter()
            .find(|q| q.kind == super::super::layout::KIND_FILL)
            .unwrap();
        assert_eq!(bg.bounds[0], 90.0, "the label at the top corner");
    }

    #[test]
    fn masks_are_clipped_to_the_frame_and_packed_one_bit_a_pixel() {
        let atlas = Atlas::new(12.0).unwrap();
        let l = layout(&atlas, 64, 48);
        // A 40x10 region at (40, 44): 24x4 of it on the frame.
        let bits: Vec<bool> = (0..400).map(|k| (k % 40 + k / 40) % 3 == 0).collect();
        let mask = OverlayMask {
            x: 40,
            y: 44,
            width: 40,
            height: 10,
            bits: bits.clone(),
        };
        let item = OverlayItem {
            mask: Some(mask.clone()),
            color: [0, 0, 255],
            ..Default::default()
        };
        let (q, shapes) = l.draw_list(std::slice::from_ref(&item));
        assert_eq!(q.len(), 1);
        assert_eq!(
            (q[0].kind, q[0].bounds, q[0].extra[0]),
            (KIND_MASK, [40.0, 44.0, 64.0, 48.0], 24.0)
        );
        assert_eq!(q[0].color >> 24, 115, "0.45 opacity");
        assert_eq!(shapes.len(), 3);
        for k in 0..96 {
            let (x, y) = (k % 24, k / 24);
            let bit = shapes[k / 32] >> (k % 32) & 1 == 1;
            assert_eq!(bit, bits[y * 40 + x], "{k}");
        }
        // No room, no opacity, or bits that do not fill the region: none.
        let mut tight = layout(&atlas, 64, 48);
        tight.shape_words = 2;
        assert!(tight.draw_list(std::slice::from_ref(&item)).0.is_empty());
        tight.shape_words = 3;
        tight.style.mask_opacity = 0.0;
        assert!(tight.draw_list(std::slice::from_ref(&item)).0.is_empty());
        let mut short = item;
        short.mask.as_mut().unwrap().bits.pop();
        assert!(l.draw_list(&[short]).0.is_empty());
    }

    #[test]
    fn closed_paths_are_a_polygon_and_their_edges_open_ones_only_edges() {
        let atlas = Atlas::new(12.0).unwrap();
        let l = layout(&atlas, 64, 48);
        let points = vec![[2.0, 2.0], [30.0, 4.0], [20.0, 40.0]];
        let zone = OverlayItem {
            path: Some(OverlayPath {
                points: points.clone(),
                closed: true,
                fill: 0.3,
            }),
            ..Default::default()
        };
        let (q, shapes) = l.draw_list(&[zone]);
        assert_eq!((kinds(&q, KIND_POLYGON), kinds(&q, KIND_SEGMENT)), (1, 3));
        assert_eq!(q[0].bounds, [2.0, 2.0, 30.0, 40.0]);
        let corners: Vec<f32> = shapes.iter().map(|w| f32::from_bits(*w)).collect();
        assert_eq!(corners, vec![2.0, 2.0, 30.0, 4.0, 20.0, 40.0]);
        let line = OverlayItem {
            path: Some(OverlayPath {
                points,
                closed: false,
                fill: 0.3,
            }),
            ..Default::default()
        };
        let (q, shapes) = l.draw_list(&[line]);
        assert_eq!((kinds(&q, KIND_POLYGON), kinds(&q, KIND_SEGMENT)), (0, 2));
        assert!(shapes.is_empty());
    }
}
