//! The `precision` property of the model elements, and the INFO line saying
//! what the model computes in once a graph is built.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use gst::glib;
use gst::prelude::*;

use crate::ml::Precision;
use crate::models::PrecisionChoice as Chosen;

/// What an element's model computes in (wgnn's extension: `auto` picks
/// float16 where the GPU has SHADER_F16 and the model's outputs stay within
/// [`crate::models::AUTO_F16_TOLERANCE`] of float32's on a probe input).
#[derive(Debug, Eq, PartialEq, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnPrecision")]
pub enum PrecisionChoice {
    #[default]
    #[enum_value(
        name = "Auto: float16 where the GPU has SHADER_F16 and the model stays within 1% \
                (RMS) of float32 on a probe input; else float32",
        nick = "auto"
    )]
    Auto,
    #[enum_value(name = "float32 throughout", nick = "f32")]
    F32,
    #[enum_value(
        name = "float16 between layers (needs SHADER_F16 on the GPU; no faster on the CPU)",
        nick = "f16"
    )]
    F16,
}

impl From<PrecisionChoice> for Precision {
    fn from(p: PrecisionChoice) -> Precision {
        match p {
            PrecisionChoice::Auto => Precision::Auto,
            PrecisionChoice::F32 => Precision::F32,
            PrecisionChoice::F16 => Precision::F16,
        }
    }
}

/// The property, read when the element starts.
pub fn property() -> glib::ParamSpec {
    glib::ParamSpecEnum::builder_with_default("precision", PrecisionChoice::default())
        .nick("Precision")
        .blurb(
            "What the model computes in: auto, f32 or f16 (inputs and outputs stay float32). \
             Read when the element starts",
        )
        .mutable_ready()
        .build()
}

/// The read-only `precision-used` property: what the model computed in
/// and why, once a graph is built (it stays readable after the element
/// stops, for a CLI's summary).
pub fn used_property() -> glib::ParamSpec {
    glib::ParamSpecString::builder("precision-used")
        .nick("Precision used")
        .blurb(
            "What the model computes in and why, e.g. 'f16 (rms rel diff 1.6e-3 <= 1e-2, ...)'; \
             empty until the first frame",
        )
        .read_only()
        .build()
}

/// Logs (INFO, under the element's category) what its task's model
/// computes in, once per choice (tasks build graphs per input size, so a
/// caps change may choose again), and keeps it for `precision-used`.
#[derive(Default)]
pub(crate) struct PrecisionLog {
    last: Mutex<Option<Chosen>>,
    /// Whether `last` was logged since the element last started.
    said: AtomicBool,
}

impl PrecisionLog {
    pub fn note(&self, cat: gst::DebugCategory, element: &gst::Element, now: Option<&Chosen>) {
        let Some(now) = now else { return };
        let mut last = self.last.lock().unwrap();
        let said = self.said.swap(true, Ordering::AcqRel);
        if !said || last.as_ref() != Some(now) {
            gst::info!(cat, obj = element, "precision: {now}");
            *last = Some(now.clone());
        }
    }

    /// The element stopped: say the next choice again, even if the same.
    pub fn reset(&self) {
        self.said.store(false, Ordering::Release);
    }

    /// `precision-used`'s value.
    pub fn used(&self) -> glib::Value {
        self.last
            .lock()
            .unwrap()
            .as_ref()
            .map_or_else(String::new, ToString::to_string)
            .to_value()
    }
}
