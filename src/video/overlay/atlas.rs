//! The glyph atlas: printable ASCII in DejaVu Sans, rasterised with fontdue
//! once per font size into one R8 coverage image, so that drawing a label is
//! placing quads that read it, with no text work on the GPU and none per
//! frame on the CPU beyond looking up metrics.

use crate::error::{Error, Result};

/// DejaVu Sans (assets/fonts: LICENSE and PROVENANCE beside it).
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// The characters the atlas holds: printable ASCII. Anything else is drawn
/// as [`FALLBACK`].
const FIRST: u8 = b' ';
const LAST: u8 = b'~';
pub(crate) const FALLBACK: char = '?';

/// Smallest and largest font sizes (pixels per em) an atlas is made for.
pub const MIN_FONT_SIZE: f32 = 4.0;
pub const MAX_FONT_SIZE: f32 = 200.0;

/// Width of the atlas image: rows of glyphs are packed into it.
const ATLAS_WIDTH: usize = 1024;

/// Where one glyph sits in the atlas and how it sits on the pen.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Glyph {
    /// Top-left texel in the atlas.
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
    /// Offset of the bitmap's left edge from the pen.
    pub left: i32,
    /// Offset of the bitmap's top edge above the baseline (up is positive).
    pub top: i32,
    /// How far the pen moves after the glyph.
    pub advance: f32,
}

/// Coverage bitmaps of every glyph, packed, with their metrics.
#[derive(Debug)]
pub(crate) struct Atlas {
    pub width: u32,
    pub height: u32,
    /// `width` x `height` coverage bytes, row-major.
    pub pixels: Vec<u8>,
    glyphs: Vec<Glyph>,
    /// Pixels from the top of a line to its baseline.
    pub ascent: i32,
    /// Pixels from the top of a line to the bottom of the lowest descender.
    pub line_height: i32,
}

impl Atlas {
    /// Rasterises the atlas for `size` pixels per em.
    pub(crate) fn new(size: f32) -> Result<Atlas> {
        if !(MIN_FONT_SIZE..=MAX_FONT_SIZE).contains(&size) {
            return Err(Error::invalid(format!(
                "overlay: font size {size} is outside {MIN_FONT_SIZE}..{MAX_FONT_SIZE} pixels"
            )));
        }
        let font = fontdue::Font::from_bytes(FONT, fontdue::FontSettings::default())
            .map_err(|e| Error::invalid(format!("overlay: the bundled font does not load: {e}")))?;
        let line = font.horizontal_line_metrics(size).ok_or_else(|| {
            Error::invalid("overlay: the bundled font has no horizontal line metrics")
        })?;
        let ascent = line.ascent.ceil() as i32;
        // `descent` is negative: below the baseline.
        let line_height = ascent + (-line.descent).ceil() as i32;

        // Shelf packing: glyphs left to right, a new row when one is full.
        let mut bitmaps = Vec::new();
        let mut glyphs = Vec::new();
        let (mut x, mut y, mut row) = (0usize, 0usize, 0usize);
        for c in FIRST..=LAST {
            let (m, bitmap) = font.rasterize(c as char, size);
            if x + m.width > ATLAS_WIDTH {
                x = 0;
                y += row;
                row = 0;
            }
            glyphs.push(Glyph {
                x: x as u32,
                y: y as u32,
                width: m.width as u32,
                height: m.height as u32,
                left: m.xmin,
                top: m.ymin + m.height as i32,
                advance: m.advance_width,
            });
            bitmaps.push((x, y, m.width, bitmap));
            x += m.width;
            row = row.max(m.height);
        }
        let height = (y + row).max(1);
        let mut pixels = vec![0u8; ATLAS_WIDTH * height];
        for (x, y, w, bitmap) in bitmaps {
            for (r, src) in bitmap.chunks_exact(w.max(1)).enumerate() {
                let at = (y + r) * ATLAS_WIDTH + x;
                pixels[at..at + src.len()].copy_from_slice(src);
            }
        }
        Ok(Atlas {
            width: ATLAS_WIDTH as u32,
            height: height as u32,
            pixels,
            glyphs,
            ascent,
            line_height,
        })
    }

    /// The glyph drawn for `c`: its own for printable ASCII, else '?'.
    pub(crate) fn glyph(&self, c: char) -> Glyph {
        let c = if (FIRST as char..=LAST as char).contains(&c) {
            c
        } else {
            FALLBACK
        };
        self.glyphs[(c as u8 - FIRST) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_printable_glyph_is_packed_inside_the_atlas_without_overlap() {
        for size in [MIN_FONT_SIZE, 13.0, 40.0, MAX_FONT_SIZE] {
            let a = Atlas::new(size).unwrap();
            assert_eq!(a.pixels.len(), (a.width * a.height) as usize);
            assert!(a.ascent > 0 && a.line_height > a.ascent, "size {size}");
            let mut covered = vec![false; a.pixels.len()];
            for c in FIRST..=LAST {
                let g = a.glyph(c as char);
                assert!(g.x + g.width <= a.width && g.y + g.height <= a.height);
                for y in g.y..g.y + g.height {
                    for x in g.x..g.x + g.width {
                        let i = (y * a.width + x) as usize;
                        assert!(!covered[i], "size {size}: '{}' overlaps", c as char);
                        covered[i] = true;
                    }
                }
                if c != b' ' {
                    assert!(g.width > 0 && g.height > 0, "'{}' has a bitmap", c as char);
                }
                assert!(g.advance > 0.0);
            }
            // Ink: the 'H' has coverage everywhere, and full-coverage texels
            // where its stems are several pixels wide (small sizes put a
            // stem across two texel columns, neither full).
            let h = a.glyph('H');
            let texels: Vec<u8> = (h.y..h.y + h.height)
                .flat_map(|y| (h.x..h.x + h.width).map(move |x| (x, y)))
                .map(|(x, y)| a.pixels[(y * a.width + x) as usize])
                .collect();
            assert!(texels.iter().any(|&t| t > 0), "size {size}: 'H' has no ink");
            if size >= 40.0 {
                assert!(
                    texels.contains(&255),
                    "size {size}: 'H' has no solid texels"
                );
            }
        }
    }

    #[test]
    fn unknown_characters_fall_back_to_the_question_mark() {
        let a = Atlas::new(12.0).unwrap();
        for c in ['é', '\n', '\u{7f}', '猫', '\0'] {
            assert_eq!(a.glyph(c), a.glyph('?'), "{c:?}");
        }
        assert_ne!(a.glyph('A'), a.glyph('?'));
    }

    #[test]
    fn font_sizes_outside_the_range_are_refused() {
        for size in [0.0, 3.9, 200.5, f32::NAN, f32::INFINITY, -12.0] {
            let e = Atlas::new(size).unwrap_err().to_string();
            assert!(e.contains("font size"), "{e}");
        }
    }
}
