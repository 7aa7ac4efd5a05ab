//! [`Mask`]: an object's pixels in a frame, as segmentation heads give
//! them, and their COCO run-length encoding.

use serde::Serialize;

/// A binary mask over a rectangle of the frame, in frame pixels: pixel
/// (x + i, y + j) is set where `bits[j * width + i]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mask {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
    /// Row-major, `width * height` values.
    pub bits: Vec<bool>,
}

/// The JSON form of a mask: COCO's uncompressed RLE of the rectangle
/// (`counts` of alternating runs, column-major, the first a run of unset
/// pixels, possibly 0), at (`x`, `y`) of the frame, `w` x `h` pixels.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MaskJson {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
    pub counts: Vec<u32>,
}

impl Mask {
    pub fn get(&self, i: u32, j: u32) -> bool {
        self.bits[(j * self.width + i) as usize]
    }

    /// Pixels set.
    pub fn area(&self) -> usize {
        self.bits.iter().filter(|&&b| b).count()
    }

    /// COCO's uncompressed RLE: runs in column-major order (down each
    /// column, columns left to right), alternating unset and set, the first
    /// run unset (0 when the first pixel is set).
    pub fn rle(&self) -> Vec<u32> {
        let mut counts = Vec::new();
        let (mut current, mut run) = (false, 0u32);
        for i in 0..self.width {
            for j in 0..self.height {
                let v = self.get(i, j);
                if v != current {
                    counts.push(run);
                    current = v;
                    run = 0;
                }
                run += 1;
            }
        }
        counts.push(run);
        counts
    }

    pub fn to_json(&self) -> MaskJson {
        MaskJson {
            x: self.x,
            y: self.y,
            w: self.width,
            h: self.height,
            counts: self.rle(),
        }
    }

    /// Whether frame pixel (`px`, `py`) is set.
    pub fn contains(&self, px: u32, py: u32) -> bool {
        px >= self.x
            && py >= self.y
            && px - self.x < self.width
            && py - self.y < self.height
            && self.get(px - self.x, py - self.y)
    }
}

/// What segment, pose and oriented-box heads add to an object's box.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extras {
    /// Pose: each keypoint's score (0..1), in the order of `keypoints`;
    /// empty where the model gives none.
    pub keypoint_scores: Vec<f32>,
    /// Oriented boxes: the box (x, y, w, h) turned about its centre by this
    /// many radians, from +x towards +y (clockwise on screen), in [0, pi/2).
    pub angle: Option<f32>,
    /// Segmentation: the object's pixels.
    pub mask: Option<Mask>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rle_is_column_major_and_starts_unset() {
        // 3 wide, 2 high:
        // 1 0 1
        // 1 1 0
        let m = Mask {
            x: 4,
            y: 5,
            width: 3,
            height: 2,
            bits: vec![true, false, true, true, true, false],
        };
        // Column-major: 1 1 | 0 1 | 1 0
        assert_eq!(m.rle(), [0, 2, 1, 2, 1]);
        assert_eq!(m.area(), 4);
        assert!(m.contains(4, 5) && !m.contains(5, 5) && !m.contains(7, 5));
        let empty = Mask {
            width: 2,
            height: 2,
            bits: vec![false; 4],
            ..Mask::default()
        };
        assert_eq!(empty.rle(), [4]);
    }
}
