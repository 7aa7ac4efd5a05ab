//! The `profile` / `gpu-ms` properties of the elements that run a model:
//! once a second, one frame's model dispatch (its whole batch, when the
//! model instance batches) is timed with GPU timestamp queries.

use std::sync::Mutex;
use std::time::Instant;

use gst::glib;
use gst::prelude::*;

use crate::gpu::Gpu;
use crate::tasks::ImageInference;

#[derive(Default)]
pub struct ModelClock {
    on: Mutex<bool>,
    /// The model's GPU ms from the last timed frame, and when it was taken.
    last: Mutex<(f64, Option<Instant>)>,
}

impl ModelClock {
    pub fn properties() -> Vec<glib::ParamSpec> {
        vec![
            glib::ParamSpecBoolean::builder("profile")
                .nick("Profile")
                .blurb(
                    "Once a second, time the model with GPU timestamp queries (when the \
                     adapter has them) and show it in gpu-ms; that frame waits for the GPU",
                )
                .default_value(false)
                .mutable_playing()
                .build(),
            glib::ParamSpecDouble::builder("gpu-ms")
                .nick("Model GPU time")
                .blurb(
                    "GPU milliseconds of the model on the last profiled frame: of its whole \
                     batch when batch-size > 1 (-1: not measured; see profile)",
                )
                .minimum(-1.0)
                .default_value(-1.0)
                .read_only()
                .build(),
        ]
    }

    /// Takes `profile`; false for other names.
    pub fn set(&self, name: &str, value: &glib::Value) -> bool {
        if name != "profile" {
            return false;
        }
        *self.on.lock().unwrap() = value.get().expect("type checked upstream");
        true
    }

    /// `profile` and `gpu-ms`.
    pub fn property(&self, name: &str) -> Option<glib::Value> {
        match name {
            "profile" => Some(self.on.lock().unwrap().to_value()),
            "gpu-ms" => Some(match *self.last.lock().unwrap() {
                (ms, Some(_)) => ms.to_value(),
                _ => (-1.0f64).to_value(),
            }),
            _ => None,
        }
    }

    /// Whether this frame's model run is timed: `profile` is on and a
    /// second has passed since the last timed one.
    pub fn due(&self) -> bool {
        *self.on.lock().unwrap() && {
            let last = self.last.lock().unwrap().1;
            last.is_none_or(|t| t.elapsed().as_secs_f64() >= 1.0)
        }
    }

    /// Asks `inference` to time its next GPU run when this frame is due
    /// and `gpu` has timestamp queries; [`ModelClock::collect`] after it.
    pub fn arm(&self, gpu: &Gpu, inference: &mut ImageInference) {
        if self.due() && gpu.has(wgpu::Features::TIMESTAMP_QUERY) {
            inference.time_next_run();
        }
    }

    /// Records the time of `inference`'s last run, if it was timed.
    pub fn collect(&self, inference: &mut ImageInference) {
        if let Some(ms) = inference.take_model_ms() {
            self.record(ms);
        }
    }

    pub fn record(&self, ms: f64) {
        *self.last.lock().unwrap() = (ms, Some(Instant::now()));
    }

    /// Forgets the last time (at start).
    pub fn reset(&self) {
        *self.last.lock().unwrap() = (-1.0, None);
    }
}
