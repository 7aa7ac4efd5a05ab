//! The processing latency an element adds, measured per frame, for its answer
//! to the latency query.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// Frames remembered: the answer is the worst of the recent ones, so one
/// slow frame after a quiet stretch is forgotten within a second or two.
const WINDOW: usize = 32;

#[derive(Default)]
pub struct LatencyMeter {
    recent: Mutex<VecDeque<Duration>>,
    reported: Mutex<gst::ClockTime>,
    /// The least latency reported, before any frame: a batching element's
    /// frames may wait its batch latency.
    floor: Mutex<Duration>,
}

impl LatencyMeter {
    /// Records one frame's processing time. Returns true when the latency
    /// grew by more than half of what was last reported, or fell below half
    /// of it (post a latency message then, so that the pipeline asks
    /// again): a first frame that built the model must not stay the
    /// pipeline's latency once it has left the window, or a live sink
    /// holds every frame that long.
    pub fn record(&self, took: Duration) -> bool {
        let mut recent = self.recent.lock().unwrap();
        if recent.len() == WINDOW {
            recent.pop_front();
        }
        recent.push_back(took);
        let now = self.worst(&recent);
        let reported = *self.reported.lock().unwrap();
        now > reported + reported / 2 || (recent.len() == WINDOW && now < reported / 2)
    }

    fn worst(&self, recent: &VecDeque<Duration>) -> gst::ClockTime {
        let floor = *self.floor.lock().unwrap();
        let worst = recent.iter().max().copied().unwrap_or_default().max(floor);
        gst::ClockTime::from_nseconds(worst.as_nanos() as u64)
    }

    /// Reports at least `floor` from now on (until [`LatencyMeter::reset`]).
    pub fn set_floor(&self, floor: Duration) {
        *self.floor.lock().unwrap() = floor;
    }

    /// The latency to add to upstream's, and remembers it as reported.
    pub fn latency(&self) -> gst::ClockTime {
        let now = self.worst(&self.recent.lock().unwrap());
        *self.reported.lock().unwrap() = now;
        now
    }

    pub fn reset(&self) {
        self.recent.lock().unwrap().clear();
        *self.reported.lock().unwrap() = gst::ClockTime::ZERO;
        *self.floor.lock().unwrap() = Duration::ZERO;
    }

    /// Answers a latency query already answered upstream by adding ours.
    pub fn add_to(&self, query: &mut gst::QueryRef) {
        if let gst::QueryViewMut::Latency(q) = query.view_mut() {
            let (live, min, max) = q.result();
            let ours = self.latency();
            q.set(live, min + ours, max.map(|m| m + ours));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_slow_first_frame_is_reported_and_then_forgotten() {
        let m = LatencyMeter::default();
        assert!(m.record(2000 * MS), "the first frame grows it");
        assert_eq!(m.latency(), gst::ClockTime::from_mseconds(2000));
        // Fast frames: nothing to say while the slow one is in the window.
        for _ in 1..WINDOW {
            assert!(!m.record(3 * MS));
        }
        // It leaves the window: the latency fell, say so once.
        assert!(m.record(3 * MS));
        assert_eq!(m.latency(), gst::ClockTime::from_mseconds(3));
        assert!(!m.record(3 * MS));
        // Growth by half is said again; small changes are not.
        assert!(!m.record(4 * MS));
        assert!(m.record(5 * MS));
    }

    #[test]
    fn the_floor_holds_before_and_after_frames() {
        let m = LatencyMeter::default();
        m.set_floor(300 * MS);
        assert_eq!(m.latency(), gst::ClockTime::from_mseconds(300));
        for _ in 0..WINDOW {
            assert!(!m.record(2 * MS), "never below the floor");
        }
        assert_eq!(m.latency(), gst::ClockTime::from_mseconds(300));
        m.reset();
        assert_eq!(m.latency(), gst::ClockTime::ZERO);
    }
}
