//! The model-sharing properties of the processing elements that run a
//! model (`model-instance-id`, `batch-size`, `max-batch-latency`, and the
//! read-only `batches` / `batched-frames` / `batches-in-flight`), as DL Streamer's
//! `model-instance-id` and DeepStream's `batch-size`: elements with one id
//! in a process share one loaded model, its context and compiled graphs,
//! and their frames go into batched dispatches.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gst::glib;
use gst::prelude::*;

use crate::tasks::instance::{MAX_BATCH_LATENCY, MAX_BATCH_SIZE};
use crate::tasks::{BatchOptions, Member, ModelInstance};

const DEFAULT_LATENCY_MS: u32 = 10;

/// What the properties say, read when the element starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceSettings {
    /// `None` (or empty): an instance of the element's own.
    pub id: Option<String>,
    pub batch_size: u32,
    pub max_latency_ms: u32,
}

impl Default for InstanceSettings {
    fn default() -> Self {
        InstanceSettings {
            id: None,
            batch_size: 1,
            max_latency_ms: DEFAULT_LATENCY_MS,
        }
    }
}

impl InstanceSettings {
    pub fn properties() -> Vec<glib::ParamSpec> {
        vec![
            glib::ParamSpecString::builder("model-instance-id")
                .nick("Model instance id")
                .blurb(
                    "Elements with the same id in one process share one loaded model and its \
                     compiled graphs (same model file, device and batching required); unset: \
                     a model of the element's own. Read when the element starts",
                )
                .mutable_ready()
                .build(),
            glib::ParamSpecUInt::builder("batch-size")
                .nick("Batch size")
                .blurb(
                    "Frames (or regions) of the elements sharing the model instance run in one \
                     dispatch of a graph built for this many; a partial batch goes after \
                     max-batch-latency. GPU only. Read when the element starts",
                )
                .minimum(1)
                .maximum(MAX_BATCH_SIZE as u32)
                .default_value(1)
                .mutable_ready()
                .build(),
            glib::ParamSpecUInt::builder("max-batch-latency")
                .nick("Max batch latency")
                .blurb(
                    "Milliseconds a frame waits for others to fill its batch (batch-size > 1) \
                     before the batch runs partial; it runs at once when every stream of the \
                     instance is waiting. Read when the element starts",
                )
                .maximum(MAX_BATCH_LATENCY.as_millis() as u32)
                .default_value(DEFAULT_LATENCY_MS)
                .mutable_ready()
                .build(),
            glib::ParamSpecUInt64::builder("batches")
                .nick("Batches")
                .blurb("Dispatches of the model instance this element uses (all its elements')")
                .read_only()
                .build(),
            glib::ParamSpecUInt64::builder("batched-frames")
                .nick("Batched frames")
                .blurb(
                    "Frames and regions in those dispatches: batched-frames / batches is the \
                     mean batch",
                )
                .read_only()
                .build(),
            glib::ParamSpecUInt64::builder("batches-in-flight")
                .nick("Batches in flight")
                .blurb(
                    "The most batches of the model instance submitted at once before the GPU \
                     was seen to finish the ones before",
                )
                .read_only()
                .build(),
        ]
    }

    /// Takes the value of one of [`InstanceSettings::properties`]; false
    /// for other names.
    pub fn set(&mut self, name: &str, value: &glib::Value) -> bool {
        match name {
            "model-instance-id" => {
                let id: Option<String> = value.get().expect("type checked upstream");
                self.id = id.filter(|s| !s.trim().is_empty());
            }
            "batch-size" => self.batch_size = value.get().expect("type checked upstream"),
            "max-batch-latency" => {
                self.max_latency_ms = value.get().expect("type checked upstream")
            }
            _ => return false,
        }
        true
    }

    /// The value of a writable one of [`InstanceSettings::properties`].
    pub fn get(&self, name: &str) -> Option<glib::Value> {
        Some(match name {
            "model-instance-id" => self.id.to_value(),
            "batch-size" => self.batch_size.to_value(),
            "max-batch-latency" => self.max_latency_ms.to_value(),
            _ => return None,
        })
    }

    pub fn batch(&self) -> BatchOptions {
        BatchOptions {
            size: self.batch_size as usize,
            max_latency: Duration::from_millis(u64::from(self.max_latency_ms)),
        }
    }
}

/// An element's place among its instance's users, from start to stop.
#[derive(Default)]
pub struct InstanceUse {
    member: Mutex<Option<Arc<Member>>>,
}

impl InstanceUse {
    pub fn set(&self, member: Member) {
        *self.member.lock().unwrap() = Some(Arc::new(member));
    }

    /// Leaves the instance (at stop): the last user's going frees it.
    pub fn clear(&self) {
        self.member.lock().unwrap().take();
    }

    pub fn instance(&self) -> Option<Arc<ModelInstance>> {
        self.member
            .lock()
            .unwrap()
            .as_ref()
            .map(|m| m.instance().clone())
    }

    /// `batches`, `batched-frames` and `batches-in-flight`.
    pub fn property(&self, name: &str) -> Option<glib::Value> {
        let stats = self.instance().map(|i| i.stats()).unwrap_or_default();
        match name {
            "batches" => Some(stats.batches.to_value()),
            "batched-frames" => Some(stats.items.to_value()),
            "batches-in-flight" => Some(stats.most_in_flight.to_value()),
            _ => None,
        }
    }

    /// Follows the stream on the sink pad: after end of stream, or while
    /// flushing, the element sends no frames, so the instance's batches
    /// stop waiting for it; a new stream, segment or flush's end brings it
    /// back.
    pub fn sink_event(&self, event: &gst::Event) {
        let active = match event.view() {
            gst::EventView::Eos(_) | gst::EventView::FlushStart(_) => false,
            gst::EventView::StreamStart(_)
            | gst::EventView::FlushStop(_)
            | gst::EventView::Segment(_) => true,
            _ => return,
        };
        if let Some(m) = self.member.lock().unwrap().as_ref() {
            m.set_active(active);
        }
    }
}
