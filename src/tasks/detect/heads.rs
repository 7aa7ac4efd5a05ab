//! The heads of Ultralytics' segment, pose and obb models: which values
//! follow the class scores of each box (checked against the model), and
//! what becomes of them after decoding: keypoints with scores, the rotated
//! box's angle and its NMS (Ultralytics' probabilistic IoU). Masks are in
//! `masks.rs`.

use crate::tasks::model_proc::{Yolo, YoloTask};

use super::spec::OutputInfo;

/// Ultralytics' keypoint count and values per keypoint for pose models.
const DEFAULT_KPT_SHAPE: [usize; 2] = [17, 3];

/// What a YOLO head holds besides boxes and class scores.
pub(crate) struct Head {
    pub task: YoloTask,
    /// Values per box after the class scores.
    pub extras: usize,
    /// Segment: the prototypes' output and (channels, height, width).
    pub protos: Option<(OutputInfo, [usize; 3])>,
    /// Pose: values per keypoint (2: x, y; 3: x, y, score).
    pub keypoint_values: usize,
}

impl Head {
    /// The head `y` describes, with the prototypes found among `outputs`
    /// (besides `out`, the boxes) for segment models.
    pub fn of(y: &Yolo, out: &OutputInfo, outputs: &[OutputInfo]) -> Result<Head, String> {
        let mut head = Head {
            task: y.task,
            extras: 0,
            protos: None,
            keypoint_values: 0,
        };
        match y.task {
            YoloTask::Detect => {}
            YoloTask::Obb => head.extras = 1,
            YoloTask::Pose => {
                let [k, d] = y.kpt_shape.unwrap_or(DEFAULT_KPT_SHAPE);
                if k == 0 || !(2..=3).contains(&d) {
                    return Err(format!(
                        "kpt_shape is [{k}, {d}]; it must be [K, 2] or [K, 3] with K >= 1"
                    ));
                }
                head.extras = k * d;
                head.keypoint_values = d;
            }
            YoloTask::Segment => {
                let protos = match &y.protos {
                    Some(name) => outputs
                        .iter()
                        .find(|o| &o.name == name)
                        .ok_or_else(|| format!("the model has no output '{name}' (protos)"))?,
                    None => outputs
                        .iter()
                        .find(|o| o.name != out.name && o.shape.len() == 4)
                        .ok_or_else(|| {
                            "a segment model has a 4-D prototypes output [1, 32, H/4, W/4]; \
                             this model has none"
                                .to_string()
                        })?,
                };
                let &[1, c, h, w] = protos.shape.as_slice() else {
                    return Err(format!(
                        "output '{}' (protos) is {:?}, expected [1, M, H, W]",
                        protos.name, protos.shape
                    ));
                };
                if c == 0 || h == 0 || w == 0 {
                    return Err(format!(
                        "output '{}' (protos) is {:?}: empty",
                        protos.name, protos.shape
                    ));
                }
                head.extras = c;
                head.protos = Some((protos.clone(), [c, h, w]));
            }
        }
        Ok(head)
    }

    /// The extras in a shape, as the errors write it: ` + 32`.
    pub fn extras_shape(&self) -> String {
        if self.extras == 0 {
            String::new()
        } else {
            format!(" + {}", self.extras)
        }
    }

    /// The extras in words, as the errors write them.
    pub fn extras_text(&self) -> String {
        match self.task {
            YoloTask::Detect => String::new(),
            YoloTask::Segment => format!(", {} mask coefficients", self.extras),
            YoloTask::Pose => format!(
                ", {} keypoints of {} values",
                self.extras / self.keypoint_values.max(1),
                self.keypoint_values
            ),
            YoloTask::Obb => ", the angle in radians".into(),
        }
    }
}

/// Ultralytics' `_get_covariance_matrix` of a rotated box (cx, cy, w, h,
/// angle): the covariance of the uniform distribution over it.
fn covariance(b: &[f32; 5]) -> [f32; 3] {
    let (a, bb) = (b[2] * b[2] / 12.0, b[3] * b[3] / 12.0);
    let (sin, cos) = b[4].sin_cos();
    [
        a * cos * cos + bb * sin * sin,
        a * sin * sin + bb * cos * cos,
        (a - bb) * cos * sin,
    ]
}

