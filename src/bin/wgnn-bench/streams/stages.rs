//! The model elements' `stage-ms` over the measured window: where a frame's
//! host time went (tensorize, batch gather, model submit, waiting for the
//! GPU's result, decode/NMS, and the element's whole transform), the mean
//! of every stream's frames in the window.

use gst::prelude::*;
use serde_json::json;

/// The fields of `stage-ms`, in the columns' order: the task's stages,
/// then the element's whole time.
const FIELDS: [&str; 6] = ["tensorize", "gather", "submit", "result", "post", "element"];

/// The columns' headers, one word each.
const HEADERS: [&str; 6] = ["tens", "gather", "submit", "result", "post", "elem"];

/// Six cells, each right-aligned in a column of 6.
fn columns(cells: impl IntoIterator<Item = String>) -> String {
    cells
        .into_iter()
        .map(|c| format!("{c:>6}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One element's `stage-ms`: the frames timed and the ms sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    frames: u64,
    ms: [f64; 6],
}

impl Totals {
    /// The sums of `elements`' `stage-ms`; `None` where an element has no
    /// such property (built before it) or its structure lacks a field.
    pub fn read<'a>(elements: impl IntoIterator<Item = &'a gst::Element>) -> Option<Totals> {
        let mut sum = Totals::default();
        for e in elements {
            e.find_property("stage-ms")?;
            let s = e.property::<gst::Structure>("stage-ms");
            sum.frames += s.get::<u64>("frames").ok()?;
            for (total, field) in sum.ms.iter_mut().zip(FIELDS) {
                *total += s.get::<f64>(field).ok()?;
            }
        }
        Some(sum)
    }

    /// The mean ms a frame of those timed between `before` and `self`;
    /// `None` when no frame was.
    pub fn per_frame_since(&self, before: &Totals) -> Option<StageMs> {
        let frames = self.frames.checked_sub(before.frames).filter(|&n| n > 0)?;
        let mut ms = [0.0; 6];
        for ((m, now), then) in ms.iter_mut().zip(self.ms).zip(before.ms) {
            *m = (now - then).max(0.0) / frames as f64;
        }
        Some(StageMs { frames, ms })
    }
}

/// Mean host ms a frame in each stage, over `frames` frames.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageMs {
    pub frames: u64,
    /// In [`FIELDS`] order.
    pub ms: [f64; 6],
}

impl StageMs {
    pub fn to_json(self) -> serde_json::Value {
        let mut v = json!({ "frames": self.frames });
        for (field, ms) in FIELDS.iter().zip(self.ms) {
            v[*field] = json!(ms);
        }
        v
    }

    /// The six columns' cells; "n/a" for each without a measure.
    fn cells(this: Option<&StageMs>) -> [String; 6] {
        std::array::from_fn(|i| this.map_or("n/a".into(), |s| format!("{:.2}", s.ms[i])))
    }

    /// The six columns of a table row.
    pub fn row(this: Option<&StageMs>) -> String {
        columns(StageMs::cells(this))
    }

    /// The six columns' headers.
    pub fn header() -> String {
        columns(HEADERS.map(String::from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_frame_means_are_the_window_deltas_over_its_frames() {
        let before = Totals {
            frames: 10,
            ms: [1.0, 2.0, 3.0, 4.0, 5.0, 30.0],
        };
        let after = Totals {
            frames: 14,
            ms: [3.0, 10.0, 3.0, 8.0, 6.0, 70.0],
        };
        let m = after.per_frame_since(&before).unwrap();
        assert_eq!(m.frames, 4);
        assert_eq!(m.ms, [0.5, 2.0, 0.0, 1.0, 0.25, 10.0]);
        assert_eq!(m.to_json()["gather"], json!(2.0));
        assert_eq!(StageMs::cells(Some(&m))[5], "10.00");
        assert_eq!(after.per_frame_since(&after), None);
        assert_eq!(StageMs::cells(None), ["n/a"; 6].map(String::from));
        assert_eq!(
            StageMs::header().split_whitespace().collect::<Vec<_>>(),
            HEADERS
        );
        assert_eq!(StageMs::row(Some(&m)).len(), StageMs::header().len());
    }
}
