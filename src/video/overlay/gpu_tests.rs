//! The overlay on the GPU: frames drawn on, read back and checked pixel by
//! pixel against where the items must (and must not) be. Untouched pixels
//! are compared exactly with the same frame drawn with no items, which is
//! itself checked against the CPU frame reader (the frame's own conversion).

use super::atlas::Atlas;
use super::layout::{label_padding, text_color, Layout, KIND_FILL};
use super::*;
use crate::video::cpu::CpuFrame;
use crate::video::{download_rgba, upload_frame, FrameLayout, VideoFormat};

fn gpu() -> Gpu {
    Gpu::new().unwrap_or_else(|e| {
        panic!("this test needs a GPU adapter (install mesa-vulkan-drivers for lavapipe): {e}")
    })
}

/// Bytes that vary by position, so that a misplaced read shows.
fn frame_bytes(layout: &FrameLayout) -> Vec<u8> {
    (0..layout.len())
        .map(|i| ((i * 37 + i / 7 * 11) % 251) as u8)
        .collect()
}

struct Drawn {
    width: u32,
    height: u32,
    rgba: Vec<u8>,
}

impl Drawn {
    fn at(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        self.rgba[i..i + 4].try_into().unwrap()
    }
}

/// Draws `items` on a `format` frame of `w` x `h` with `style`; returns the
/// result and the same frame drawn with no items.
fn draw(
    gpu: &Gpu,
    format: VideoFormat,
    (w, h): (u32, u32),
    style: OverlayStyle,
    items: &[OverlayItem],
) -> (Drawn, Drawn) {
    let layout = FrameLayout::packed(format, w, h);
    let bytes = frame_bytes(&layout);
    let pool = TexturePool::new();
    let frame = upload_frame(gpu, &pool, &layout, &bytes).unwrap();
    let mut overlay = Overlay::new(gpu, style).unwrap();
    let mut read = |items: &[OverlayItem]| {
        let out = overlay.draw(&frame, items, &pool).unwrap();
        assert_eq!(
            (out.format(), out.width(), out.height()),
            (VideoFormat::Rgba, w, h)
        );
        Drawn {
            width: w,
            height: h,
            rgba: download_rgba(gpu, out.plane(0).unwrap()).unwrap(),
        }
    };
    let plain = read(&[]);
    let drawn = read(items);
    (drawn, plain)
}

fn item(rect: [f32; 4], color: [u8; 3]) -> OverlayItem {
    OverlayItem {
        rect,
        color,
        ..Default::default()
    }
}

fn style(line_width: f32) -> OverlayStyle {
    OverlayStyle {
        line_width,
        font_size: 12.0,
        keypoint_radius: 3.0,
        ..Default::default()
    }
}

fn rgba(c: [u8; 3]) -> [u8; 4] {
    [c[0], c[1], c[2], 255]
}

/// Every pixel: `expect(x, y)` where it says, else the plain frame's.
fn check(drawn: &Drawn, plain: &Drawn, expect: impl Fn(i64, i64) -> Option<[u8; 4]>) {
    for y in 0..drawn.height {
        for x in 0..drawn.width {
            let want = expect(x.into(), y.into()).unwrap_or_else(|| plain.at(x, y));
            assert_eq!(drawn.at(x, y), want, "pixel ({x}, {y})");
        }
    }
}

/// Whether (x, y) is on the `lw`-pixel outline inside [x0, x1) x [y0, y1).
fn on_outline(x: i64, y: i64, [x0, y0, x1, y1]: [i64; 4], lw: i64) -> bool {
    let inside = x >= x0 && x < x1 && y >= y0 && y < y1;
    inside && (x < x0 + lw || x >= x1 - lw || y < y0 + lw || y >= y1 - lw)
}

