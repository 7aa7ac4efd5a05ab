//! Multi-object tracking: persistent ids for the objects a detector finds
//! frame after frame. Pure CPU on boxes (no pixels), so the frames stay in
//! whatever memory they are in; `wgnntrack` is the element around it.
//!
//! Two trackers ([`TrackerKind`]), one flow ([`Tracker`]):
//!
//! - **IoU** ([`iou`]): each track keeps its last box; detections are
//!   matched to tracks by the largest overlap (Hungarian assignment);
//! - **ByteTrack** ([`bytetrack`]): each track's box moves with a Kalman
//!   filter ([`kalman`]); confident detections are matched first, then the
//!   weak ones (`low-threshold` to `high-threshold`) continue tracks that
//!   the first pass left, so a partly hidden object keeps its id.
//!
//! Both: a new track starts from an unmatched detection at or above
//! `high_threshold`, and gets its id after `min_hits` detection frames in a
//! row (one missed frame before that drops it); a track not matched for
//! more than `max_age` frames is dropped. Frames the detector skipped
//! ([`Tracker::predict`]) move the tracks (ByteTrack) and report the
//! tracked ones where they are expected.

pub mod assign;
mod bytetrack;
mod iou;
mod kalman;
pub mod metrics;
#[cfg(test)]
mod tests;

use assign::assign;

use super::{Detection, Rect};
use crate::error::{Error, Result};
use kalman::Kalman;

/// Which tracker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackerKind {
    Iou,
    ByteTrack,
}

impl TrackerKind {
    pub fn name(self) -> &'static str {
        match self {
            TrackerKind::Iou => "iou",
            TrackerKind::ByteTrack => "bytetrack",
        }
    }
}

pub const DEFAULT_MAX_AGE: u32 = 30;
pub const DEFAULT_MIN_HITS: u32 = 2;
pub const DEFAULT_IOU_THRESHOLD: f32 = 0.3;
pub const DEFAULT_HIGH_THRESHOLD: f32 = 0.5;
pub const DEFAULT_LOW_THRESHOLD: f32 = 0.1;

/// ByteTrack's second pass (weak detections) asks for at least this much
/// overlap, as ByteTrack does: a weak box far from a track is noise.
const SECOND_PASS_IOU: f32 = 0.5;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackerOptions {
    pub kind: TrackerKind,
    /// Frames a track that is not seen keeps its id.
    pub max_age: u32,
    /// Detection frames in a row before a new track gets its id.
    pub min_hits: u32,
    /// The least overlap (intersection over union) of a track's box and a
    /// detection that continues the track.
    pub iou_threshold: f32,
    /// Detections at or above this confidence start tracks (and are
    /// ByteTrack's first pass).
    pub high_threshold: f32,
    /// Detections below this confidence are ignored; ByteTrack's second
    /// pass takes the ones between it and `high_threshold`.
    pub low_threshold: f32,
}

impl Default for TrackerOptions {
    fn default() -> Self {
        TrackerOptions {
            kind: TrackerKind::ByteTrack,
            max_age: DEFAULT_MAX_AGE,
            min_hits: DEFAULT_MIN_HITS,
            iou_threshold: DEFAULT_IOU_THRESHOLD,
            high_threshold: DEFAULT_HIGH_THRESHOLD,
            low_threshold: DEFAULT_LOW_THRESHOLD,
        }
    }
}

impl TrackerOptions {
    /// Refuses thresholds out of 0..=1 or a low threshold above the high one.
    pub fn check(&self) -> Result<()> {
        for (name, v) in [
            ("iou-threshold", self.iou_threshold),
            ("high-threshold", self.high_threshold),
            ("low-threshold", self.low_threshold),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::invalid(format!("{name} {v} is not within 0..1")));
            }
        }
        if self.low_threshold > self.high_threshold {
            return Err(Error::invalid(format!(
                "low-threshold {} is above high-threshold {}",
                self.low_threshold, self.high_threshold
            )));
        }
        Ok(())
    }
}

/// What a tracked object is doing on this frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackState {
    /// A detection on this frame continued the track.
    Tracked,
    /// The detector skipped this frame: the box is where the track is
    /// expected.
    Predicted,
}

impl TrackState {
    pub fn name(self) -> &'static str {
        match self {
            TrackState::Tracked => "tracked",
            TrackState::Predicted => "predicted",
        }
    }
}

/// A tracked object on one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackInfo {
    /// From 1, never reused in a stream.
    pub id: u64,
    /// Frames since the track started, this one included.
    pub age: u32,
    pub state: TrackState,
    /// The detection's box (tracked) or the expected one (predicted).
    pub rect: Rect,
    /// The label, class and confidence of its last detection.
    pub label: String,
    pub label_id: usize,
    pub confidence: f32,
}

/// One track, either tracker's.
#[derive(Clone, Debug)]
struct Track {
    /// 0 until it has its id.
    id: u64,
    /// Where it moves (ByteTrack); the IoU tracker keeps `rect`.
    motion: Option<Kalman>,
    /// The last detection's box.
    rect: Rect,
    label: String,
    label_id: usize,
    confidence: f32,
    /// Detection frames it was matched on.
    hits: u32,
    age: u32,
    /// Frames since it was last matched.
    unseen: u32,
    /// Not matched on the last detection frame.
    lost: bool,
}

