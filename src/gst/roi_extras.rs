//! The ROI params of segment, pose and oriented-box heads (see `roi`):
//!
//! - `keypoints` gains `scores`, an array of doubles, one per point (0..1),
//!   where the model gives them;
//! - `rotation` (oriented boxes): `angle` (double, radians, from +x towards
//!   +y, clockwise on screen) by which the `detection` box (its corners
//!   then are the box before turning) turns about its centre;
//! - `mask` (segmentation): `x`, `y`, `width`, `height` (uint, frame pixels,
//!   the region it covers) and `counts` (an array of uint): COCO's
//!   uncompressed RLE of the region, column-major, the first run unset.

use gst::prelude::ToSendValue;

use crate::tasks::{Extras, Mask, ObjectResult};

pub const ROTATION: &str = "rotation";
pub const MASK: &str = "mask";

fn array(values: impl Iterator<Item = gst::glib::SendValue>) -> gst::Array {
    gst::Array::from_values(values)
}

/// The params for `extras`: `scores` to add to the `keypoints` param, and
/// the params of their own.
pub fn params(extras: &Extras) -> (Option<gst::Array>, Vec<gst::Structure>) {
    let scores = (!extras.keypoint_scores.is_empty()).then(|| {
        array(
            extras
                .keypoint_scores
                .iter()
                .map(|&v| f64::from(v).to_send_value()),
        )
    });
    let mut own = Vec::new();
    if let Some(angle) = extras.angle {
        own.push(
            gst::Structure::builder(ROTATION)
                .field("angle", f64::from(angle))
                .build(),
        );
    }
    if let Some(m) = &extras.mask {
        own.push(
            gst::Structure::builder(MASK)
                .field("x", m.x)
                .field("y", m.y)
                .field("width", m.width)
                .field("height", m.height)
                .field(
                    "counts",
                    array(m.rle().into_iter().map(|c| c.to_send_value())),
                )
                .build(),
        );
    }
    (scores, own)
}

/// Reads the keypoint `scores` of a `keypoints` param into `object`.
pub fn read_scores(s: &gst::StructureRef, object: &mut ObjectResult) {
    if let Ok(scores) = s.get::<gst::Array>("scores") {
        object.extras.keypoint_scores = scores
            .iter()
            .filter_map(|v| v.get::<f64>().ok())
            .map(|v| v as f32)
            .collect();
    }
}

/// Reads a `rotation` or `mask` param into `object`; false for another.
pub fn read(s: &gst::StructureRef, object: &mut ObjectResult) -> bool {
    match s.name().as_str() {
        ROTATION => {
            object.extras.angle = s.get::<f64>("angle").ok().map(|v| v as f32);
            true
        }
        MASK => {
            object.extras.mask = read_mask(s);
            true
        }
        _ => false,
    }
}

/// A mask from its RLE; `None` where the runs do not fill the region.
fn read_mask(s: &gst::StructureRef) -> Option<Mask> {
    let field = |name: &str| s.get::<u32>(name).ok();
    let (x, y, width, height) = (field("x")?, field("y")?, field("width")?, field("height")?);
    let counts: Vec<u32> = s
        .get::<gst::Array>("counts")
        .ok()?
        .iter()
        .filter_map(|v| v.get::<u32>().ok())
        .collect();
    let pixels = (width as usize).checked_mul(height as usize)?;
    if counts.iter().map(|&c| c as usize).sum::<usize>() != pixels {
        return None;
    }
    let mut column_major = Vec::with_capacity(pixels);
    for (k, &c) in counts.iter().enumerate() {
        column_major.extend(std::iter::repeat_n(k % 2 == 1, c as usize));
    }
    let mut bits = vec![false; pixels];
    for (k, b) in column_major.into_iter().enumerate() {
        let (i, j) = (k / height as usize, k % height as usize);
        bits[j * width as usize + i] = b;
    }
    Some(Mask {
        x,
        y,
        width,
        height,
        bits,
    })
}