#[test]
fn no_items_is_the_frames_own_conversion_for_every_format() {
    let gpu = gpu();
    for format in VideoFormat::ALL {
        let (w, h) = (37, 23);
        let layout = FrameLayout::packed(format, w, h);
        let bytes = frame_bytes(&layout);
        let (drawn, plain) = draw(&gpu, format, (w, h), style(2.0), &[]);
        assert_eq!(drawn.rgba, plain.rgba, "{format}: the same frame twice");
        let cpu = CpuFrame::from_layout(&layout, &bytes).unwrap();
        let reader = cpu.reader(ColorSpec::default());
        // RGB formats are copied exactly; YUV goes through f32 on both
        // sides and may round one step apart.
        let tolerance = if format.is_yuv() { 1 } else { 0 };
        for y in 0..h {
            for x in 0..w {
                let want = reader.rgb(x as usize, y as usize).map(|c| c.round() as i32);
                let got = drawn.at(x, y);
                for c in 0..3 {
                    assert!(
                        (i32::from(got[c]) - want[c]).abs() <= tolerance,
                        "{format} ({x}, {y}): {got:?} vs {want:?}"
                    );
                }
                assert_eq!(got[3], 255, "{format}: opaque");
            }
        }
    }
}

#[test]
fn box_edges_are_the_line_width_in_the_items_colour_on_rgba_and_yuv_frames() {
    let gpu = gpu();
    let red = [250, 10, 20];
    let blue = [0, 40, 255];
    // Fractional corners round to whole pixels: x 5..25, y 30..42 and
    // x 40..61, y 3..20.
    let items = [
        item([5.2, 29.6, 20.0, 12.3], red),
        item([40.0, 3.0, 21.0, 17.0], blue),
    ];
    for (format, lw) in [
        (VideoFormat::Rgba, 2),
        (VideoFormat::Nv12, 3),
        (VideoFormat::I420, 1),
        (VideoFormat::Bgrx, 4),
    ] {
        let (drawn, plain) = draw(&gpu, format, (70, 50), style(lw as f32), &items);
        check(&drawn, &plain, |x, y| {
            if on_outline(x, y, [40, 3, 61, 20], lw) {
                Some(rgba(blue))
            } else if on_outline(x, y, [5, 30, 25, 42], lw) {
                Some(rgba(red))
            } else {
                None
            }
        });
        // The interior really is the frame (not, say, black).
        assert_ne!(plain.at(15, 35), [0, 0, 0, 255], "{format}");
    }
}

#[test]
fn boxes_partly_or_wholly_off_the_frame_are_clipped() {
    let gpu = gpu();
    let c = [0, 255, 0];
    let (w, h) = (48, 40);
    let items = [
        item([-10.0, -6.0, 20.0, 16.0], c),
        item([40.0, 30.0, 30.0, 30.0], c),
        item([-100.0, 10.0, 50.0, 10.0], c),
        item([10.0, 1000.0, 5.0, 5.0], c),
        item([f32::MAX, -f32::MAX, f32::MAX, 1.0], c),
        item([f32::NAN, 3.0, 4.0, 5.0], c),
        item([3.0, 3.0, 0.0, 0.0], c),
        item([3.0, 3.0, -5.0, 8.0], c),
    ];
    let (drawn, plain) = draw(&gpu, VideoFormat::Rgb, (w, h), style(2.0), &items);
    check(&drawn, &plain, |x, y| {
        (on_outline(x, y, [-10, -6, 10, 10], 2) || on_outline(x, y, [40, 30, 70, 60], 2))
            .then_some(rgba(c))
    });
}

#[test]
fn keypoints_are_filled_discs_with_a_one_pixel_rim() {
    let gpu = gpu();
    let c = [255, 0, 255];
    let r = 4.0f32;
    let points = [[20.5f32, 15.5f32], [0.0, 0.0], [39.0, 29.0], [100.0, 5.0]];
    let mut it = item([0.0; 4], c);
    it.keypoints = points.to_vec();
    let s = OverlayStyle {
        keypoint_radius: r,
        ..style(2.0)
    };
    let (drawn, plain) = draw(&gpu, VideoFormat::I420, (40, 30), s, &[it]);
    let mut solid = 0;
    for y in 0..30 {
        for x in 0..40 {
            let centre = [x as f32 + 0.5, y as f32 + 0.5];
            let d = points
                .iter()
                .map(|p| ((p[0] - centre[0]).powi(2) + (p[1] - centre[1]).powi(2)).sqrt())
                .fold(f32::INFINITY, f32::min);
            if d <= r - 0.5 {
                assert_eq!(drawn.at(x, y), rgba(c), "inside a disc at ({x}, {y})");
                solid += 1;
            } else if d >= r + 0.5 {
                assert_eq!(
                    drawn.at(x, y),
                    plain.at(x, y),
                    "outside the discs at ({x}, {y})"
                );
            }
        }
    }
    // The whole first disc (37 pixel centres within 3.5 of it) and at
    // least a quarter of each corner one (8 each).
    assert!(solid >= 37 + 2 * 8, "{solid} solid pixels");
}

