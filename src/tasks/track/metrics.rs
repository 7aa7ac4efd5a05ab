//! CLEAR MOT's MOTA and the identity score IDF1 of a tracker's output
//! against ground truth, computed as py-motmetrics computes them (IoU
//! distance, pairs up to a distance of 0.5), so that the two agree; and the
//! MOTChallenge text format both read (`frame,id,x,y,w,h,conf,...`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::assign::{assign, assign_weights};
use crate::error::{Error, Result};

/// One box of a sequence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotBox {
    /// From 1.
    pub frame: u32,
    /// The object's (ground truth) or track's id; -1 for detections.
    pub id: i64,
    /// x, y, w, h in pixels.
    pub rect: [f64; 4],
    pub confidence: f64,
}

/// Reads MOTChallenge lines `frame,id,x,y,w,h,conf[,...]`; `what` names
/// the text in errors.
pub fn read_mot(text: &str, what: &str) -> Result<Vec<MotBox>> {
    let mut boxes = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || Error::invalid(format!("{what} line {}: not frame,id,x,y,w,h,conf", n + 1));
        let v: Vec<f64> = line
            .split(',')
            .map(|f| f.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad())?;
        if v.len() < 7 || v[0] < 1.0 {
            return Err(bad());
        }
        boxes.push(MotBox {
            frame: v[0] as u32,
            id: v[1] as i64,
            rect: [v[2], v[3], v[4], v[5]],
            confidence: v[6],
        });
    }
    Ok(boxes)
}

/// `boxes` as MOTChallenge lines (three decimals, the unused fields -1).
pub fn write_mot(boxes: &[MotBox]) -> String {
    boxes
        .iter()
        .map(|b| {
            let [x, y, w, h] = b.rect;
            format!(
                "{},{},{x:.3},{y:.3},{w:.3},{h:.3},{:.3},-1,-1,-1\n",
                b.frame, b.id, b.confidence
            )
        })
        .collect()
}

/// What a tracker scored on a sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Scores {
    pub mota: f64,
    pub idf1: f64,
    pub objects: usize,
    pub misses: usize,
    pub false_positives: usize,
    pub switches: usize,
    pub id_true_positives: usize,
}

/// motmetrics' `boxiou`.
fn iou(a: &[f64; 4], b: &[f64; 4]) -> f64 {
    let iw = ((a[0] + a[2]).min(b[0] + b[2]) - a[0].max(b[0])).max(0.0);
    let ih = ((a[1] + a[3]).min(b[1] + b[3]) - a[1].max(b[1])).max(0.0);
    let inter = iw * ih;
    let union = a[2].max(0.0) * a[3].max(0.0) + b[2].max(0.0) * b[3].max(0.0) - inter;
    if inter == 0.0 || union == 0.0 {
        0.0
    } else {
        inter / union
    }
}

/// Pairs at an IoU distance up to this are matches (motmetrics' `max_iou`).
const MAX_DISTANCE: f64 = 0.5;

/// The IoU distance where a pair may match.
fn distance(a: &MotBox, b: &MotBox) -> Option<f64> {
    let d = 1.0 - iou(&a.rect, &b.rect);
    (d <= MAX_DISTANCE).then_some(d)
}

fn by_frame(boxes: &[MotBox]) -> BTreeMap<u32, Vec<MotBox>> {
    let mut frames: BTreeMap<u32, Vec<MotBox>> = BTreeMap::new();
    for b in boxes {
        frames.entry(b.frame).or_default().push(*b);
    }
    frames
}