/// Ultralytics' `batch_probiou` of two rotated boxes: 1 minus the Hellinger
/// distance of their Gaussians, in its order of operations (eps 1e-7).
pub(crate) fn probiou(p: &[f32; 5], q: &[f32; 5]) -> f32 {
    const EPS: f32 = 1e-7;
    let [a1, b1, c1] = covariance(p);
    let [a2, b2, c2] = covariance(q);
    let (dx, dy) = (p[0] - q[0], p[1] - q[1]);
    let det = (a1 + a2) * (b1 + b2) - (c1 + c2).powi(2);
    let t1 = ((a1 + a2) * dy * dy + (b1 + b2) * dx * dx) / (det + EPS) * 0.25;
    let t2 = ((c1 + c2) * (-dx) * dy) / (det + EPS) * 0.5;
    let own = ((a1 * b1 - c1 * c1).max(0.0) * (a2 * b2 - c2 * c2).max(0.0)).sqrt();
    let t3 = (det / (4.0 * own + EPS) + EPS).ln() * 0.5;
    let bd = (t1 + t2 + t3).clamp(EPS, 100.0);
    let hd = (1.0 - (-bd).exp() + EPS).sqrt();
    1.0 - hd
}

/// Ultralytics' rotated NMS (`fast_nms` with `batch_probiou`, per class):
/// over `boxes` sorted best first, a box goes when any better box of its
/// class, kept or not, overlaps it by more than `iou`. Returns the indices
/// kept, at most `max`.
pub(crate) fn rotated_nms(boxes: &[([f32; 5], u32)], iou: f32, max: usize) -> Vec<usize> {
    (0..boxes.len())
        .filter(|&j| {
            let (b, class) = &boxes[j];
            !boxes[..j]
                .iter()
                .any(|(a, c)| c == class && probiou(a, b) > iou)
        })
        .take(max)
        .collect()
}

/// Ultralytics' `regularize_rboxes`: the angle in [0, pi/2), width and
/// height swapped where the angle was in the other half-turn.
pub(crate) fn regularize(b: [f32; 5]) -> [f32; 5] {
    use std::f32::consts::{FRAC_PI_2, PI};
    let t = b[4].rem_euclid(PI);
    let (w, h) = if t >= FRAC_PI_2 {
        (b[3], b[2])
    } else {
        (b[2], b[3])
    };
    [b[0], b[1], w, h, b[4].rem_euclid(FRAC_PI_2)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probiou_of_known_boxes() {
        let a = [10.0, 10.0, 8.0, 4.0, 0.0];
        assert!((probiou(&a, &a) - 1.0).abs() < 1e-3);
        // A quarter turn of a square is the same square.
        let s = [0.0, 0.0, 6.0, 6.0, 0.3];
        let t = [0.0, 0.0, 6.0, 6.0, 0.3 + std::f32::consts::FRAC_PI_2];
        assert!((probiou(&s, &t) - 1.0).abs() < 1e-3);
        assert!(probiou(&a, &[40.0, 40.0, 8.0, 4.0, 0.0]) < 1e-3);
        // Rotating a long box away from itself lowers the overlap.
        let turned = [10.0, 10.0, 8.0, 4.0, 1.0];
        assert!(probiou(&a, &turned) < 0.8);
        let kept = rotated_nms(&[(a, 0), (a, 1), (a, 0), (turned, 0)], 0.9, 10);
        assert_eq!(kept, [0, 1, 3]);
    }

    #[test]
    fn regularized_angles_are_in_a_quarter_turn() {
        let r = regularize([1.0, 2.0, 3.0, 4.0, 2.0]);
        assert_eq!(&r[..4], &[1.0, 2.0, 4.0, 3.0]);
        assert!((r[4] - (2.0 - std::f32::consts::FRAC_PI_2)).abs() < 1e-6);
        assert_eq!(
            regularize([0.0, 0.0, 3.0, 4.0, 0.5]),
            [0.0, 0.0, 3.0, 4.0, 0.5]
        );
    }
}