#[test]
fn labels_are_a_filled_background_with_glyph_ink_in_the_contrasting_colour() {
    let gpu = gpu();
    let s = OverlayStyle {
        line_width: 0.0,
        font_size: 16.0,
        keypoint_radius: 0.0,
        ..Default::default()
    };
    let (w, h) = (96, 64);
    let yellow = [255, 220, 0];
    let mut it = item([10.0, 40.0, 50.0, 20.0], yellow);
    it.text = "Hi 0.87".into();
    let atlas = Atlas::new(s.font_size).unwrap();
    let quads = Layout {
        atlas: &atlas,
        style: s,
        width: w,
        height: h,
        shape_words: 0,
    }
    .quads(std::slice::from_ref(&it));
    // The label background is the first quad (no outline: line width 0).
    assert_eq!(quads[0].kind, KIND_FILL);
    let [x0, y0, x1, y1] = quads[0].bounds.map(|v| v as i64);
    let pad = i64::from(label_padding(s.font_size));
    assert_eq!((x0, y1), (10, 40), "above the box, on its left edge");
    assert_eq!(y1 - y0, i64::from(atlas.line_height) + 2 * pad);
    let (drawn, plain) = draw(&gpu, VideoFormat::Nv12, (w, h), s, &[it]);
    let ink = rgba(text_color(yellow));
    assert_eq!(ink, [0, 0, 0, 255]);
    let (mut background, mut full_ink, mut blended) = (0, 0, 0);
    for y in 0..h {
        for x in 0..w {
            let (xi, yi) = (i64::from(x), i64::from(y));
            let got = drawn.at(x, y);
            if xi < x0 || xi >= x1 || yi < y0 || yi >= y1 {
                assert_eq!(got, plain.at(x, y), "outside the label at ({x}, {y})");
                continue;
            }
            // Inside: the background, the ink, or between them (glyph
            // edges), channel by channel.
            for ch in 0..3 {
                let (lo, hi) = (ink[ch].min(yellow[ch]), ink[ch].max(yellow[ch]));
                assert!((lo..=hi).contains(&got[ch]), "({x}, {y}): {got:?}");
            }
            if got == rgba(yellow) {
                background += 1;
            } else if got == ink {
                full_ink += 1;
            } else {
                blended += 1;
            }
            // The padding rows and columns carry no ink.
            if xi < x0 + pad || yi < y0 + pad || yi >= y1 - pad {
                assert_eq!(got, rgba(yellow), "padding at ({x}, {y})");
            }
        }
    }
    assert!(full_ink >= 20, "{full_ink} pixels of solid ink");
    assert!(
        blended > 0 && background > full_ink,
        "{background} {blended}"
    );
}

#[test]
fn later_items_paint_over_earlier_ones_across_draw_list_chunks() {
    let gpu = gpu();
    // 100 boxes of 4 edges: 400 quads, more than one chunk of 256.
    let mut items: Vec<OverlayItem> = (0..99)
        .map(|i| {
            item(
                [(i % 10) as f32 * 6.0, (i / 10) as f32 * 5.0, 6.0, 5.0],
                [i as u8, 1, 2],
            )
        })
        .collect();
    let last = [9, 200, 90];
    items.push(item([0.0, 0.0, 60.0, 50.0], last));
    let (drawn, plain) = draw(&gpu, VideoFormat::Rgba, (64, 52), style(1.0), &items);
    check(&drawn, &plain, |x, y| {
        if on_outline(x, y, [0, 0, 60, 50], 1) {
            return Some(rgba(last));
        }
        items[..99].iter().rev().find_map(|it| {
            let [bx, by, bw, bh] = it.rect.map(|v| v as i64);
            on_outline(x, y, [bx, by, bx + bw, by + bh], 1).then_some(rgba(it.color))
        })
    });
}