impl Track {
    fn new(d: &Detection, kind: TrackerKind) -> Track {
        Track {
            id: 0,
            motion: (kind == TrackerKind::ByteTrack).then(|| Kalman::new(&d.rect)),
            rect: d.rect,
            label: d.label.clone(),
            label_id: d.label_id,
            confidence: d.confidence,
            hits: 1,
            age: 1,
            unseen: 0,
            lost: false,
        }
    }

    /// Where the track is expected on this frame.
    fn expected(&self) -> Rect {
        self.motion.as_ref().map_or(self.rect, Kalman::rect)
    }

    /// One frame passes.
    fn step(&mut self) {
        if let Some(k) = &mut self.motion {
            k.predict(!self.lost);
        }
        self.age += 1;
        self.unseen += 1;
    }

    fn matched(&mut self, d: &Detection) {
        if let Some(k) = &mut self.motion {
            k.update(&d.rect);
        }
        self.rect = d.rect;
        self.label.clone_from(&d.label);
        self.label_id = d.label_id;
        self.confidence = d.confidence;
        self.hits += 1;
        self.unseen = 0;
        self.lost = false;
    }

    fn info(&self, state: TrackState, rect: Rect) -> TrackInfo {
        TrackInfo {
            id: self.id,
            age: self.age,
            state,
            rect,
            label: self.label.clone(),
            label_id: self.label_id,
            confidence: self.confidence,
        }
    }
}

/// The overlap of a track's expected box and a detection, where they may
/// match: the same class and at least `threshold`.
fn overlap(track: &Track, d: &Detection, threshold: f32) -> Option<f64> {
    if track.label_id != d.label_id {
        return None;
    }
    let iou = track.expected().iou(&d.rect);
    (iou >= threshold && iou > 0.0).then_some(f64::from(iou))
}

/// Matches the tracks `tracks` (indices into `all`) with the detections
/// `dets` (indices into `detections`) at `threshold`; returns the pairs
/// (track index, detection index) of `all` and `detections`.
fn match_pairs(
    all: &[Track],
    tracks: &[usize],
    detections: &[Detection],
    dets: &[usize],
    threshold: f32,
) -> Vec<(usize, usize)> {
    assign(tracks.len(), dets.len(), |i, j| {
        overlap(&all[tracks[i]], &detections[dets[j]], threshold)
    })
    .into_iter()
    .map(|(i, j)| (tracks[i], dets[j]))
    .collect()
}

/// A tracker of one stream.
#[derive(Debug)]
pub struct Tracker {
    options: TrackerOptions,
    tracks: Vec<Track>,
    next_id: u64,
}

impl Tracker {
    pub fn new(options: TrackerOptions) -> Result<Tracker> {
        options.check()?;
        Ok(Tracker {
            options,
            tracks: Vec::new(),
            next_id: 1,
        })
    }

    pub fn options(&self) -> &TrackerOptions {
        &self.options
    }

    /// Forgets every track (a seek: the frames that follow are not
    /// continuous with the ones before); ids keep counting.
    pub fn reset(&mut self) {
        self.tracks.clear();
    }

    /// A frame the detector ran on, with what it found: the track of each
    /// detection, where it has one with an id (in `detections`' order).
    pub fn update(&mut self, detections: &[Detection]) -> Vec<Option<TrackInfo>> {
        for t in &mut self.tracks {
            t.step();
        }
        let o = self.options;
        let pairs = match o.kind {
            TrackerKind::Iou => iou::associate(&self.tracks, detections, &o),
            TrackerKind::ByteTrack => bytetrack::associate(&self.tracks, detections, &o),
        };
        let mut track_of: Vec<Option<usize>> = vec![None; detections.len()];
        for &(t, d) in &pairs {
            self.tracks[t].matched(&detections[d]);
            track_of[d] = Some(t);
        }
        for (d, det) in detections.iter().enumerate() {
            if track_of[d].is_none() && det.confidence >= o.high_threshold {
                track_of[d] = Some(self.tracks.len());
                self.tracks.push(Track::new(det, o.kind));
            }
        }
        for t in &mut self.tracks {
            t.lost = t.unseen > 0;
            if t.id == 0 && !t.lost && t.hits >= o.min_hits {
                t.id = self.next_id;
                self.next_id += 1;
            }
        }
        let found = track_of
            .iter()
            .zip(detections)
            .map(|(t, d)| {
                let t = &self.tracks[(*t)?];
                (t.id != 0).then(|| t.info(TrackState::Tracked, d.rect))
            })
            .collect();
        // A tentative track goes at its first miss, any track after
        // `max_age` frames unseen.
        self.tracks
            .retain(|t| !t.lost || (t.id != 0 && t.unseen <= o.max_age));
        found
    }

    /// A frame the detector skipped: the tracked objects (not the lost
    /// ones) where they are expected.
    pub fn predict(&mut self) -> Vec<TrackInfo> {
        for t in &mut self.tracks {
            t.step();
        }
        self.tracks
            .iter()
            .filter(|t| t.id != 0 && !t.lost)
            .map(|t| t.info(TrackState::Predicted, t.expected()))
            .collect()
    }
}
