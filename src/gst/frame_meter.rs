//! The bookkeeping every processing element does per frame: its copy
//! counters, one DEBUG line, and the processing latency it adds to the
//! pipeline's.

use std::time::Instant;

use gst::glib;
use gst::prelude::*;

use crate::gpu::TransferStats;
use crate::gst::device::DeviceSlot;
use crate::gst::latency::LatencyMeter;
use crate::gst::stats::Stats;

#[derive(Default)]
pub struct FrameMeter {
    stats: Stats,
    latency: LatencyMeter,
}

impl FrameMeter {
    /// The value of one of [`Stats::properties`], or `None` for other names.
    pub fn property(&self, name: &str) -> Option<glib::Value> {
        self.stats.property(name)
    }

    pub fn reset(&self) {
        self.stats.reset();
        self.latency.reset();
    }

    /// Reports at least `floor` of latency until the next reset (a
    /// batching element's frames may wait that long for their batch).
    pub fn set_latency_floor(&self, floor: std::time::Duration) {
        self.latency.set_floor(floor);
    }

    /// Records a processed frame that started at `began`: counts what it
    /// moved, logs it under the element's category `cat`, and posts a
    /// latency message when the processing time grew enough for the
    /// pipeline to ask again.
    pub fn frame_done(
        &self,
        cat: gst::DebugCategory,
        element: &gst::Element,
        pts: Option<gst::ClockTime>,
        moved: &TransferStats,
        began: Instant,
    ) {
        self.frame_took(cat, element, pts, moved, began.elapsed());
    }

    /// [`FrameMeter::frame_done`] of a frame that took the element `took`.
    pub fn frame_took(
        &self,
        cat: gst::DebugCategory,
        element: &gst::Element,
        pts: Option<gst::ClockTime>,
        moved: &TransferStats,
        took: std::time::Duration,
    ) {
        let n = self.stats.frame(moved);
        gst::debug!(
            cat,
            obj = element,
            "frame {n} pts {}: uploaded {} bytes, downloaded {} bytes, imported {} bytes, \
             {:.2} ms",
            pts.display(),
            moved.upload_bytes,
            moved.download_bytes,
            moved.bytes_imported,
            took.as_secs_f64() * 1e3
        );
        if self.latency.record(took) {
            let _ = element.post_message(gst::message::Latency::builder().src(element).build());
        }
    }

    /// A processing element's query handler: the device context from
    /// `device`, everything else from `parent`, with this element's
    /// processing time added to a latency answer going upstream.
    pub fn query(
        &self,
        device: &DeviceSlot,
        direction: gst::PadDirection,
        query: &mut gst::QueryRef,
        parent: impl FnOnce(&mut gst::QueryRef) -> bool,
    ) -> bool {
        if device.answer(query) {
            return true;
        }
        let latency = matches!(query.view(), gst::QueryView::Latency(_));
        let answered = parent(query);
        if answered && latency && direction == gst::PadDirection::Src {
            self.latency.add_to(query);
        }
        answered
    }
}