#[test]
fn one_pixel_and_odd_sized_frames_draw_without_panicking() {
    let gpu = gpu();
    let c = [1, 2, 3];
    for (w, h) in [(1, 1), (1, 17), (17, 1), (33, 3)] {
        let mut it = item([0.0, 0.0, w as f32, h as f32], c);
        it.text = "x".into();
        it.keypoints = vec![[0.0, 0.0]];
        let (drawn, _) = draw(&gpu, VideoFormat::Rgba, (w, h), style(1.0), &[it]);
        // The outline covers the whole frame, the label's background (in
        // the same colour) is drawn over it inside the box, and the
        // label's padding keeps the top-left pixel free of ink.
        assert_eq!(drawn.at(0, 0), rgba(c), "{w}x{h}");
        assert_eq!(drawn.at(w - 1, h - 1), rgba(c), "{w}x{h}");
    }
}

/// Distance from `c` to the segment from `a` to `b` (the CPU reference of
/// overlay.wgsl's segments).
fn to_segment(c: [f32; 2], a: [f32; 2], b: [f32; 2]) -> f32 {
    let ab = [b[0] - a[0], b[1] - a[1]];
    let t = (((c[0] - a[0]) * ab[0] + (c[1] - a[1]) * ab[1]) / (ab[0] * ab[0] + ab[1] * ab[1]))
        .clamp(0.0, 1.0);
    let p = [a[0] + t * ab[0], a[1] + t * ab[1]];
    ((c[0] - p[0]).powi(2) + (c[1] - p[1]).powi(2)).sqrt()
}

/// Distance from `c` to the nearest edge of the path through `points`.
fn to_edges(c: [f32; 2], points: &[[f32; 2]], closed: bool) -> f32 {
    let n = points.len();
    let edges = if closed { n } else { n - 1 };
    (0..edges)
        .map(|i| to_segment(c, points[i], points[(i + 1) % n]))
        .fold(f32::INFINITY, f32::min)
}

/// Even-odd point-in-polygon, the CPU reference of the kernel's.
fn in_polygon(c: [f32; 2], points: &[[f32; 2]]) -> bool {
    let mut inside = false;
    let mut b = points[points.len() - 1];
    for &a in points {
        if (a[1] > c[1]) != (b[1] > c[1])
            && c[0] < (b[0] - a[0]) * (c[1] - a[1]) / (b[1] - a[1]) + a[0]
        {
            inside = !inside;
        }
        b = a;
    }
    inside
}

/// `color` over `under` at opacity `alpha` as the RGBA8 draw list holds it,
/// within one step of rounding, channel by channel.
fn assert_blend(got: [u8; 4], under: [u8; 4], color: [u8; 3], alpha: f32, at: (u32, u32)) {
    let a = f32::from((alpha * 255.0).round() as u8) / 255.0;
    for ch in 0..3 {
        let want = f32::from(under[ch]) + (f32::from(color[ch]) - f32::from(under[ch])) * a;
        assert!(
            (f32::from(got[ch]) - want).abs() <= 1.0,
            "{at:?}: {got:?} is not {color:?} at {alpha} over {under:?}"
        );
    }
}

#[test]
fn a_rotated_box_covers_the_pixels_near_its_turned_edges_and_no_others() {
    let gpu = gpu();
    let c = [240, 20, 200];
    let mut it = item([12.0, 14.0, 40.0, 20.0], c);
    it.angle = Some(0.5);
    let corners = super::shapes::rotated_corners(it.rect, 0.5);
    let hw = 1.5;
    let (drawn, plain) = draw(&gpu, VideoFormat::Nv12, (64, 48), style(3.0), &[it]);
    let (mut solid, mut untouched) = (0, 0);
    for y in 0..48 {
        for x in 0..64 {
            let d = to_edges([x as f32 + 0.5, y as f32 + 0.5], &corners, true);
            if d <= hw - 0.5 {
                assert_eq!(drawn.at(x, y), rgba(c), "on an edge at ({x}, {y})");
                solid += 1;
            } else if d >= hw + 0.5 {
                assert_eq!(
                    drawn.at(x, y),
                    plain.at(x, y),
                    "off the edges at ({x}, {y})"
                );
                untouched += 1;
            }
        }
    }
    // The perimeter is 120 pixels, two pixels thick where solid.
    assert!(solid >= 200, "{solid} solid pixels");
    assert!(untouched > 2000, "{untouched}");
}

