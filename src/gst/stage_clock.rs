//! The read-only `stage-ms` property of the model elements: the host time
//! their frames spent in each stage of a model run, summed since the
//! element started, and the element's whole time on them. Timed with
//! `Instant`s on the streaming thread (no GPU waits), so it is always on.
//!
//! A `GstStructure` named `wgnn-stage-ms`, as elements give their `stats`:
//! `frames` (guint64, the frames timed) and, in ms (gdouble), `tensorize`,
//! `gather`, `submit`, `result` and `post` (see [`HostStages`]) and
//! `element` (the element's whole transform of those frames, the stages
//! included). Divide by `frames` for a frame's mean; what `element` holds
//! beyond the stages is the element's own work (uploads, metas, results).

use std::sync::Mutex;
use std::time::Duration;

use gst::glib;
use gst::prelude::*;

use crate::tasks::HostStages;

pub const PROPERTY: &str = "stage-ms";
const STRUCTURE: &str = "wgnn-stage-ms";
const ELEMENT: &str = "element";

/// Sums of the stages of the frames timed so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTotals {
    pub frames: u64,
    /// In [`HostStages::NAMES`] order.
    pub stages: [Duration; 5],
    pub element: Duration,
}

impl StageTotals {
    pub fn add(&mut self, stages: &HostStages, element: Duration) {
        self.frames += 1;
        for (sum, d) in self.stages.iter_mut().zip(stages.values()) {
            *sum += d;
        }
        self.element += element;
    }

    pub fn to_structure(self) -> gst::Structure {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut s = gst::Structure::builder(STRUCTURE).field("frames", self.frames);
        for (name, d) in HostStages::NAMES.iter().zip(self.stages) {
            s = s.field(*name, ms(d));
        }
        s.field(ELEMENT, ms(self.element)).build()
    }
}

/// One element's clock: the task's stages of the frame being processed,
/// added to the totals with the element's time once the frame is done.
#[derive(Default)]
pub struct StageClock {
    pending: Mutex<HostStages>,
    totals: Mutex<StageTotals>,
}

impl StageClock {
    pub fn property() -> glib::ParamSpec {
        glib::ParamSpecBoxed::builder::<gst::Structure>(PROPERTY)
            .nick("Stage times")
            .blurb(
                "Host ms spent since start, summed over the frames timed (field frames): \
                 tensorize, gather (waiting for the batch), submit (the model's dispatch), \
                 result (waiting for the GPU's read-back), post (decode, NMS) and element \
                 (the whole transform, the stages included)",
            )
            .read_only()
            .build()
    }

    /// The task's stages of the frame being processed (a task that does not
    /// say leaves them zero).
    pub fn task(&self, stages: HostStages) {
        *self.pending.lock().unwrap() = stages;
    }

    /// The frame is done, after `element` in the element.
    pub fn frame(&self, element: Duration) {
        let stages = std::mem::take(&mut *self.pending.lock().unwrap());
        self.totals.lock().unwrap().add(&stages, element);
    }

    pub fn totals(&self) -> StageTotals {
        *self.totals.lock().unwrap()
    }

    pub fn value(&self) -> glib::Value {
        self.totals().to_structure().to_value()
    }

    pub fn reset(&self) {
        *self.pending.lock().unwrap() = HostStages::default();
        *self.totals.lock().unwrap() = StageTotals::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn frames_add_their_stages_and_a_frame_without_stages_adds_only_the_element() {
        gst::init().unwrap();
        let clock = StageClock::default();
        clock.task(HostStages {
            tensorize: ms(1),
            gather: ms(2),
            submit: ms(3),
            result: ms(4),
            post: ms(5),
        });
        clock.frame(ms(20));
        // The pending stages went with the first frame.
        clock.frame(ms(7));
        let t = clock.totals();
        assert_eq!(t.frames, 2);
        assert_eq!(t.stages, [ms(1), ms(2), ms(3), ms(4), ms(5)]);
        assert_eq!(t.element, ms(27));
        let s = t.to_structure();
        assert_eq!(s.name(), "wgnn-stage-ms");
        assert_eq!(s.get::<u64>("frames").unwrap(), 2);
        for (name, want) in HostStages::NAMES.iter().zip([1.0, 2.0, 3.0, 4.0, 5.0]) {
            assert!((s.get::<f64>(*name).unwrap() - want).abs() < 1e-9, "{name}");
        }
        assert!((s.get::<f64>("element").unwrap() - 27.0).abs() < 1e-9);
        assert_eq!(s.n_fields(), 7);
        clock.reset();
        assert_eq!(clock.totals(), StageTotals::default());
    }
}
