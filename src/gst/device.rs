//! One wgpu device per pipeline, shared through GStreamer's context protocol
//! (context type `wgnn.wgpu.device`), the way gst-gl and gst-cuda share
//! theirs: ask the neighbours with a context query, then the application and
//! bins with NEED_CONTEXT, and only then open a device and announce it with
//! HAVE_CONTEXT so that every later element finds the same one.

use std::sync::Mutex;

use gst::glib;
use gst::prelude::*;

use crate::gpu::Gpu;

pub const CONTEXT_TYPE: &str = "wgnn.wgpu.device";
const FIELD: &str = "device";

/// The device as a GValue inside a GstContext.
#[derive(Clone, glib::Boxed)]
#[boxed_type(name = "WgnnGpuDevice")]
pub struct SharedGpu(pub Gpu);

pub fn context_for(gpu: &Gpu) -> gst::Context {
    let mut context = gst::Context::new(CONTEXT_TYPE, true);
    context
        .get_mut()
        .unwrap()
        .structure_mut()
        .set(FIELD, SharedGpu(gpu.clone()));
    context
}

pub fn gpu_from(context: &gst::ContextRef) -> Option<Gpu> {
    if context.context_type() != CONTEXT_TYPE {
        return None;
    }
    context
        .structure()
        .get::<SharedGpu>(FIELD)
        .ok()
        .map(|s| s.0)
}

/// An element's handle on the shared device.
#[derive(Default)]
pub struct DeviceSlot(Mutex<Option<Gpu>>, Mutex<Option<Gpu>>);

impl DeviceSlot {
    /// The device [`DeviceSlot::ensure`] takes rather than opening one when
    /// neither the neighbours nor the application have one: a shared model
    /// instance's, so that pipelines sharing an instance share its device.
    pub fn prefer(&self, gpu: Gpu) {
        *self.1.lock().unwrap() = Some(gpu);
    }

    pub fn get(&self) -> Option<Gpu> {
        self.0.lock().unwrap().clone()
    }

    /// For `ElementImpl::set_context`: takes the device if the context carries one.
    pub fn set_context(&self, context: &gst::Context) {
        if let Some(gpu) = gpu_from(context) {
            self.0.lock().unwrap().get_or_insert(gpu);
        }
    }

    pub fn clear(&self) {
        self.0.lock().unwrap().take();
    }

    /// For pad query handlers: answers a context query with our device.
    /// Returns true when the query was answered.
    pub fn answer(&self, query: &mut gst::QueryRef) -> bool {
        let gst::QueryViewMut::Context(q) = query.view_mut() else {
            return false;
        };
        if q.context_type() != CONTEXT_TYPE {
            return false;
        }
        match self.get() {
            Some(gpu) => {
                q.set_context(&context_for(&gpu));
                true
            }
            None => false,
        }
    }

    /// Finds the pipeline's device or opens one: peers first (downstream,
    /// then upstream), then NEED_CONTEXT, then a new device announced with
    /// HAVE_CONTEXT. Logs under the element's category `cat`.
    pub fn ensure(
        &self,
        element: &gst::Element,
        cat: gst::DebugCategory,
    ) -> Result<Gpu, gst::ErrorMessage> {
        // Taken whatever happens, so that a later start does not find it.
        let preferred = self.1.lock().unwrap().take();
        if let Some(gpu) = self.get() {
            return Ok(gpu);
        }
        let mut pads = element.src_pads();
        pads.extend(element.sink_pads());
        for pad in pads {
            let mut query = gst::query::Context::new(CONTEXT_TYPE);
            if pad.peer_query(&mut query) {
                if let Some(gpu) = query.context().and_then(gpu_from) {
                    gst::debug!(
                        cat,
                        obj = element,
                        "using the device of a neighbour: {}",
                        gpu.describe()
                    );
                    let gpu = self.0.lock().unwrap().get_or_insert(gpu).clone();
                    element.set_context(&context_for(&gpu));
                    return Ok(gpu);
                }
            }
        }
        let _ = element.post_message(
            gst::message::NeedContext::builder(CONTEXT_TYPE)
                .src(element)
                .build(),
        );
        if let Some(gpu) = self.get() {
            return Ok(gpu);
        }
        let gpu = match preferred {
            Some(gpu) => {
                gst::debug!(
                    cat,
                    obj = element,
                    "using the device of the model instance: {}",
                    gpu.describe()
                );
                Ok(gpu)
            }
            None => Gpu::new(),
        };
        let gpu = gpu.map_err(|e| {
            let domain = match e {
                crate::Error::NoAdapter(_) => gst::ResourceError::NotFound,
                _ => gst::ResourceError::OpenReadWrite,
            };
            let e = e.to_string();
            gst::error_msg!(
                domain,
                ("{}", crate::gst::element::first_line(&e)),
                ["{}", e]
            )
        })?;
        gst::info!(cat, obj = element, "opened {}", gpu.describe());
        let gpu = self.0.lock().unwrap().get_or_insert(gpu).clone();
        let context = context_for(&gpu);
        element.set_context(&context);
        let _ = element.post_message(
            gst::message::HaveContext::builder(context)
                .src(element)
                .build(),
        );
        Ok(gpu)
    }
}