#[test]
fn a_concave_polygon_is_filled_translucent_inside_its_outline() {
    let gpu = gpu();
    let c = [0, 255, 60];
    // An L: concave, so a triangle fan from a corner would be wrong.
    let points = vec![
        [4.0, 4.0],
        [40.0, 4.0],
        [40.0, 16.0],
        [16.0, 16.0],
        [16.0, 44.0],
        [4.0, 44.0],
    ];
    let zone = OverlayItem {
        color: c,
        path: Some(OverlayPath {
            points: points.clone(),
            closed: true,
            fill: 0.5,
        }),
        ..Default::default()
    };
    let (drawn, plain) = draw(&gpu, VideoFormat::Rgba, (64, 48), style(1.0), &[zone]);
    let (mut filled, mut outside) = (0, 0);
    for y in 0..48 {
        for x in 0..64 {
            let centre = [x as f32 + 0.5, y as f32 + 0.5];
            let d = to_edges(centre, &points, true);
            if d < 1.0 {
                // The outline (half width 0.5) and its antialiased rim.
                continue;
            }
            if in_polygon(centre, &points) {
                assert_blend(drawn.at(x, y), plain.at(x, y), c, 0.5, (x, y));
                filled += 1;
            } else {
                assert_eq!(drawn.at(x, y), plain.at(x, y), "outside at ({x}, {y})");
                outside += 1;
            }
        }
    }
    // The L's area is 36*12 + 12*28 = 768, less its rim.
    assert!(filled > 550, "{filled}");
    assert!(outside > 1800, "{outside}");
    // The notch of the L (inside its bounds, outside the polygon) is
    // untouched: the fill is not the bounding box.
    assert_eq!(drawn.at(30, 30), plain.at(30, 30));
}

#[test]
fn a_mask_tints_its_set_pixels_only_clipped_to_the_frame() {
    let gpu = gpu();
    let c = [255, 40, 0];
    // 50 x 30 at (30, 30): 34 x 18 of it on a 64 x 48 frame, a pattern
    // that shows a misplaced bit, wider than 32 so rows straddle words.
    let (mx, my, mw, mh) = (30u32, 30u32, 50u32, 30u32);
    let bits: Vec<bool> = (0..mw * mh)
        .map(|k| {
            let (i, j) = (k % mw, k / mw);
            (i * 7 + j * 3) % 5 < 2
        })
        .collect();
    let it = OverlayItem {
        color: c,
        mask: Some(OverlayMask {
            x: mx,
            y: my,
            width: mw,
            height: mh,
            bits: bits.clone(),
        }),
        ..item([0.0; 4], c)
    };
    let s = OverlayStyle {
        mask_opacity: 0.45,
        ..style(0.0)
    };
    let (drawn, plain) = draw(&gpu, VideoFormat::I420, (64, 48), s, &[it]);
    let mut set = 0;
    for y in 0..48 {
        for x in 0..64 {
            let inside = x >= mx && y >= my;
            if inside && bits[((y - my) * mw + (x - mx)) as usize] {
                assert_blend(drawn.at(x, y), plain.at(x, y), c, 0.45, (x, y));
                assert_ne!(drawn.at(x, y), plain.at(x, y), "tinted at ({x}, {y})");
                set += 1;
            } else {
                assert_eq!(drawn.at(x, y), plain.at(x, y), "not set at ({x}, {y})");
            }
        }
    }
    // Two in five of the 34 x 18 pixels on the frame.
    assert_eq!(
        set,
        (0..34 * 18)
            .filter(|k| ((k % 34) * 7 + (k / 34) * 3) % 5 < 2)
            .count()
    );
}