/// Scores `hyp` against `truth`, as motmetrics' `MOTAccumulator` and its
/// `mota` / `idf1` do: on each frame the pairs of the previous frame are
/// kept where they still match, the rest are assigned for the least total
/// distance, and a ground-truth object paired with another track than
/// before is a switch; IDF1 pairs ids once over the whole sequence.
pub fn score(truth: &[MotBox], hyp: &[MotBox]) -> Scores {
    let (gt_frames, hyp_frames) = (by_frame(truth), by_frame(hyp));
    let frames: BTreeSet<u32> = gt_frames.keys().chain(hyp_frames.keys()).copied().collect();
    let none = Vec::new();
    let mut s = Scores::default();
    // Ground-truth id -> the track it was last paired with.
    let mut paired: HashMap<i64, i64> = HashMap::new();
    // Frames each id is in, and frames each pair of ids could match on.
    let mut gt_count: BTreeMap<i64, usize> = BTreeMap::new();
    let mut hyp_count: BTreeMap<i64, usize> = BTreeMap::new();
    let mut together: HashMap<(i64, i64), usize> = HashMap::new();
    for f in frames {
        let g = gt_frames.get(&f).unwrap_or(&none);
        let h = hyp_frames.get(&f).unwrap_or(&none);
        s.objects += g.len();
        for o in g {
            *gt_count.entry(o.id).or_default() += 1;
            for t in h {
                if distance(o, t).is_some() {
                    *together.entry((o.id, t.id)).or_default() += 1;
                }
            }
        }
        for t in h {
            *hyp_count.entry(t.id).or_default() += 1;
        }
        let mut g_done = vec![false; g.len()];
        let mut h_done = vec![false; h.len()];
        // 1. Pairs carried on from before.
        for (i, o) in g.iter().enumerate() {
            let Some(&prev) = paired.get(&o.id) else {
                continue;
            };
            if let Some(j) = (0..h.len()).find(|&j| !h_done[j] && h[j].id == prev) {
                if distance(o, &h[j]).is_some() {
                    g_done[i] = true;
                    h_done[j] = true;
                }
            }
        }
        // 2. The rest, for the least total distance.
        let pairs = assign(g.len(), h.len(), |i, j| {
            if g_done[i] || h_done[j] {
                return None;
            }
            distance(&g[i], &h[j]).map(|d| 1.0 - d)
        });
        for (i, j) in pairs {
            if paired.get(&g[i].id).is_some_and(|&prev| prev != h[j].id) {
                s.switches += 1;
            }
            paired.insert(g[i].id, h[j].id);
            g_done[i] = true;
            h_done[j] = true;
        }
        s.misses += g_done.iter().filter(|d| !**d).count();
        s.false_positives += h_done.iter().filter(|d| !**d).count();
    }
    if s.objects > 0 {
        s.mota = 1.0 - (s.misses + s.false_positives + s.switches) as f64 / s.objects as f64;
    }
    // IDF1: ground-truth ids and track ids paired once, for the most frames
    // matched together.
    let gt_ids: Vec<i64> = gt_count.keys().copied().collect();
    let hyp_ids: Vec<i64> = hyp_count.keys().copied().collect();
    s.id_true_positives = assign_weights(gt_ids.len(), hyp_ids.len(), |i, j| {
        together
            .get(&(gt_ids[i], hyp_ids[j]))
            .map_or(0, |&n| n as u32)
    })
    .into_iter()
    .map(|(i, j)| together[&(gt_ids[i], hyp_ids[j])])
    .sum();
    let all = truth.len() + hyp.len();
    if all > 0 {
        s.idf1 = 2.0 * s.id_true_positives as f64 / all as f64;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(frame: u32, id: i64, x: f64) -> MotBox {
        MotBox {
            frame,
            id,
            rect: [x, 0.0, 10.0, 10.0],
            confidence: 1.0,
        }
    }

    #[test]
    fn a_switch_a_miss_and_a_false_positive_are_counted() {
        let truth = [b(1, 1, 0.0), b(2, 1, 0.0), b(3, 1, 0.0), b(3, 2, 50.0)];
        // Track 7 follows object 1, track 8 takes it over on frame 3;
        // object 2 is missed; track 9 is nowhere.
        let hyp = [b(1, 7, 1.0), b(2, 7, 1.0), b(3, 8, 0.0), b(3, 9, 100.0)];
        let s = score(&truth, &hyp);
        assert_eq!((s.objects, s.misses, s.false_positives), (4, 1, 1));
        assert_eq!(s.switches, 1);
        assert!((s.mota - (1.0 - 3.0 / 4.0)).abs() < 1e-12);
        // Object 1 with track 7 on 2 frames: 2 * 2 / (4 + 4).
        assert_eq!(s.id_true_positives, 2);
        assert!((s.idf1 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn mot_text_round_trips() {
        let boxes = [b(1, 3, 2.5), b(2, -1, 4.0)];
        let text = write_mot(&boxes);
        assert_eq!(read_mot(&text, "t").unwrap(), boxes);
        let err = read_mot("1,2,3\n", "gt.txt").unwrap_err().to_string();
        assert!(err.contains("gt.txt line 1"), "{err}");
    }
}
